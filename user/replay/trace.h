/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Request traces for `replay`: text, one request per line,
 * "T_MS CLIENT [CPU] [FIELD=VALUE...]", whitespace or comma separated, '#'
 * starts a comment; across nodes (replay --nodes)
 * "T_MS CLIENT [NODE [CPU]] [FIELD=VALUE...]", or "T_MS sync": a sync
 * round at T_MS (a trace with such lines gives the whole schedule), or
 * "T_MS cut NODE" / "T_MS heal NODE": from T_MS no message reaches NODE
 * or leaves it / they do again, or "T_MS join NODE": NODE runs no
 * service (it decides alone and sends nothing) until T_MS.
 * T_MS is model time in ms, non-decreasing, at most SL_TRACE_MAX_T_MS;
 * CLIENT an IPv4 or IPv6 address. The fields, anywhere after CLIENT, say
 * what rules match on besides the client: proto=tcp|udp|icmp (default
 * udp; tcp is a SYN, a new connection), port=N (the destination port,
 * default 9; not with icmp), dst=ADDR (default 192.0.2.1 or 2001:db8::1,
 * the client's family).
 */
#ifndef SL_REPLAY_TRACE_H
#define SL_REPLAY_TRACE_H

#include <stdbool.h>
#include <stdio.h>
#include "slicelimit.h"

/* The latest model time a trace may give: 10^13 ms, about 317 years. The
 * program's token bucket counts in ns (now_ms * 10^6, plus up to the
 * longest window), which stays below 2^64 up to 1.8 * 10^13 ms; a round
 * number under that leaves the rest of the arithmetic (u32 record times
 * compared by wrapping difference, signed ages) its margin too.
 */
#define SL_TRACE_MAX_T_MS	10000000000000ULL

/* the most tokens a line holds: T_MS CLIENT NODE CPU and the three fields */
#define SL_TRACE_MAX_TOKENS	7

/* Zeroed fields are the defaults: a UDP request to port 9 of the
 * documentation address of the client's family.
 */
struct sl_trace_req {
	__u64 t_ms;
	struct sl_addr client;
	struct sl_addr dst;	/* when has_dst */
	__u16 port;		/* destination port, when has_port */
	__u8 proto;		/* SL_PROTO_TCP, _UDP, _ICMP; 0: UDP */
	bool has_port;
	bool has_dst;
	int cpu;		/* -1: not given */
	int node;		/* -1: not given */
	bool sync;		/* not a request: a sync round */
	__u8 link;		/* not a request: SL_TRACE_CUT, _HEAL or
				 * _JOIN of `node`; 0: none */
	unsigned line;
};

enum sl_trace_link {
	SL_TRACE_CUT = 1,
	SL_TRACE_HEAL = 2,
	SL_TRACE_JOIN = 3,
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

#endif /* SL_REPLAY_TRACE_H */
