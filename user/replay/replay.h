/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Replaying a trace through the real BPF program: each request becomes a
 * packet from its client (UDP to port 9 unless the trace line says
 * otherwise: user/replay/trace.h), run with BPF_PROG_TEST_RUN on its CPU at its
 * model time. What the kernel decided is what the replay reports.
 */
#ifndef SL_REPLAY_REPLAY_H
#define SL_REPLAY_REPLAY_H

#include <stdbool.h>
#include "state/client_view.h"
#include "instance/instance.h"
#include "replay/trace.h"

struct sl_replay_client {
	struct sl_addr addr;
	__u64 sent;
	__u64 accepted;
	__u64 rejected;
	__u64 max_in_window;	/* most accepts in any (t - window, t] */
};

struct sl_replay_result {
	struct sl_replay_client *client;	/* in order of first request */
	size_t nr;
	/* the rules that decided no request (matched no line, or rules
	 * before them took every line they match), in priority order
	 */
	struct sl_rule *unmatched;
	unsigned nr_unmatched;
};

/* Called after each request when given: the rule that decided (NULL if
 * none matched) and the client's standing right after the decision.
 */
typedef void (*sl_replay_decision_fn)(void *ctx, const struct sl_trace_req *r,
				      bool accepted, const struct sl_rule *rule,
				      const struct sl_client_view *v);

int sl_replay_run(struct sl_instance *in, const struct sl_trace *tr,
		  __u64 window_ms, sl_replay_decision_fn fn, void *ctx,
		  struct sl_replay_result *res);

/* Across nodes (user/replay/nodes.c): before each request, route->before
 * may run a sync round at the request's time and picks the node (an
 * index into `nodes`) whose program decides it. With --decisions, rules
 * are read from nodes[0]; every node runs the same rules.
 */
struct sl_replay_route {
	int (*before)(void *ctx, const struct sl_trace_req *r, size_t i,
		      unsigned *node);
	void *ctx;
};

struct sl_progress;
/* progress (NULL: none) counts the trace's lines as they run */
int sl_replay_run_nodes(struct sl_instance *const *nodes, unsigned nr_nodes,
			const struct sl_replay_route *route,
			const struct sl_trace *tr, __u64 window_ms,
			sl_replay_decision_fn fn, void *ctx,
			struct sl_replay_result *res,
			struct sl_progress *progress);
void sl_replay_result_free(struct sl_replay_result *res);

#endif /* SL_REPLAY_REPLAY_H */
