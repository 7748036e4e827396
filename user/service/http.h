/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The service's HTTP API (its own HTTP/1.1 server, service/http_server.h):
 *   POST /v1/check            {"rule": NAME, "key": KEY}, or the same as
 *   GET  /v1/check?rule=NAME&key=KEY      query parameters: counts one
 *        request; 200 or 429 with RateLimit-Policy, RateLimit, Retry-After
 *        (on 429), X-RateLimit-Limit/-Remaining/-Reset and a JSON body.
 *        deny_status=403 (or 401) answers that instead of 429, for gateways
 *        such as nginx auth_request that only pass 401/403 through.
 *   GET  /v1/clients/KEY?rule=NAME        the same numbers, counting nothing
 *   GET  /metrics                         Prometheus text exposition
 *   GET  /healthz                         200 ok or 503 unavailable
 *   GET, PUT, DELETE /v1/lists[/block|allow/PREFIX]
 *                                         the block and allow lists
 *                                         (service/lists_api.h)
 *
 * On a Unix socket (the default listener: its mode and group say who may
 * connect) and, when configured, on TCP, where every request needs
 * "Authorization: Bearer TOKEN" but /healthz, which answers up or down
 * without the token and its reason only with it. Each listener has its own
 * connection cap, below the file limit; TCP also a cap per client address.
 */
#ifndef SL_SERVICE_HTTP_H
#define SL_SERVICE_HTTP_H

#include "service/check.h"
#include "service/config.h"
#include "service/metrics.h"

struct sl_http;

/* Listen on what HC names. 0, or -errno with *SOCKET_FAILED saying
 * which listener failed: the socket's -EADDRINUSE is an instance
 * answering on it, -EEXIST something not a socket at its path; TCP's
 * -EADDRINUSE an address in use (or not this host's).
 */
int sl_http_start(const struct sl_http_config *hc, struct sl_checker *checker,
		  struct sl_http **out, bool *socket_failed);
void sl_http_stop(struct sl_http *h);
/* Its counters, which /metrics shows: the rate limit service counts
 * its calls there too.
 */
struct sl_http_stats *sl_http_stats_of(struct sl_http *h);

#endif /* SL_SERVICE_HTTP_H */
