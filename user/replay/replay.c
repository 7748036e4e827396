// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "util/parse.h"
#include "replay/request_packet.h"
#include "util/progress.h"
#include "replay/client_index.h"
#include "replay/replay.h"
#include "rules/rules.h"
#include "sl_key.h"

/* Accept times of one client, to find its busiest window afterwards. */
struct accepts {
	__u64 *t;
	size_t nr, cap;
};

/* The index of the client at `a` in res, added (with its accept times)
 * if it is new; first-seen order is the order the output promises.
 */
static int client_index(struct sl_replay_result *res, struct accepts **acc,
			size_t *cap, struct sl_client_index *ix,
			const struct sl_addr *a)
{
	const size_t stride = sizeof(*res->client);
	size_t cap_acc = *cap;
	long i;

	_Static_assert(offsetof(struct sl_replay_client, addr) == 0,
		       "the index reads each client's address at its start");
	i = sl_client_index_find(ix, res->client, stride, a);
	if (i >= 0)
		return i;
	/* the two grow alike: one capacity for both */
	if (sl_grow((void **)acc, &cap_acc, res->nr + 1, sizeof(**acc)) ||
	    sl_grow((void **)&res->client, cap, res->nr + 1,
		    sizeof(*res->client)))
		return -ENOMEM;
	memset(&res->client[res->nr], 0, sizeof(res->client[0]));
	memset(&(*acc)[res->nr], 0, sizeof((*acc)[0]));
	res->client[res->nr].addr = *a;
	if (sl_client_index_add(ix, res->client, stride, res->nr))
		return -ENOMEM;
	return res->nr++;
}

static int accepts_add(struct accepts *a, __u64 t)
{
	if (sl_grow((void **)&a->t, &a->cap, a->nr + 1, sizeof(*a->t)))
		return -ENOMEM;
	a->t[a->nr++] = t;
	return 0;
}

/* Times are non-decreasing: two pointers over (t - window, t]. The test
 * is a difference, never t + window, so no time can overflow it, and
 * lo < hi keeps lo inside the array whatever the window.
 */
static __u64 max_in_window(const struct accepts *a, __u64 window_ms)
{
	size_t lo = 0, hi;
	__u64 best = 0;

	for (hi = 0; hi < a->nr; hi++) {
		while (lo < hi && a->t[hi] - a->t[lo] >= window_ms)
			lo++;
		if (hi - lo + 1 > best)
			best = hi - lo + 1;
	}
	return best;
}

/* All of a rule's counters on one node: what it decided, exempt or not. */
static __u64 rule_decided(const struct sl_maps *m, const struct sl_rule *rule)
{
	struct sl_rule_stats s;

	if (sl_percpu_sum_u64(m, m->rule_stats, rule->id, &s, sizeof(s)))
		return 0;
	return s.passed + s.dropped + s.shadow_dropped + s.exempt;
}

/* Which rule decided: the one whose counters moved. */
static const struct sl_rule *rule_that_moved(const struct sl_maps *m,
					     const struct sl_rule *rules,
					     unsigned nr, __u64 *before)
{
	const struct sl_rule *found = NULL;
	unsigned i;

	for (i = 0; i < nr; i++) {
		__u64 sum = rule_decided(m, &rules[i]);

		if (sum != before[i])
			found = &rules[i];
		before[i] = sum;
	}
	return found;
}

/* Each rule's counters summed over the nodes, into sum[]. */
static void rules_decided(struct sl_instance *const *nodes, unsigned nr_nodes,
			  const struct sl_rule *rules, unsigned nr_rules,
			  __u64 *sum)
{
	unsigned i, k;

	for (i = 0; i < nr_rules; i++)
		for (k = 0, sum[i] = 0; k < nr_nodes; k++)
			sum[i] += rule_decided(&nodes[k]->maps, &rules[i]);
}

/* The rules whose counters did not move on any node since `before`: they
 * decided no request, because no line matches their protocol, ports,
 * source and destination, or rules before them took every line that does.
 */
