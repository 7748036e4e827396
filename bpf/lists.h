/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The block and allow lists, read before the rules: an operator's "drop
 * this source" and "let this one through now", by prefix, for a time or
 * until removed (user/instance/lists.c writes them).
 *
 * The allow list is read first and wins: a source on both passes. An
 * allowed packet passes without meeting any rule, so no rule counts it
 * (it is counted in sl_list_stats and its entry's hits); a blocked one is
 * dropped and counted there too, and no rule counts it either.
 *
 * The data path enforces an entry's end itself, on the decision clock
 * (bpf/clock.h): an entry past it is no entry, whether or not userspace
 * has removed it yet. A longest match that has ended hides a shorter
 * prefix of the same list that has not (an LPM trie answers one entry):
 * the service sweeps ended entries, so that lasts until its next sweep.
 */
#ifndef SL_BPF_LISTS_H
#define SL_BPF_LISTS_H

#include "clock.h"
#include "maps.h"
#include "parse.h"

enum sl_listed {
	SL_LISTED_NONE = 0,
	SL_LISTED_ALLOW,
	SL_LISTED_BLOCK,
};

/* The entry of `list` that holds the packet's source and has not ended
 * at `now_ms`, or NULL.
 */
static __always_inline struct sl_list_entry *
sl_list_find(void *list, const struct sl_packet *pkt, __u64 now_ms)
{
	struct sl_list_key k = { .prefixlen = 128, .addr = pkt->src };
	struct sl_list_entry *e = bpf_map_lookup_elem(list, &k);

	if (!e)
		return NULL;
	if (e->expires_ms && e->expires_ms <= now_ms)
		return NULL;
	return e;
}

/* A block's drop event: at most one a second per entry, whichever CPUs
 * its packets arrive on (a racing CPU may send a second: harmless).
 */
static __always_inline void sl_list_event(struct sl_list_entry *e,
					  const struct sl_packet *pkt,
					  __u64 now_ms)
{
	struct sl_drop_event *ev;

	if ((__u32)now_ms - e->event_ms < 1000 && e->event_ms)
		return;
	e->event_ms = (__u32)now_ms ? (__u32)now_ms : 1;
	ev = bpf_ringbuf_reserve(&sl_events, sizeof(*ev), 0);
	if (!ev) {
		struct sl_global_stats *gs = sl_cpu_stats();

		if (gs)
			gs->events_lost++;
		return;
	}
	ev->time_ms = now_ms;
	__builtin_memset(&ev->key, 0, sizeof(ev->key));
	ev->key.addr = pkt->src;
	ev->key.rule_id = SL_LIST_EVENT_RULE;
	ev->pad = 0;
	ev->used = 0;
	ev->retry_after_ms = e->expires_ms > now_ms ?
			     e->expires_ms - now_ms : 0;
	bpf_ringbuf_submit(ev, 0);
}

/* Whether a list decides the packet, counted where it does. Called only
 * while sl_config_lists(cfg) says a list holds an entry. A static
 * subprogram, and before the rule chain: its frame is never under the
 * chain's calls.
 */
static __noinline int sl_listed(const struct sl_config *cfg,
				const struct sl_packet *pkt, __u32 len)
{
	struct sl_list_entry *e = NULL;
	struct sl_list_stats *ls;
	__u32 zero = 0;
	__u64 now_ms;
	int kind;

	if (!cfg || !pkt)
		return SL_LISTED_NONE;
	now_ms = sl_now_ms();
	if (sl_config_lists(cfg) & SL_LISTS_ALLOW)
		e = sl_list_find(&sl_allow_list, pkt, now_ms);
	kind = SL_LISTED_ALLOW;
	if (!e && (sl_config_lists(cfg) & SL_LISTS_BLOCK)) {
		e = sl_list_find(&sl_block_list, pkt, now_ms);
		kind = SL_LISTED_BLOCK;
	}
	if (!e)
		return SL_LISTED_NONE;
	__sync_fetch_and_add(&e->hits, 1);
	ls = bpf_map_lookup_elem(&sl_list_stats, &zero);
	if (kind == SL_LISTED_BLOCK) {
		if (ls) {
			ls->blocked++;
			ls->blocked_bytes += len;
		}
		sl_list_event(e, pkt, now_ms);
	} else if (ls) {
		ls->allowed++;
		ls->allowed_bytes += len;
	}
	return kind;
}

#endif /* SL_BPF_LISTS_H */
