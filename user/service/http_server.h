/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An HTTP/1.1 server on epoll for the service's API: one listening socket
 * (a Unix socket or TCP, IPv4 or IPv6), a thread per CPU as nginx has a
 * worker per CPU, each with its own epoll and the connections it
 * accepted; keep-alive and pipelined requests, bodies with a
 * Content-Length up to a cap. What it decides itself, with no handler:
 * a malformed head 400, a head over SL_HTTP_HEAD_MAX 431, a version other
 * than 1.0/1.1 505, a body sent chunked (or any Transfer-Encoding) 411,
 * a declared body over the cap 413; each of them closes the connection.
 * Connections over the cap, and TCP connections over the cap per client
 * address, are closed as they are accepted; a connection idle for the
 * timeout is closed.
 */
#ifndef SL_SERVICE_HTTP_SERVER_H
#define SL_SERVICE_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include "service/http_parse.h"
#include "service/http_reply.h"

struct sl_http_exchange {
	const struct sl_http_req *req;
	const char *body;		/* NUL-terminated; NULL for no body */
	size_t body_len;
	struct sl_http_out *out;	/* the answer goes here */
};

struct sl_http_server_ops {
	/* After the head, before any body: true when it answered (the
	 * token is wrong, the body is not one to read). Optional.
	 */
	bool (*admit)(void *ctx, struct sl_http_exchange *x);
	/* A whole request: answers it */
	void (*handle)(void *ctx, struct sl_http_exchange *x);
	/* An answer the server decided (STATUS, a sentence saying why) */
	void (*refuse)(void *ctx, struct sl_http_exchange *x, unsigned status,
		       const char *why);
};

struct sl_http_server_opts {
	const struct sl_http_server_ops *ops;
	void *ctx;
	unsigned threads;
	unsigned max_connections;
	unsigned per_ip;		/* TCP, per client address; 0: none */
	unsigned timeout_s;		/* idle; 0: none */
	size_t max_body;		/* at most SL_HTTP_BODY_MAX */
};

#define SL_HTTP_BODY_MAX	4096

struct sl_http_server;

/* Serve LISTEN_FD (listening already; the server owns it from here, also
 * on failure). 0 or -errno.
 */
int sl_http_server_start(const struct sl_http_server_opts *o, int listen_fd,
			 struct sl_http_server **out);
void sl_http_server_stop(struct sl_http_server *s);

#endif /* SL_SERVICE_HTTP_SERVER_H */
