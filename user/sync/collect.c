// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Collect: a round's changed clients (sl_changed, or every client), the
 * units each accepted per peer slice since it was last sent, appended to
 * the transport's list of entries; and the table of what was sent.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "util/clock.h"
#include "util/grow.h"
#include "sync/engine_internal.h"

static struct sent_client *table_slot(const struct sl_client_hash *h,
				      struct sent_client *t, size_t cap,
				      const struct sl_client_key *k)
{
	size_t i = sl_client_hash(h, k) & (cap - 1);

	while (t[i].in_use && memcmp(&t[i].key, k, sizeof(*k)))
		i = (i + 1) & (cap - 1);
	return &t[i];
}

/* Keep only clients changed within `keep_ms`, in a table with room to
 * grow: rebuilt when three quarters full.
 */
static int table_rebuild(struct sl_sync_engine *s, __u64 now_ms, __u64 keep_ms)
{
	size_t cap = s->cap, i, used = 0;
	struct sent_client *t;

	if (s->used * 2 >= s->cap && cap < s->max_cap)
		cap *= 2;
	t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (i = 0; i < s->cap; i++) {
		const struct sent_client *c = &s->table[i];

		if (!c->in_use || now_ms - c->changed_ms > keep_ms)
			continue;
		*table_slot(&s->hash, t, cap, &c->key) = *c;
		used++;
	}
	free(s->table);
	s->table = t;
	s->cap = cap;
	s->used = used;
	return 0;
}

/* One entry of the round, unless adopting (nothing is sent then). */
static void out_add(struct sl_sync_engine *s, const struct sl_wire_entry *e)
{
	struct sl_sync_entries *l = s->out;

	if (!l)
		return;
	s->st.sent_entries++;
	if (l->nr == l->max ||
	    sl_grow((void **)&l->e, &l->cap, l->nr + 1, sizeof(*l->e))) {
		s->out_full = true;
		return;
	}
	l->e[l->nr++] = *e;
}

/* A client's units per peer slice, with the earliest first accept among
 * them. While adopting, only what a previous service
 * can have sent: slices that began by its last round.
 */
struct bin {
	__u32 slice;
	__u32 count;
	__u64 first_ms;
};

struct bins {
	__u64 ps;
	__u64 sent_until_ms;	/* adopting: later pieces are not sent yet */
	bool adopting;
	bool held_back;		/* adopting: some pieces were not sent yet */
	bool bounded;		/* the sums under bounded: sl_bounded_start */
	__u64 prev_ms;		/* the round before */
	__u64 last_ms;		/* the client's last accept */
	struct bin slot[SL_PEER_SLOTS];
};

static void bin_piece(void *ctx, __u64 start_ms, __u32 units)
{
	struct bins *b = ctx;
	__u32 slice = start_ms / b->ps;
	struct bin *s = &b->slot[slice % SL_PEER_SLOTS];

	if (b->adopting && start_ms > b->sent_until_ms) {
		b->held_back = true;
		return;
	}
	if (s->slice != slice || !s->count) {
		s->slice = slice;
		s->count = 0;
		s->first_ms = start_ms;
	}
	if (start_ms < s->first_ms)
		s->first_ms = start_ms;
	s->count += units;
}

/* The client's entry in the table of what was sent (made if new), or
 * NULL when it is not to be looked at: nothing accepted since the last
 * round, or no room to remember it.
 */
static struct sent_client *changed_client(struct sl_sync_engine *s,
					  const struct sl_client_key *key,
					  __u32 accepted)
{
	struct sent_client *c = table_slot(&s->hash, s->table, s->cap, key);

	if (c->in_use && c->accepted == accepted)
		return NULL;
	/* a live state's accept counter only grows: one that went back is a
	 * new state (the client was reset or evicted, then came again), whose
	 * slices start from zero; what was sent of the old one says nothing
	 * of it
	 */
	if (c->in_use && (__s32)(accepted - c->accepted) < 0)
		memset(c->sent, 0, sizeof(c->sent));
	if (!c->in_use) {
		/* room is kept free (see table_rebuild); without it, not
		 * tracking the client is safe: its units are not sent
		 * (undercount), where sending them every round would not be
		 */
		if ((s->used + 1) * 8 > s->cap * 7) {
			s->st.untracked++;
			return NULL;
		}
		memset(c, 0, sizeof(*c));
		c->key = *key;
		c->in_use = true;
		s->used++;
	}
	c->accepted = accepted;
	c->changed_ms = s->now_ms;
	s->st.collect_changed++;
	return c;
}

