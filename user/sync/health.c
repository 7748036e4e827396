// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Sync health read from the pinned sl_sync_status, as JSON or text
 * (sync/health.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include "state/pinned.h"
#include "sync/engine.h"
#include "sync/health.h"

int sl_sync_health_read(const struct sl_maps *m, __u64 now_ms,
			struct sl_sync_health *h)
{
	struct sl_sync_status *st = &h->st;
	__u32 zero = 0, i;

	memset(h, 0, sizeof(*h));
	if (m->sync_status < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(m->sync_status, &zero, st))
		return -errno;
	if (!st->node)
		return -ENOENT;
	h->now_ms = now_ms;
	h->last_round_ago_ms = now_ms > st->updated_ms ? now_ms - st->updated_ms : 0;
	h->nr_peers = st->nr_peers < SL_MAX_PEERS ? st->nr_peers : SL_MAX_PEERS;
	for (i = 0; i < h->nr_peers; i++) {
		h->peer[i].heard_ago_ms = sl_peer_heard_ago(&st->peer[i], now_ms);
		h->peer[i].up = sl_peer_up(&st->peer[i], st, now_ms);
		h->peers_up += h->peer[i].up;
	}
	return 0;
}

static json_object *peer_to_json(const struct sl_sync_health *h, __u32 i)
{
	const struct sl_sync_peer *p = &h->st.peer[i];
	json_object *j = json_object_new_object();

	json_object_object_add(j, "node", json_object_new_int(p->node));
	json_object_object_add(j, "address", json_object_new_string(p->addr));
	json_object_object_add(j, "up", json_object_new_boolean(h->peer[i].up));
	sl_json_add_u64(j, "last_heard_ms_ago", h->peer[i].heard_ago_ms);
	sl_json_add_u64(j, "lag_ms", p->lag_ms);
	sl_json_add_u64(j, "messages", p->messages);
	sl_json_add_u64(j, "entries", p->entries);
	sl_json_add_u64(j, "bytes", p->bytes);
	sl_json_add_u64(j, "rejected", p->rejected);
	sl_json_add_u64(j, "view_refused", p->view_refused);
	return j;
}

json_object *sl_sync_health_to_json(const struct sl_sync_health *h)
{
	const struct sl_sync_status *st = &h->st;
	json_object *o = json_object_new_object(), *peers = json_object_new_array();
	__u32 i;

	for (i = 0; i < h->nr_peers; i++)
		json_object_array_add(peers, peer_to_json(h, i));
	json_object_object_add(o, "node", json_object_new_int(st->node));
	json_object_object_add(o, "layout", json_object_new_string(sl_layout_name(st->layout)));
	sl_json_add_u64(o, "interval_ms", st->interval_ms);
	sl_json_add_u64(o, "peers_configured", st->peers_configured);
	sl_json_add_u64(o, "peers_up", h->peers_up);
	if (st->layout == SL_LAYOUT_BOUNDED)
		sl_json_add_u64(o, "live_nodes", st->live_nodes);
	sl_json_add_u64(o, "last_round_ms_ago", h->last_round_ago_ms);
	sl_json_add_u64(o, "rounds", st->rounds);
	sl_json_add_u64(o, "sent_messages", st->sent_messages);
	sl_json_add_u64(o, "sent_bytes", st->sent_bytes);
	sl_json_add_u64(o, "sent_entries", st->sent_entries);
	sl_json_add_u64(o, "send_errors", st->send_errors);
	sl_json_add_u64(o, "aggregation_us", st->collect_us);
	sl_json_add_u64(o, "aggregation_clients", st->collect_clients);
	sl_json_add_u64(o, "aggregation_changed", st->collect_changed);
	sl_json_add_u64(o, "rejected_forged", st->rejected_forged);
	sl_json_add_u64(o, "rejected_malformed", st->rejected_malformed);
	sl_json_add_u64(o, "rejected_replayed", st->rejected_replayed);
	sl_json_add_u64(o, "rejected_own", st->rejected_own);
	sl_json_add_u64(o, "rejected_future", st->rejected_future);
	sl_json_add_u64(o, "rejected_stale", st->rejected_stale);
	sl_json_add_u64(o, "rejected_unknown_peer", st->rejected_unknown_peer);
	sl_json_add_u64(o, "rejected_wrong_address",
			st->rejected_wrong_address);
	sl_json_add_u64(o, "clamped_entries", st->clamped_entries);
	sl_json_add_u64(o, "peer_view_capped", st->view_capped);
	sl_json_add_u64(o, "unknown_rule_entries", st->unknown_rule);
	sl_json_add_u64(o, "peer_view_full", st->view_full);
	sl_json_add_u64(o, "untracked_clients", st->untracked);
	json_object_object_add(o, "backend_up", json_object_new_boolean(st->backend_up));
	sl_json_add_u64(o, "backend_errors", st->backend_errors);
	sl_json_add_u64(o, "backend_reconnects", st->backend_reconnects);
	sl_json_add_u64(o, "store_transitions", st->store_transitions);
	json_object_object_add(o, "peers", peers);
	return o;
}

void sl_sync_health_print(const struct sl_sync_health *h)
{
	const struct sl_sync_status *st = &h->st;
	__u32 i;

	printf("sync:     node %u, %s every %u ms, %u of %u peers up, last round %llu ms ago\n",
	       st->node, sl_layout_name(st->layout), st->interval_ms,
	       h->peers_up, st->peers_configured,
	       (unsigned long long)h->last_round_ago_ms);
	printf("          sent %llu messages (%llu bytes), aggregation %llu us over %llu clients\n",
	       (unsigned long long)st->sent_messages,
	       (unsigned long long)st->sent_bytes,
	       (unsigned long long)st->collect_us,
	       (unsigned long long)st->collect_clients);
	printf("          rejected: %llu unknown peer, %llu wrong address, %llu forged, %llu malformed, %llu replayed, %llu stale, %llu future, %llu own\n",
	       (unsigned long long)st->rejected_unknown_peer,
	       (unsigned long long)st->rejected_wrong_address,
	       (unsigned long long)st->rejected_forged,
	       (unsigned long long)st->rejected_malformed,
	       (unsigned long long)st->rejected_replayed,
	       (unsigned long long)st->rejected_stale,
	       (unsigned long long)st->rejected_future,
	       (unsigned long long)st->rejected_own);
	if (st->clamped_entries || st->view_capped)
		printf("          cut: %llu entries claiming more than a node can accept, %llu refused past their peer's share of the view\n",
		       (unsigned long long)st->clamped_entries,
		       (unsigned long long)st->view_capped);
	if (h->nr_peers)
		printf("  %-6s %-24s %-5s %12s %8s %10s %10s\n", "NODE", "ADDRESS",
		       "UP", "HEARD_AGO", "LAG_MS", "MESSAGES", "REJECTED");
	for (i = 0; i < h->nr_peers; i++) {
		const struct sl_sync_peer *p = &h->st.peer[i];

		printf("  %-6u %-24s %-5s %10llums %8llu %10llu %10llu\n",
		       p->node, p->addr, h->peer[i].up ? "yes" : "no",
		       (unsigned long long)h->peer[i].heard_ago_ms,
		       (unsigned long long)p->lag_ms,
		       (unsigned long long)p->messages,
		       (unsigned long long)p->rejected);
	}
}
