/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Envoy's rate limit service: ShouldRateLimit over gRPC
 * (service/grpc_server.h), each descriptor of a call answered by the
 * first rule, in the rule file's priority order, whose envoy: block meets
 * it (rules/envoy.h), and charged through the same sl_check as the HTTP
 * API's /v1/check, so the same client state and, under central and
 * bounded, the same fleet rules.
 */
#ifndef SL_SERVICE_RLS_H
#define SL_SERVICE_RLS_H

#include <stdbool.h>
#include "rules/rules.h"
#include "service/check.h"
#include "service/config.h"
#include "service/metrics.h"

#define SL_RLS_METHOD	"/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"

struct sl_rls;

/* Serve on the listeners RC names, with the envoy: blocks of RS, counting
 * into STATS (NULL: its own, shown nowhere). 0, or -errno with
 * *socket_failed as sl_http_start's.
 */
int sl_rls_start(const struct sl_http_config *rc, struct sl_checker *checker,
		 struct sl_http_stats *stats, const struct sl_ruleset *rs,
		 struct sl_rls **out, bool *socket_failed);
/* The rules applied at a reload: their envoy: blocks from the next call
 * on. 0 or -ENOMEM (the running ones kept).
 */
int sl_rls_set_rules(struct sl_rls *r, const struct sl_ruleset *rs);
void sl_rls_stop(struct sl_rls *r);

/* One call's answer, without the transport: the serialized
 * RateLimitResponse of the serialized RateLimitRequest REQ, as
 * sl_grpc_handler says (for the fuzz target as for the server).
 */
int sl_rls_answer(struct sl_rls *r, const uint8_t *req, size_t len,
		  uint8_t **out, size_t *out_len, const char **msg);

#endif /* SL_SERVICE_RLS_H */
