// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The peer view (sl_peer_view) as the engine keeps it: each writer's
 * share of the map, and the sweep of the entries that no longer count.
 */
#include <errno.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include "sync/engine_internal.h"

/* How many sl_peer_view entries one node's reports may make: the map's
 * capacity over the nodes that write it (each configured peer, and this
 * node under bounded, whose own reports go in too). An even share,
 * because a receiver cannot tell a peer with many real clients from one
 * reporting junk: a flooding peer fills its own share and no more, and
 * every other peer's reports still find room. A client is one entry
 * however many peers report it (it counts for the first), so clients
 * spread over the fleet take less than the shares; a fleet whose
 * clients crowd on one node needs a view sized for that node's clients
 * times the nodes. A peer past its share has its new clients refused
 * and counted (view_capped, its view_refused): an undercount of those
 * clients, never an eviction of another peer's.
 */
__u64 sl_sync_view_share(struct sl_sync_engine *s)
{
	__u64 writers = s->admit_set ? s->nr_members : s->o.peers_configured;

	if (s->view_share)
		return s->view_share;
	if (s->o.layout == SL_LAYOUT_BOUNDED)
		writers++;
	s->view_share = sl_map_capacity(s->maps.peer_view) /
			(writers ? writers : 1);
	if (!s->view_share)
		s->view_share = 1;
	return s->view_share;
}

/* Does anything of a peer view entry still count at now? (Its rule gone:
 * nothing.) The same test as sl_peer_tally's, on a zero tally; under
 * bounded, for the sums, the room's too: the node's own units and the
 * slots whose first left the window but whose last merge did not still
 * take room (sl_fleet_slot).
 */
static bool view_counts(const struct sl_sync_engine *s,
			const struct sl_client_key *key,
			const struct sl_peer_view *v, __u64 now_ms)
{
	const struct rule_ref *r = key->rule_id < SL_MAX_RULES ?
				   s->by_id[key->rule_id] : NULL;
	struct sl_sync_conf sc = {
		.layout = SL_LAYOUT_PREDICTIVE,
		.interval_ms = s->o.interval_ms,
	};
	struct sl_params p;
	struct sl_tally t;
	__u64 projected;

	if (!r)
		return false;
	sl_params_from_rule(&p, &r->rule);
	if (s->o.layout == SL_LAYOUT_BOUNDED && sl_peer_sums(&p)) {
		struct sl_fleet_walk w;
		__u32 i;

		if (sl_fleet_start(&w, v, &p, now_ms))
			for (i = 0; i < SL_PEER_SLOTS; i++)
				sl_fleet_slot(&w, i);
		if (w.base || w.hidden)
			return true;
	}
	sl_tally_init(&t);
	/* no own state: what the peers' part alone counts */
	projected = sl_peer_tally_algo(&t, v, NULL, &p, &sc, now_ms);
	return t.used || projected || t.next_expiry_ms != SL_NEVER;
}

/* Delete the peer view entries that no longer count, in batches, so that
 * the map holds the clients peers counted within a window, not every
 * client ever heard of; and count again, per node, the entries its
 * reports made (view_share), from what is left.
 */
int sl_sync_sweep_peer_view(struct sl_sync_engine *s, __u64 now_ms)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	enum { BATCH = 4096 };
	struct sl_client_key *keys, *stale;
	struct sl_peer_view *vals;
	__u32 count, out, i, n, nr_stale, *made;
	void *in = NULL;
	int ret, err = 0;

	keys = calloc(BATCH, sizeof(*keys));
	stale = calloc(BATCH, sizeof(*stale));
	vals = calloc(BATCH, sizeof(*vals));
	made = calloc(0x10000, sizeof(*made));
	if (!keys || !stale || !vals || !made) {
		err = -ENOMEM;
		goto out;
	}
	do {
		count = BATCH;
		ret = bpf_map_lookup_batch(s->maps.peer_view, in, &out, keys,
					   vals, &count, &opts);
		if (ret && errno != ENOENT) {
			err = -errno;
			break;
		}
		for (i = 0, nr_stale = 0; i < count; i++)
			if (!view_counts(s, &keys[i], &vals[i], now_ms))
				stale[nr_stale++] = keys[i];
			else if (vals[i].pad <= 0xffff)
				made[vals[i].pad]++;
		n = nr_stale;
		/* deleting behind the cursor keeps the walk valid: the
		 * cursor is a bucket, and these keys are in earlier ones
		 */
		if (n && bpf_map_delete_batch(s->maps.peer_view, stale, &n,
					      &opts) && errno != ENOENT) {
			err = -errno;
			break;
		}
		in = &out;
	} while (!ret);
	/* a walk cut short keeps the counts it had: they only grow until
	 * the next sweep, an overcount that refuses early, never late
	 */
	if (!err) {
		free(s->view_entries);
		s->view_entries = made;
		made = NULL;
	}
out:
	free(made);
	free(vals);
	free(stale);
	free(keys);
	return err;
}

