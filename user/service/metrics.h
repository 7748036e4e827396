/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* /metrics: the maps' counters and the HTTP API's own, as Prometheus text. */
#ifndef SL_SERVICE_METRICS_H
#define SL_SERVICE_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include "service/check.h"
#include "instance/instance_maps.h"
#include "slicelimit.h"

#define SL_LATENCY_BUCKETS 10
#define SL_RLS_DESCRIPTOR__COUNT 3

/* Counted by the HTTP threads (atomics: they run concurrently). */
struct sl_http_stats {
	atomic_ullong by_status[6];	/* 200, 401/403, 429, other 4xx, 5xx, other */
	atomic_ullong latency[SL_LATENCY_BUCKETS + 1];	/* checks, +Inf last */
	atomic_ullong latency_sum_ns;
	atomic_ullong checks;
	atomic_ullong by_rule[SL_MAX_RULES][2];	/* rule id: denied, allowed */
	atomic_ullong by_decision[SL_DECIDED__COUNT];	/* counted checks */
	/* the central store, as of the last render (central 0: none) */
	atomic_uint central;
	atomic_ullong central_up, central_errors, central_reconnects;
	/* the rate limit service: calls by gRPC status (0..16), and its
	 * descriptors by answer
	 */
	atomic_bool rls;
	atomic_ullong rls_calls[17];
	atomic_ullong rls_descriptors[SL_RLS_DESCRIPTOR__COUNT];
};

enum sl_rls_descriptor_result {
	SL_RLS_DESCRIPTOR_OK = 0,
	SL_RLS_DESCRIPTOR_OVER_LIMIT,
	SL_RLS_DESCRIPTOR_UNMATCHED,	/* no rule answers it: OK, uncounted */
};

void sl_http_stats_count(struct sl_http_stats *s, unsigned status);
void sl_http_stats_latency(struct sl_http_stats *s, long long ns);
void sl_http_stats_check(struct sl_http_stats *s, unsigned rule_id,
			 bool allowed);
void sl_http_stats_decision(struct sl_http_stats *s,
			    enum sl_check_decision d);
/* Before a render: the central store's counters. */
void sl_http_stats_central(struct sl_http_stats *s,
			   const struct sl_central_stats *cs);

void sl_http_stats_rls_call(struct sl_http_stats *s, unsigned grpc_status);
void sl_http_stats_rls_descriptor(struct sl_http_stats *s,
				  enum sl_rls_descriptor_result r);

/* The whole exposition (malloc'd), or NULL. */
char *sl_metrics_render(const struct sl_maps *m, struct sl_http_stats *s);

#endif /* SL_SERVICE_METRICS_H */
