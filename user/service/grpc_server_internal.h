/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The gRPC server's parts, internal to it: a call (grpc_call.c: the
 * HTTP/2 session's callbacks, a call's headers and body, the answer
 * framed), a connection (grpc_conn.c: the session fed from the socket and
 * its frames gathered into one send), and the listeners and the epoll
 * thread (grpc_server.c).
 */
#ifndef SL_SERVICE_GRPC_SERVER_INTERNAL_H
#define SL_SERVICE_GRPC_SERVER_INTERNAL_H

#include <nghttp2/nghttp2.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <linux/types.h>
#include "service/bearer.h"
#include "service/grpc_server.h"

/* A gRPC message's prefix: a compressed flag and a big-endian length */
#define SL_GRPC_PREFIX		5
#define SL_GRPC_MAX_STREAMS	32	/* concurrent calls per connection */
#define SL_GRPC_MAX_HEADER_BYTES (16 * 1024)	/* of one call's header block */

struct sl_grpc_conn;

/* One call: an HTTP/2 stream of a connection */
struct sl_grpc_stream {
	struct sl_grpc_conn *conn;
	int32_t id;
	struct sl_grpc_stream *next, **pprev;	/* the connection's open calls */
	__u64 start_ms;
	bool post, path_ok, authorized, answered;
	enum sl_grpc_status refused;	/* OK: none yet */
	size_t header_bytes;
	uint8_t *in;			/* the request body as it arrives */
	size_t in_len, in_cap;
	uint8_t *out;			/* the answer: prefix and message */
	size_t out_len, out_off;
	char status[4];
};

struct sl_grpc_listener {
	int fd;
	bool tcp;
	unsigned nr_conns;
};

struct sl_grpc_conn {
	struct sl_grpc_server *g;
	struct sl_grpc_listener *l;
	int fd;
	struct sockaddr_storage peer;
	nghttp2_session *s;
	__u64 last_ms;			/* the last bytes received */
	struct sl_grpc_stream *streams;
	struct sl_grpc_conn *next, **pprev;
	/* the frames the session made, gathered for one send() */
	uint8_t *send_buf;
	size_t send_len, send_off, send_cap;
};

struct sl_grpc_server {
	struct sl_grpc_listener sock, tcp;
	char socket_path[108];
	char path[128];
	unsigned char token_hash[SL_BEARER_HASH_BYTES];
	unsigned timeout_s, per_ip, cap;
	sl_grpc_handler handler;
	void *arg;
	int epfd, wake;
	pthread_t thread;
	bool running;
	struct sl_grpc_conn *conns;
	size_t held;
	nghttp2_session_callbacks *cbs;
};

/* grpc_call.c */
/* The session's callbacks for a call's frames: 0 or -ENOMEM. */
int sl_grpc_callbacks_new(nghttp2_session_callbacks **cbs);
void sl_grpc_stream_free(struct sl_grpc_stream *st);

/* grpc_conn.c */
/* A connection on FD (accepted from L, from PEER), its session
 * started and watched in the server's epoll: 0 or -errno (FD closed).
 */
int sl_grpc_conn_open(struct sl_grpc_server *g, struct sl_grpc_listener *l,
		      int fd, const struct sockaddr_storage *peer);
/* What the socket has read into the session, and the answers sent. */
void sl_grpc_conn_read(struct sl_grpc_conn *c);
void sl_grpc_conn_close(struct sl_grpc_conn *c);

#endif /* SL_SERVICE_GRPC_SERVER_INTERNAL_H */
