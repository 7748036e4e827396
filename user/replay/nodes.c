// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Replaying a trace across nodes: N instances of the real program, each
 * with the real sync engine (user/sync/engine.h), exchanging the real sealed
 * messages in memory (each node a key pair made for the run). Deterministic: the model clock moves only at trace
 * lines, so a sync round that falls due between two requests runs at the
 * next one, and the next round is due an interval after it ran, as a
 * daemon that sleeps an interval after each round would do. This is the
 * design study's rule ("if t - last_sync >= interval, sync at t"), which
 * its Model B figures depend on. After a whole interval without a request,
 * though, the round that fell due an interval after the last one runs at
 * its own time, as a daemon's would, before the next request's: a trace
 * that goes quiet for a window must not have its last accepts reach the
 * peers only a window later (the study's client never pauses for an
 * interval, so its figures stay). A trace can instead give the schedule
 * itself with "T_MS sync" lines. "cut", "heal" and "join" lines take a
 * node off the mesh and back, or start its service late (user/replay/trace.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "util/grow.h"
#include "replay/nodes.h"
#include "sync/engine.h"

struct datagram {
	unsigned from;
	unsigned to;
	bool first;		/* the first peer's copy: counts the entries */
	size_t len;
	uint8_t buf[SL_WIRE_MAX];
};

struct nodes_run {
	const struct sl_replay_nodes_opts *o;
	/* NULL: the node's service has not joined */
	struct sl_sync_engine **sync;
	struct sl_sync_opts so;
	struct sl_maps **maps;	/* each node's, to start its service */
	uint8_t (*secret)[SL_WIRE_KEY];	/* each node's key pair */
	uint8_t (*public)[SL_WIRE_KEY];
	bool *cut;		/* no message reaches the node or leaves it */
	struct sl_replay_nodes_stats *st;
	struct datagram *out;
	size_t nr_out, cap_out;
	unsigned collecting;
	__u64 last_sync_ms;
	__u64 last_request_ms;
	bool pending;		/* requests decided since the last round */
	bool scheduled;		/* the trace gives the rounds: "T_MS sync" */
	__u32 lcg;
};

static int keep_datagram(void *ctx, unsigned peer, const uint8_t *msg,
			 size_t len)
{
	struct nodes_run *run = ctx;
	struct datagram *d;

	if (sl_grow((void **)&run->out, &run->cap_out, run->nr_out + 1,
		    sizeof(*run->out)))
		return -ENOMEM;
	d = &run->out[run->nr_out++];
	d->from = run->collecting;
	/* node k's peers are the other nodes in order (start_node) */
	d->to = peer < d->from ? peer : peer + 1;
	d->first = !peer;
	d->len = len;
	memcpy(d->buf, msg, len);
	return 0;
}

/* Every node collects at `now`, then every datagram reaches every other
 * node: all nodes see the same round, as the study's global sync does.
 */
static int sync_round(struct nodes_run *run, __u64 now_ms)
{
	unsigned k, j;
	size_t i;
	int err;

	run->nr_out = 0;
	for (k = 0; k < run->o->nodes; k++) {
		if (!run->sync[k])
			continue;
		run->collecting = k;
		err = sl_sync_collect(run->sync[k], now_ms, keep_datagram, run);
		if (err)
			return err;
	}
	for (i = 0; i < run->nr_out; i++) {
		const struct datagram *d = &run->out[i];

		j = d->to;
		if (j < run->o->nodes && run->sync[j] && !run->cut[j] &&
		    !run->cut[d->from]) {
			if (sl_sync_receive(run->sync[j], d->buf, d->len, "",
					    now_ms) != SL_SYNC_MERGED)
				return -EPROTO;	/* in memory: cannot happen */
			run->st->messages++;
			run->st->bytes += d->len;
		}
		if (d->first && d->len > SL_WIRE_HEADER + SL_WIRE_TAG)
			run->st->entries += (d->len - SL_WIRE_HEADER -
					     SL_WIRE_TAG) / SL_WIRE_ENTRY;
	}
	/* in memory every datagram arrived: the round is settled */
	for (k = 0; k < run->o->nodes; k++)
		if (run->sync[k] && (err = sl_sync_settle(run->sync[k], now_ms)))
			return err;
	run->st->rounds++;
	return 0;
}

/* The study's node generator: s = s * 1103515245 + 12345 mod 2^32, the
 * request goes to floor(s / 2^32 * nodes), first request after the first
 * step.
 */
static unsigned lcg_node(struct nodes_run *run)
{
	run->lcg = run->lcg * 1103515245u + 12345u;
	return (unsigned)(((__u64)run->lcg * run->o->nodes) >> 32);
}

/* Layouts whose nodes exchange counts. */
static bool exchanges(const struct sl_replay_nodes_opts *o)
{
	return o->layout == SL_LAYOUT_DELAYED_SYNC ||
	       o->layout == SL_LAYOUT_PREDICTIVE ||
	       o->layout == SL_LAYOUT_BOUNDED;
}

/* Node k (id k + 1) and its peers, every other node in order, each
 * with the pair's keys.
 */
static int start_node(struct nodes_run *run, unsigned k)
{
	unsigned j;
	int err;

	run->so.node = k + 1;
	run->so.incarnation = 1;
	err = sl_wire_keys_init(&run->so.keys, k + 1, run->secret[k]);
	for (j = 0; j < run->o->nodes && !err; j++)
		if (j != k)
			err = sl_wire_keys_add(&run->so.keys, run->secret[k],
					       j + 1, run->public[j], NULL);
	if (err)
		return err;
	run->sync[k] = sl_sync_new(run->maps[k], &run->so);
	return run->sync[k] ? 0 : -errno;
}

static int link_event(struct nodes_run *run, const struct sl_trace_req *r)
{
	unsigned k = r->node;

	if (run->o->layout == SL_REPLAY_CENTRAL)
		return 0;	/* one shared state: no links */
	if (r->link == SL_TRACE_JOIN)
		return run->sync[k] ? 0 : start_node(run, k);
	run->cut[k] = r->link == SL_TRACE_CUT;
	return 0;
}

static int before_request(void *ctx, const struct sl_trace_req *r, size_t i,
			  unsigned *node)
{
	struct nodes_run *run = ctx;
	int err;

	(void)i;
	if (r->link)
		return link_event(run, r);
	if (r->sync) {
		if (!exchanges(run->o))
			return 0;
		return sync_round(run, r->t_ms);
	}
	if (run->o->assign_lcg)
		*node = lcg_node(run);
	else
		*node = r->node >= 0 ? (unsigned)r->node : 0;
	if (run->o->layout == SL_REPLAY_CENTRAL) {
		*node = 0;	/* one shared state */
		run->st->messages++;	/* every request touches it */
		return 0;
	}
	if (exchanges(run->o) && !run->scheduled && run->pending &&
	    r->t_ms - run->last_request_ms >= run->o->interval_ms &&
	    run->last_sync_ms + run->o->interval_ms < r->t_ms) {
		/* quiet for an interval: the round due after the last one */
		run->last_sync_ms += run->o->interval_ms;
		err = sync_round(run, run->last_sync_ms);
		if (err)
			return err;
	}
	if (exchanges(run->o) && !run->scheduled &&
	    r->t_ms - run->last_sync_ms >= run->o->interval_ms) {
		err = sync_round(run, r->t_ms);
		if (err)
			return err;
		run->last_sync_ms = r->t_ms;
		run->pending = false;
	}
	run->last_request_ms = r->t_ms;
	run->pending = true;
	return 0;
}

int sl_replay_nodes_run(struct sl_instance *const *nodes,
			const struct sl_replay_nodes_opts *o,
			const struct sl_trace *tr, __u64 window_ms,
			sl_replay_decision_fn fn, void *ctx,
			struct sl_replay_result *res,
			struct sl_replay_nodes_stats *st)
{
	struct sl_replay_route route = { .before = before_request };
	struct nodes_run run = { .o = o, .st = st, .lcg = o->seed };
	unsigned k, n = o->layout == SL_REPLAY_CENTRAL ? 1 : o->nodes;
	int err = 0;

	memset(st, 0, sizeof(*st));
	route.ctx = &run;
	for (k = 0; k < tr->nr && !run.scheduled; k++)
		run.scheduled = tr->req[k].sync;
	run.sync = calloc(n, sizeof(*run.sync));
	run.maps = calloc(n, sizeof(*run.maps));
	run.cut = calloc(n, sizeof(*run.cut));
	run.secret = calloc(n, sizeof(*run.secret));
	run.public = calloc(n, sizeof(*run.public));
	if (!run.sync || !run.maps || !run.cut || !run.secret || !run.public) {
		err = -ENOMEM;
		goto out;
	}
	if (o->layout != SL_REPLAY_CENTRAL) {
		bool *late = run.cut;	/* until the nodes start: who joins */

		run.so.layout = o->layout;
		run.so.interval_ms = o->interval_ms;
		run.so.nodes = o->nodes;
		run.so.peers_configured = o->nodes - 1;
		if (sodium_init() < 0) {
			err = -EIO;
			goto out;
		}
		for (k = 0; k < n; k++)
			sl_wire_keypair(run.public[k], run.secret[k]);
		for (k = 0; k < tr->nr; k++)
			if (tr->req[k].link == SL_TRACE_JOIN)
				late[tr->req[k].node] = true;
		for (k = 0; k < n && !err; k++) {
			run.maps[k] = &nodes[k]->maps;
			if (!late[k])
				err = start_node(&run, k);
		}
		memset(run.cut, 0, n * sizeof(*run.cut));
	}
	if (!err)
		err = sl_replay_run_nodes(nodes, n, &route, tr, window_ms, fn,
					  ctx, res, o->progress);
out:
	for (k = 0; run.sync && k < n; k++)
		sl_sync_free(run.sync[k]);
	free(run.sync);
	free(run.maps);
	free(run.cut);
	if (run.secret)
		sodium_memzero(run.secret, n * sizeof(*run.secret));
	free(run.secret);
	free(run.public);
	free(run.out);
	return err;
}