static int find_unmatched(struct sl_instance *const *nodes, unsigned nr_nodes,
			  const struct sl_rule *rules, unsigned nr_rules,
			  const __u64 *before, struct sl_replay_result *res)
{
	__u64 *after;
	unsigned i;

	if (!nr_rules)
		return 0;
	after = calloc(nr_rules, sizeof(*after));
	res->unmatched = calloc(nr_rules, sizeof(*res->unmatched));
	if (!after || !res->unmatched) {
		free(after);
		return -ENOMEM;
	}
	rules_decided(nodes, nr_nodes, rules, nr_rules, after);
	for (i = 0; i < nr_rules; i++)
		if (after[i] == before[i])
			res->unmatched[res->nr_unmatched++] = rules[i];
	free(after);
	return 0;
}

/* The request as a packet: its protocol, destination port and address,
 * each defaulting to what a trace without fields always replayed.
 */
static size_t request_packet(uint8_t *pkt, const struct sl_trace_req *r,
			     const struct sl_addr *dst4,
			     const struct sl_addr *dst6)
{
	const struct sl_addr *dst = r->has_dst ? &r->dst :
				    sl_addr_is_ipv4(&r->client) ? dst4 : dst6;

	return sl_packet_build(pkt, r->proto ? r->proto : SL_PROTO_UDP,
			       &r->client, dst, 40000,
			       r->has_port ? r->port : 9, 18);
}

/* The destination port a rule keyed per port sees (ICMP: none). */
static __be16 request_dport(const struct sl_trace_req *r)
{
	if (r->proto == SL_PROTO_ICMP)
		return 0;
	return htons(r->has_port ? r->port : 9);
}

int sl_replay_run(struct sl_instance *in, const struct sl_trace *tr,
		  __u64 window_ms, sl_replay_decision_fn fn, void *ctx,
		  struct sl_replay_result *res)
{
	return sl_replay_run_nodes(&in, 1, NULL, tr, window_ms, fn, ctx, res,
				   NULL);
}

/* What a run keeps from one request to the next. */
struct run {
	struct sl_instance *const *nodes;
	unsigned nr_nodes;
	sl_replay_decision_fn fn;
	void *ctx;
	struct sl_replay_result *res;
	struct accepts *acc;	/* one per client of res */
	size_t cap_clients;	/* of res->client and acc alike */
	struct sl_client_index index;	/* res->client by address */
	struct sl_rule *rules;
	unsigned nr_rules;
	__u64 *before;		/* each rule's counters at the start */
	__u64 *moved;		/* with fn: each node's rule counters at its
				 * last request, nr_rules + 1 per node */
	struct sl_addr dst4, dst6;
};

/* Node k's rule counters as its last request left them. */
static __u64 *run_moved(const struct run *run, unsigned k)
{
	return run->moved + (size_t)k * (run->nr_rules + 1);
}

/* The running rules, and their counters before the first request. */
static int run_start(struct run *run)
{
	struct sl_instance *in = run->nodes[0];
	struct sl_config cfg;
	int err;

	sl_parse_addr("192.0.2.1", &run->dst4);
	sl_parse_addr("2001:db8::1", &run->dst6);
	err = sl_rules_read_live(&in->maps, &run->rules, &run->nr_rules, &cfg);
	if (err)
		return err;
	run->before = calloc(run->nr_rules + 1, sizeof(*run->before));
	if (!run->before)
		return -ENOMEM;
	rules_decided(run->nodes, run->nr_nodes, run->rules, run->nr_rules,
		      run->before);
	if (run->fn) {
		unsigned k;

		/* per node: a node's counters move only with its own
		 * requests, and are compared with its own last ones
		 */
		run->moved = calloc((size_t)run->nr_nodes * (run->nr_rules + 1),
				    sizeof(*run->moved));
		if (!run->moved)
			return -ENOMEM;
		for (k = 0; k < run->nr_nodes; k++)
			rule_that_moved(&run->nodes[k]->maps, run->rules,
					run->nr_rules, run_moved(run, k));
	}
	return 0;
}

