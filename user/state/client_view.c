// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "state/client_view.h"
#include "sl_algo.h"
#include "sl_key.h"
#include "sl_newcomer.h"
#include "sl_peer.h"

bool sl_client_view_sync_conf(const struct sl_maps *m, struct sl_sync_conf *sc)
{
	__u32 zero = 0;

	return m->sync >= 0 && !bpf_map_lookup_elem(m->sync, &zero, sc) &&
	       sc->layout != SL_LAYOUT_LOCAL;
}

/* A key without a state may be on probation (include/sl_newcomer.h):
 * its first accept, charged into `state` as the kernel will charge it
 * when the key comes back.
 */
static void read_probation(const struct sl_maps *m, const struct sl_params *p,
			   const struct sl_client_key *key, void *state)
{
	struct sl_newcomer_conf conf;
	struct sl_newcomer_bucket b;
	struct sl_tally empty;
	__u32 zero = 0, idx;
	int way, free;
	__u64 h;

	if (m->newcomer_conf < 0 ||
	    bpf_map_lookup_elem(m->newcomer_conf, &zero, &conf) || !conf.buckets)
		return;
	h = sl_newcomer_hash(key, conf.seed);
	idx = sl_newcomer_index(h, conf.buckets);
	if (bpf_map_lookup_elem(m->newcomers, &idx, &b))
		return;
	way = sl_newcomer_find(&b, sl_newcomer_tag(h), &free);
	if (way < 0)
		return;
	sl_tally_init(&empty);
	sl_charge(state, p, &empty, b.first_ms[way], b.units[way]);
}

int sl_client_view_read(const struct sl_maps *m, const struct sl_rule *rule,
			const struct sl_client_key *key, __u64 now_ms,
			struct sl_client_view *v)
{
	struct sl_sync_conf sc;

	return sl_client_view_compute(m, rule, key, now_ms,
				      sl_client_view_sync_conf(m, &sc) ? &sc : NULL,
				      1, v);
}

int sl_client_view_compute(const struct sl_maps *m, const struct sl_rule *rule,
			   const struct sl_client_key *key, __u64 now_ms,
			   const struct sl_sync_conf *sc, __u32 units,
			   struct sl_client_view *v)
{
	void *state = calloc(1, sl_state_size(rule->algorithm));
	struct sl_peer_view pv;
	struct sl_params p;

	if (!state)
		return -ENOMEM;
	/* no entry: a client on probation, never seen, or evicted */
	if (bpf_map_lookup_elem(sl_state_fd(m, rule->algorithm), key, state)) {
		sl_params_from_rule(&p, rule);
		if (sc)
			sl_layout_params(&p, sc);
		read_probation(m, &p, key, state);
	}
	if (sc && (m->peer_view < 0 ||
		   bpf_map_lookup_elem(m->peer_view, key, &pv)))
		memset(&pv, 0, sizeof(pv));
	sl_client_view_of(rule, state, sc ? &pv : NULL, sc, now_ms, units, v);
	free(state);
	return 0;
}

void sl_client_view_of(const struct sl_rule *rule, const void *state,
		       const struct sl_peer_view *pv,
		       const struct sl_sync_conf *sc, __u64 now_ms,
		       __u32 units, struct sl_client_view *v)
{
	struct sl_params p;
	struct sl_tally t;
	__u64 at, projected, room, round_room;

	v->exempt = false;
	sl_params_from_rule(&p, rule);
	if (sc)
		sl_layout_params(&p, sc);
	projected = sl_tally_node_peers(&t, state, pv, &p, sc, now_ms,
					&round_room);
	v->used = t.used;
	v->remaining = sl_remaining(&t, &p);
	/* the bounded layout's round may take less */
	if (round_room < v->remaining)
		v->remaining = round_room;
	/* the projection may take some of it (predictive layout) */
	room = p.limit + p.limit / SL_PREDICT_MARGIN;
	room = room > t.used + projected ? room - t.used - projected : 0;
	if (room < v->remaining)
		v->remaining = room;
	at = sl_accept_at_peers(state, pv, &p, sc, now_ms, units ? units : 1);
	v->retry_after_ms = at == SL_NEVER ? p.window_ms : at - now_ms;
	v->reset_ms = t.next_expiry_ms == SL_NEVER || t.next_expiry_ms < now_ms ?
		      0 : t.next_expiry_ms - now_ms;
}
