/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A unary gRPC server over HTTP/2 cleartext (h2c with prior knowledge, as
 * Envoy's and grpcio's insecure channels speak), on libnghttp2: one thread
 * with epoll, the listeners a service.config's keys name (a Unix socket,
 * and TCP with a bearer token in the call's metadata). It frames and
 * unframes messages; what a call means is its handler's.
 *
 * Bounds, so nothing a peer sends crashes it or grows memory without
 * bound: connections per listener and per TCP address, streams per
 * connection (SETTINGS_MAX_CONCURRENT_STREAMS), header bytes per call,
 * one message per call of at most SL_GRPC_MAX_MESSAGE bytes, bytes held
 * for all calls at once, and a deadline: a connection idle or holding an
 * unfinished call for the listener's timeout is closed.
 */
#ifndef SL_SERVICE_GRPC_SERVER_H
#define SL_SERVICE_GRPC_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include "service/config.h"

#define SL_GRPC_MAX_MESSAGE	(64 * 1024)

/* gRPC status codes the server and its handlers answer */
enum sl_grpc_status {
	SL_GRPC_OK = 0,
	SL_GRPC_INVALID_ARGUMENT = 3,
	SL_GRPC_RESOURCE_EXHAUSTED = 8,
	SL_GRPC_UNIMPLEMENTED = 12,
	SL_GRPC_INTERNAL = 13,
	SL_GRPC_UNAVAILABLE = 14,
	SL_GRPC_UNAUTHENTICATED = 16,
};

/* One call: the request message REQ (LEN bytes); the answer's message
 * into *out (malloc'd, *out_len bytes) with SL_GRPC_OK, or another
 * status with *msg (static text) saying why.
 */
typedef enum sl_grpc_status (*sl_grpc_handler)(void *arg, const uint8_t *req,
					       size_t len, uint8_t **out,
					       size_t *out_len,
					       const char **msg);

struct sl_grpc_server;

/* Serve PATH ("/package.Service/Method") on the listeners CFG names.
 * 0, or -errno with *socket_failed saying which listener failed (as
 * sl_http_start's).
 */
int sl_grpc_start(const struct sl_http_config *cfg, const char *path,
		  sl_grpc_handler handler, void *arg,
		  struct sl_grpc_server **out, bool *socket_failed);
void sl_grpc_stop(struct sl_grpc_server *g);

#endif /* SL_SERVICE_GRPC_SERVER_H */
