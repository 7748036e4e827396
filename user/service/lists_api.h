/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The block and allow lists over the HTTP API, for a caller the API
 * trusts (the Unix socket, or TCP with the bearer token: http.c admits
 * it first):
 *   GET    /v1/lists                          both lists, as 'lists -j'
 *   PUT    /v1/lists/block|allow/PREFIX       {"for": DUR, "reason": TEXT},
 *                                             both optional; an empty body
 *                                             is {}
 *   DELETE /v1/lists/block|allow/PREFIX       404 when it is not there
 * PREFIX: an address or ADDR/BITS, IPv4 or IPv6.
 */
#ifndef SL_SERVICE_LISTS_API_H
#define SL_SERVICE_LISTS_API_H

#include <stddef.h>
#include <json-c/json.h>
#include "instance/instance_maps.h"

/* Answer METHOD on PATH (what follows "/v1/lists", possibly ""), with
 * BODY (LEN bytes, NUL-terminated). Returns the HTTP status and sets
 * *out to the JSON answer: {"error": "..."} when it is not 200.
 */
unsigned sl_lists_api(const struct sl_maps *m, const char *method,
		      const char *path, const char *body, size_t len,
		      json_object **out);

#endif /* SL_SERVICE_LISTS_API_H */
