// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <bpf/bpf.h>
#include "core/pinned.h"
#include "sync/engine.h"
#include "sync/health.h"

json_object *sl_sync_status_json(const struct sl_maps *m, __u64 now_ms)
{
	struct sl_sync_status st;
	json_object *o, *peers;
	__u32 zero = 0, i, up = 0;

	if (m->sync_status < 0 ||
	    bpf_map_lookup_elem(m->sync_status, &zero, &st) || !st.node)
		return NULL;
	o = json_object_new_object();
	peers = json_object_new_array();
	for (i = 0; i < st.nr_peers && i < SL_MAX_PEERS; i++) {
		const struct sl_sync_peer *p = &st.peer[i];
		json_object *j = json_object_new_object();
		__u64 ago = sl_peer_heard_ago(p, now_ms);
		bool is_up = sl_peer_up(p, &st, now_ms);

		up += is_up;
		json_object_object_add(j, "node", json_object_new_int(p->node));
		json_object_object_add(j, "address", json_object_new_string(p->addr));
		json_object_object_add(j, "up", json_object_new_boolean(is_up));
		sl_json_add_u64(j, "last_heard_ms_ago", ago);
		sl_json_add_u64(j, "lag_ms", p->lag_ms);
		sl_json_add_u64(j, "messages", p->messages);
		sl_json_add_u64(j, "entries", p->entries);
		sl_json_add_u64(j, "bytes", p->bytes);
		sl_json_add_u64(j, "rejected", p->rejected);
		json_object_array_add(peers, j);
	}
	json_object_object_add(o, "node", json_object_new_int(st.node));
	json_object_object_add(o, "layout", json_object_new_string(sl_layout_name(st.layout)));
	sl_json_add_u64(o, "interval_ms", st.interval_ms);
	sl_json_add_u64(o, "peers_configured", st.peers_configured);
	sl_json_add_u64(o, "peers_up", up);
	if (st.layout == SL_LAYOUT_BOUNDED)
		sl_json_add_u64(o, "live_nodes", st.live_nodes);
	sl_json_add_u64(o, "last_round_ms_ago",
			now_ms > st.updated_ms ? now_ms - st.updated_ms : 0);
	sl_json_add_u64(o, "rounds", st.rounds);
	sl_json_add_u64(o, "sent_messages", st.sent_messages);
	sl_json_add_u64(o, "sent_bytes", st.sent_bytes);
	sl_json_add_u64(o, "sent_entries", st.sent_entries);
	sl_json_add_u64(o, "send_errors", st.send_errors);
	sl_json_add_u64(o, "aggregation_us", st.collect_us);
	sl_json_add_u64(o, "aggregation_clients", st.collect_clients);
	sl_json_add_u64(o, "aggregation_changed", st.collect_changed);
	sl_json_add_u64(o, "rejected_forged", st.rejected_forged);
	sl_json_add_u64(o, "rejected_malformed", st.rejected_malformed);
	sl_json_add_u64(o, "rejected_replayed", st.rejected_replayed);
	sl_json_add_u64(o, "rejected_own", st.rejected_own);
	sl_json_add_u64(o, "rejected_future", st.rejected_future);
	sl_json_add_u64(o, "rejected_stale", st.rejected_stale);
	sl_json_add_u64(o, "unknown_rule_entries", st.unknown_rule);
	sl_json_add_u64(o, "peer_view_full", st.view_full);
	sl_json_add_u64(o, "untracked_clients", st.untracked);
	json_object_object_add(o, "backend_up", json_object_new_boolean(st.backend_up));
	sl_json_add_u64(o, "backend_errors", st.backend_errors);
	sl_json_add_u64(o, "backend_reconnects", st.backend_reconnects);
	json_object_object_add(o, "peers", peers);
	return o;
}

void sl_sync_status_print(json_object *sync)
{
	json_object *peers, *v;
	size_t i, n;

#define G(o, k) (json_object_object_get_ex(o, k, &v), v)
#define U(o, k) ((unsigned long long)json_object_get_int64(G(o, k)))
	printf("sync:     node %llu, %s every %llu ms, %llu of %llu peers up, last round %llu ms ago\n",
	       U(sync, "node"), json_object_get_string(G(sync, "layout")),
	       U(sync, "interval_ms"), U(sync, "peers_up"),
	       U(sync, "peers_configured"), U(sync, "last_round_ms_ago"));
	printf("          sent %llu messages (%llu bytes), aggregation %llu us over %llu clients\n",
	       U(sync, "sent_messages"), U(sync, "sent_bytes"),
	       U(sync, "aggregation_us"), U(sync, "aggregation_clients"));
	printf("          rejected: %llu forged, %llu malformed, %llu replayed, %llu stale, %llu future, %llu own\n",
	       U(sync, "rejected_forged"), U(sync, "rejected_malformed"),
	       U(sync, "rejected_replayed"), U(sync, "rejected_stale"),
	       U(sync, "rejected_future"), U(sync, "rejected_own"));
	peers = G(sync, "peers");
	n = json_object_array_length(peers);
	if (n)
		printf("  %-6s %-24s %-5s %12s %8s %10s %10s\n", "NODE", "ADDRESS",
		       "UP", "HEARD_AGO", "LAG_MS", "MESSAGES", "REJECTED");
	for (i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(peers, i);

		printf("  %-6llu %-24s %-5s %10llums %8llu %10llu %10llu\n",
		       U(p, "node"), json_object_get_string(G(p, "address")),
		       json_object_get_boolean(G(p, "up")) ? "yes" : "no",
		       U(p, "last_heard_ms_ago"), U(p, "lag_ms"),
		       U(p, "messages"), U(p, "rejected"));
	}
#undef U
#undef G
}
