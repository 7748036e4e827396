/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Request traces for `replay`: text, one request per line,
 * "T_MS CLIENT [CPU]", whitespace or comma separated, '#' starts a comment;
 * across nodes (replay --nodes) "T_MS CLIENT [NODE [CPU]]", or "T_MS sync":
 * a sync round at T_MS (a trace with such lines gives the whole schedule).
 * T_MS is model time in ms, non-decreasing; CLIENT an IPv4 or IPv6 address.
 */
#ifndef SL_TRACE_H
#define SL_TRACE_H

#include <stdbool.h>
#include <stdio.h>
#include "slicelimit.h"

struct sl_trace_req {
	__u64 t_ms;
	struct sl_addr client;
	int cpu;		/* -1: not given */
	int node;		/* -1: not given */
	bool sync;		/* not a request: a sync round */
	unsigned line;
};

struct sl_trace {
	struct sl_trace_req *req;
	size_t nr;
};

/* Parse a whole trace. Errors name the line ("NAME:LINE: ..."), on stderr;
 * returns 0 or -EINVAL/-ENOMEM. CPUs must be below nr_cpus; with nr_nodes
 * > 0 the third column is a node, below nr_nodes.
 */
int sl_trace_read(const char *name, FILE *f, int nr_cpus, int nr_nodes,
		  struct sl_trace *t);
void sl_trace_free(struct sl_trace *t);

#endif /* SL_TRACE_H */
