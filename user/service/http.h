/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The service's HTTP API (libmicrohttpd):
 *   POST /v1/check            {"rule": NAME, "key": KEY}, or the same as
 *   GET  /v1/check?rule=NAME&key=KEY      query parameters: counts one
 *        request; 200 or 429 with RateLimit-Policy, RateLimit, Retry-After
 *        (on 429), X-RateLimit-Limit/-Remaining/-Reset and a JSON body.
 *        deny_status=403 (or 401) answers that instead of 429, for gateways
 *        such as nginx auth_request that only pass 401/403 through.
 *   GET  /v1/clients/KEY?rule=NAME        the same numbers, counting nothing
 *   GET  /metrics                         Prometheus text exposition
 */
#ifndef SL_HTTP_H
#define SL_HTTP_H

#include <sys/socket.h>
#include "service/check_local.h"

struct sl_http;

struct sl_http *sl_http_start(const struct sockaddr_storage *addr,
			      struct sl_checker *checker);
void sl_http_stop(struct sl_http *h);

#endif /* SL_HTTP_H */
