/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One connection of the HTTP server (service/http_server.h): its input
 * buffer, the request being read, its answers waiting to be sent. Driven
 * by the server's event loop: http_conn_readable and http_conn_writable
 * say what the connection wants next.
 */
#ifndef SL_SERVICE_HTTP_CONN_H
#define SL_SERVICE_HTTP_CONN_H

#include <netinet/in.h>
#include <stdint.h>
#include "service/http_server.h"

/* a whole head and a whole body fit: a request is never waited on for
 * room
 */
#define SL_HTTP_IN_CAP	(SL_HTTP_HEAD_MAX + SL_HTTP_BODY_MAX + 1)

enum http_conn_want {
	HTTP_CONN_READ,		/* wait until readable */
	HTTP_CONN_WRITE,	/* answers wait: until writable */
	HTTP_CONN_CLOSE,	/* done: close it */
};

struct http_conn {
	int fd;
	struct http_conn *prev, *next;	/* the worker's connections */
	uint64_t last_ms;		/* of its last read or write */
	bool has_peer;			/* TCP: counted per address */
	struct in6_addr peer;
	bool closing;			/* its last answer said close */
	bool eof;			/* the client sent all it will */
	bool draining;			/* answered and shut: reading to EOF */
	size_t drained, drain_max;	/* 0: closed as soon as answered */
	long head_len;			/* > 0: a head read, its body awaited */
	struct sl_http_req req;
	struct sl_http_out out;
	size_t out_sent;
	size_t in_len;
	char in[SL_HTTP_IN_CAP + 1];
};

/* Read what is there and answer every whole request */
enum http_conn_want http_conn_readable(struct http_conn *c,
				       const struct sl_http_server_opts *o);
/* Send what waits, then go on with requests read meanwhile */
enum http_conn_want http_conn_writable(struct http_conn *c,
				       const struct sl_http_server_opts *o);

#endif /* SL_SERVICE_HTTP_CONN_H */