/* What each of the client's slices gained since it was last sent: the
 * round's entries.
 */
static void add_gains(struct sl_sync_engine *s, const struct sl_client_key *key,
		      const struct rule_ref *r, struct sent_client *c,
		      const struct bins *b)
{
	int i;

	for (i = 0; i < SL_PEER_SLOTS; i++) {
		const struct bin *now = &b->slot[i];
		struct sl_slot *was = &c->sent[i];
		struct sl_wire_entry e = {
			.addr = key->addr,
			.rule_hash = r->hash,
			.dport = key->dport,
		};

		if (!now->count)
			continue;
		if (was->slice != now->slice) {
			was->slice = now->slice;
			was->count = 0;
		}
		if (now->count <= was->count)
			continue;	/* slices only grow until they leave */
		e.start_ms = s->to == SL_SYNC_TO_STORE ?
			     now->first_ms / b->ps * b->ps : now->first_ms;
		if (b->bounded)
			e.start_ms = sl_bounded_start(now->first_ms,
						      b->prev_ms, b->last_ms,
						      b->ps);
		e.units = now->count - was->count;
		was->count = now->count;
		out_add(s, &e);
	}
}

static int collect_client(void *ctx, const struct sl_client_key *key,
			  const void *state, __u32 value_size)
{
	struct sl_sync_engine *s = ctx;
	const struct sl_client_hdr *h = state;
	const struct rule_ref *r;
	struct sent_client *c;
	struct sl_params p;
	struct bins b = { 0 };
	__u32 accepted = h->accepted;
	__u64 last_ms = h->last_ms, now_ms;

	s->st.collect_clients++;
	r = key->rule_id < SL_MAX_RULES ? s->by_id[key->rule_id] : NULL;
	if (!r || sl_state_size(r->algorithm) != value_size)
		return 0;
	/* no accept since the last round began: unchanged, known without
	 * touching the (large, cache-cold) table of what was sent
	 */
	if (s->st.rounds && last_ms < s->prev_ms)
		return 0;
	/* the walk takes a while: a slice opened after the round read the
	 * clock must be binned by its own start, or the next round would
	 * find it in another slice and send it again
	 */
	now_ms = last_ms > s->now_ms ? last_ms : s->now_ms;
	c = changed_client(s, key, accepted);
	if (!c)
		return 0;
	sl_params_from_rule(&p, &r->rule);
	b.ps = sl_peer_slice_of(&p);
	b.adopting = !s->out;
	b.sent_until_ms = s->sent_until_ms;
	b.bounded = s->o.layout == SL_LAYOUT_BOUNDED &&
		    s->to == SL_SYNC_TO_PEERS && sl_peer_sums(&p);
	b.prev_ms = s->prev_ms;
	b.last_ms = last_ms;
	sl_state_pieces(state, &p, now_ms, bin_piece, &b);
	add_gains(s, key, r, c, &b);
	/* units accepted while no service ran: the next round must look */
	if (b.held_back)
		c->accepted = accepted - 1;
	if (s->used * 4 >= s->cap * 3 && s->cap < s->max_cap)
		return table_rebuild(s, s->now_ms, ~0ull);
	return 0;
}

static __u64 longest_window(const struct sl_sync_engine *s)
{
	__u64 w = 0;
	unsigned i;

	/* how long a slice sent can count: a bucket's horizon may be longer
	 * than its window, and what is forgotten here would be sent again
	 */
	for (i = 0; i < s->nr_rules; i++) {
		struct sl_params p;
		__u64 keep;

		sl_params_from_rule(&p, &s->rules[i].rule);
		keep = sl_peer_keep_ms(&p);
		if (keep < s->rules[i].window_ms)
			keep = s->rules[i].window_ms;
		if (keep > w)
			w = keep;
	}
	return w;
}

/* The table of a changed client's key, for sl_for_each_changed_client. */
static int syncing_table_of(void *ctx, const struct sl_client_key *key,
			    __u32 *value_size)
{
	const struct sl_sync_engine *s = ctx;
	const struct rule_ref *r = key->rule_id < SL_MAX_RULES ?
				   s->by_id[key->rule_id] : NULL;

	if (!r)
		return -1;
	*value_size = sl_state_size(r->algorithm);
	return sl_state_fd(&s->maps, r->algorithm);
}

