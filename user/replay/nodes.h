/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `replay --nodes N`: a trace across N instances of the real program that
 * sync with the real engine under the model clock (user/replay/nodes.c).
 */
#ifndef SL_REPLAY_NODES_H
#define SL_REPLAY_NODES_H

#include <stdbool.h>
#include "replay/replay.h"

/* Besides enum sl_layout: every node reads and writes one shared state
 * (the study's central counter), simulated by one instance.
 */
#define SL_REPLAY_CENTRAL	SL_LAYOUT__COUNT

struct sl_replay_nodes_opts {
	unsigned nodes;
	unsigned interval_ms;
	unsigned layout;		/* enum sl_layout or SL_REPLAY_CENTRAL */
	bool assign_lcg;		/* nodes from the study's generator */
	__u32 seed;
	struct sl_progress *progress;	/* NULL: none */
};

struct sl_replay_nodes_stats {
	__u64 rounds;		/* sync rounds */
	__u64 messages;		/* datagrams delivered node to node; central:
				 * requests (each touches the shared state) */
	__u64 bytes;		/* of those datagrams */
	__u64 entries;		/* client slices sent */
};

/* `nodes` holds o->nodes instances with the same rules applied (one for
 * central).
 */
int sl_replay_nodes_run(struct sl_instance *const *nodes,
			const struct sl_replay_nodes_opts *o,
			const struct sl_trace *tr, __u64 window_ms,
			sl_replay_decision_fn fn, void *ctx,
			struct sl_replay_result *res,
			struct sl_replay_nodes_stats *st);

#endif /* SL_REPLAY_NODES_H */