/* Request r through node `in`: counted for its client, and with fn its
 * decision told as that node sees it.
 */
static int run_request(struct run *run, unsigned node,
		       const struct sl_trace_req *r)
{
	struct sl_instance *in = run->nodes[node];
	uint8_t pkt[SL_PACKET_MAX];
	struct sl_replay_client *c;
	__u32 verdict;
	size_t len;
	int idx, err;

	idx = client_index(run->res, &run->acc, &run->cap_clients, &run->index,
			   &r->client);
	if (idx < 0)
		return idx;
	c = &run->res->client[idx];
	len = request_packet(pkt, r, &run->dst4, &run->dst6);
	sl_instance_set_time(in, r->t_ms);
	err = sl_instance_run(in, false, r->cpu >= 0 ? r->cpu : 0, pkt,
			      len, 1, &verdict, NULL);
	if (err)
		return err;
	c->sent++;
	if (verdict == XDP_PASS) {
		c->accepted++;
		err = accepts_add(&run->acc[idx], r->t_ms);
	} else {
		c->rejected++;
	}
	if (run->fn) {
		const struct sl_rule *rule;
		struct sl_client_view v = { 0 };
		struct sl_client_key key;

		rule = rule_that_moved(&in->maps, run->rules, run->nr_rules,
				       run_moved(run, node));
		if (rule) {
			sl_client_key_make(&key, rule, &r->client,
					   request_dport(r));
			err = sl_client_view_read(&in->maps, rule, &key,
						  r->t_ms, &v);
		}
		run->fn(run->ctx, r, verdict == XDP_PASS, rule, &v);
	}
	return err;
}

/* After the trace: each client's busiest window, the rules that decided
 * nothing (both only when the run went through), and the accept times
 * freed.
 */
static int run_end(struct run *run, __u64 window_ms, int err)
{
	struct sl_replay_result *res = run->res;
	size_t i;

	for (i = 0; i < res->nr; i++) {
		if (!err)
			res->client[i].max_in_window =
				max_in_window(&run->acc[i], window_ms);
		free(run->acc[i].t);
	}
	if (!err)
		err = find_unmatched(run->nodes, run->nr_nodes, run->rules,
				     run->nr_rules, run->before, res);
	return err;
}

int sl_replay_run_nodes(struct sl_instance *const *nodes, unsigned nr_nodes,
			const struct sl_replay_route *route,
			const struct sl_trace *tr, __u64 window_ms,
			sl_replay_decision_fn fn, void *ctx,
			struct sl_replay_result *res,
			struct sl_progress *progress)
{
	struct run run = { .nodes = nodes, .nr_nodes = nr_nodes, .fn = fn,
			   .ctx = ctx, .res = res };
	size_t i;
	int err = 0;

	memset(res, 0, sizeof(*res));
	err = run_start(&run);
	if (err)
		goto out;
	for (i = 0; i < tr->nr && !err; i++) {
		const struct sl_trace_req *r = &tr->req[i];
		unsigned node = 0;

		sl_progress_update(progress, i);
		if (route) {
			err = route->before(route->ctx, r, i, &node);
			if (err)
				break;
			if (node >= nr_nodes)
				node = 0;
		}
		if (r->sync || r->link)
			continue;	/* not a request: route->before ran it */
		err = run_request(&run, node, r);
	}
	err = run_end(&run, window_ms, err);
out:
	free(run.acc);
	sl_client_index_free(&run.index);
	free(run.before);
	free(run.moved);
	free(run.rules);
	if (err)
		sl_replay_result_free(res);
	return err;
}

void sl_replay_result_free(struct sl_replay_result *res)
{
	free(res->client);
	free(res->unmatched);
	res->client = NULL;
	res->unmatched = NULL;
	res->nr = 0;
	res->nr_unmatched = 0;
}