/* bounded: the nodes that hear each other, this one included. A peer is
 * live while its messages arrive: heard since the round before the last,
 * so one late message does not count it out. Until two rounds have run
 * nothing can be known, and the fleet is taken to be up; a store of
 * totals (Redis) is all the peers at once.
 */
static __u32 live_nodes(const struct sl_sync_engine *s)
{
	__u32 n = 1, i;

	if (s->to == SL_SYNC_TO_STORE)
		return s->o.nodes;
	if (s->st.rounds < 2)
		return s->o.nodes;
	for (i = 0; i < s->st.nr_peers; i++)
		if (s->st.peer[i].messages &&
		    s->st.peer[i].last_heard_ms >= s->before_prev_ms)
			n++;
	return n;
}

/* The round's clients: those the kernel reported accepted since the last
 * round (sl_changed), so a round costs what changed, not what exists. The
 * first round after a start or an adoption, one after a failed round, and
 * one after the kernel lost keys for want of room walk every client, as
 * every round did before sl_changed.
 */
static int collect_clients(struct sl_sync_engine *s)
{
	__u32 zero = 0;
	int err;

	/* accepts from now on mark their client for the next round; one
	 * made before this write is in the ring already
	 */
	s->conf.round = s->conf.round + 1 ? s->conf.round + 1 : 1;
	s->conf.live_nodes = live_nodes(s);
	s->st.live_nodes = s->conf.live_nodes;
	if (bpf_map_update_elem(s->maps.sync, &zero, &s->conf, BPF_ANY))
		return -errno;
	err = sl_for_each_changed_client(s->changed, &s->maps,
					 syncing_table_of,
					 s->walk_all ? NULL : collect_client, s);
	if (err == -ENOBUFS) {
		s->walk_all = true;
		err = 0;
	}
	if (!err && s->walk_all) {
		err = sl_for_each_client_in(&s->maps, s->maps.clients,
					    sizeof(struct sl_client),
					    collect_client, s);
		if (!err)
			err = sl_for_each_client_in(&s->maps,
						    s->maps.clients_plain,
						    sizeof(struct sl_client_plain),
						    collect_client, s);
		if (!err)
			err = sl_for_each_client_in(&s->maps,
						    s->maps.clients_log,
						    sizeof(struct sl_client_log),
						    collect_client, s);
	}
	/* the keys read are gone from the ring: a round cut short leaves
	 * the next one to walk every client
	 */
	s->walk_all = err != 0;
	return err;
}

/* The round, the rules read: collected into `out` (NULL: nothing is
 * sent, only recorded as sent), then the housekeeping of every round.
 */
int sl_sync_collect_into(struct sl_sync_engine *s, uint64_t now_ms,
			 enum sl_sync_carrier to, struct sl_sync_entries *out)
{
	__u64 t0 = sl_now_mono_ns();
	int err = 0;

	s->now_ms = now_ms;
	s->to = to;
	s->out = out;
	s->out_full = false;
	s->st.collect_clients = 0;
	s->st.collect_changed = 0;
	/* split-quota needs no peers' counts: heartbeats only. */
	if (s->o.layout != SL_LAYOUT_SPLIT_QUOTA)
		err = collect_clients(s);
	if (s->out_full)
		s->st.send_errors++;
	s->out = NULL;
	/* a walk cut short: the clients it did not reach are looked at in
	 * full next time
	 */
	if (!err) {
		s->before_prev_ms = s->prev_ms;
		s->prev_ms = now_ms;
	}
	/* forget clients whose slices have all left the window, here and
	 * in the peer view
	 */
	if (!err && s->st.rounds % 64 == 63)
		err = table_rebuild(s, now_ms, longest_window(s));
	if (!err && s->st.rounds % 64 == 31)
		err = sl_sync_sweep_peer_view(s, now_ms);
	s->st.rounds++;
	s->st.collect_us = (sl_now_mono_ns() - t0) / 1000;
	return err;
}

int sl_sync_collect_entries(struct sl_sync_engine *s, uint64_t now_ms,
			    enum sl_sync_carrier to,
			    struct sl_sync_entries *out)
{
	/* rules that cannot be read: no round at all */
	int err = sl_sync_refresh_rules(s);
	size_t from = out->nr;

	if (err)
		return err;
	err = sl_sync_collect_into(s, now_ms, to, out);
	sl_sync_merge_own(s, out, from, now_ms);
	return err;
}

