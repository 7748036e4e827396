// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include "util/clock.h"
#include "service/api_socket.h"
#include "service/bearer.h"
#include "service/grpc_server.h"

/* A gRPC message's prefix: a compressed flag and a big-endian length */
#define GRPC_PREFIX		5
#define MAX_STREAMS		32	/* concurrent calls per connection */
#define MAX_HEADER_BYTES	(16 * 1024)	/* of one call's header block */
#define MAX_CONNECTIONS		1024	/* per listener */
/* bytes of unfinished calls held at once, over every connection: a flood
 * of half-sent calls is refused before it takes the service's memory
 */
#define MAX_HELD_BYTES		(32u << 20)

struct conn;

struct stream {
	struct conn *conn;
	int32_t id;
	struct stream *next, **pprev;	/* the connection's open calls */
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

struct listener {
	int fd;
	bool tcp;
	unsigned nr_conns;
};

struct conn {
	struct sl_grpc_server *g;
	struct listener *l;
	int fd;
	struct sockaddr_storage peer;
	nghttp2_session *s;
	__u64 last_ms;			/* the last bytes received */
	struct stream *streams;
	struct conn *next, **pprev;
};

struct sl_grpc_server {
	struct listener sock, tcp;
	char socket_path[108];
	char path[128];
	unsigned char token_hash[SL_BEARER_HASH_BYTES];
	unsigned timeout_s, per_ip, cap;
	sl_grpc_handler handler;
	void *arg;
	int epfd, wake;
	pthread_t thread;
	bool running;
	struct conn *conns;
	size_t held;
	nghttp2_session_callbacks *cbs;
};

static void stream_unhold(struct stream *st)
{
	st->conn->g->held -= st->in_cap;
	free(st->in);
	st->in = NULL;
	st->in_len = st->in_cap = 0;
}

static void stream_free(struct stream *st)
{
	stream_unhold(st);
	free(st->out);
	*st->pprev = st->next;
	if (st->next)
		st->next->pprev = st->pprev;
	free(st);
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f,
			    void *user)
{
	struct conn *c = user;
	struct stream *st;

	if (f->hd.type != NGHTTP2_HEADERS ||
	    f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	st->conn = c;
	st->id = f->hd.stream_id;
	st->start_ms = sl_now_mono_ns() / 1000000;
	st->next = c->streams;
	if (st->next)
		st->next->pprev = &st->next;
	st->pprev = &c->streams;
	c->streams = st;
	nghttp2_session_set_stream_user_data(s, st->id, st);
	return 0;
}

static bool header_is(const uint8_t *name, size_t len, const char *want)
{
	return len == strlen(want) && !memcmp(name, want, len);
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f,
		     const uint8_t *name, size_t namelen, const uint8_t *value,
		     size_t valuelen, uint8_t flags, void *user)
{
	struct conn *c = user;
	struct stream *st = nghttp2_session_get_stream_user_data(s,
							f->hd.stream_id);

	if (!st || f->hd.type != NGHTTP2_HEADERS)
		return 0;
	/* HPACK's own accounting: each field counts 32 besides its bytes */
	st->header_bytes += namelen + valuelen + 32;
	if (st->header_bytes > MAX_HEADER_BYTES) {
		st->refused = SL_GRPC_RESOURCE_EXHAUSTED;
		return 0;
	}
	if (header_is(name, namelen, ":method"))
		st->post = header_is(value, valuelen, "POST");
	else if (header_is(name, namelen, ":path"))
		st->path_ok = header_is(value, valuelen, c->g->path);
	else if (header_is(name, namelen, "authorization") && c->l->tcp)
		st->authorized = sl_bearer_ok((const char *)value, valuelen,
					      c->g->token_hash);
	return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id,
			 const uint8_t *data, size_t len, void *user)
{
	struct conn *c = user;
	struct stream *st = nghttp2_session_get_stream_user_data(s, id);
	size_t want, cap;
	uint8_t *p;

	if (!st || st->refused)
		return 0;
	want = st->in_len + len;
	if (want > GRPC_PREFIX + SL_GRPC_MAX_MESSAGE) {
		st->refused = SL_GRPC_RESOURCE_EXHAUSTED;
		stream_unhold(st);
		return 0;
	}
	if (want > st->in_cap) {
		cap = st->in_cap ? st->in_cap : 512;
		while (cap < want)
			cap *= 2;
		if (cap > GRPC_PREFIX + SL_GRPC_MAX_MESSAGE)
			cap = GRPC_PREFIX + SL_GRPC_MAX_MESSAGE;
		if (c->g->held - st->in_cap + cap > MAX_HELD_BYTES ||
		    !(p = realloc(st->in, cap))) {
			st->refused = SL_GRPC_RESOURCE_EXHAUSTED;
			stream_unhold(st);
			return 0;
		}
		c->g->held += cap - st->in_cap;
		st->in = p;
		st->in_cap = cap;
	}
	memcpy(st->in + st->in_len, data, len);
	st->in_len = want;
	return 0;
}

static ssize_t read_answer(nghttp2_session *s, int32_t id, uint8_t *buf,
			   size_t len, uint32_t *flags,
			   nghttp2_data_source *src, void *user)
{
	struct stream *st = src->ptr;
	size_t n = st->out_len - st->out_off;
	nghttp2_nv trailer[] = {
		{ (uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1,
		  NGHTTP2_NV_FLAG_NONE },
	};

	if (n > len)
		n = len;
	memcpy(buf, st->out + st->out_off, n);
	st->out_off += n;
	if (st->out_off == st->out_len) {
		*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (nghttp2_submit_trailer(s, id, trailer, 1))
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return n;
}

#define NV(n, v) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), \
		   NGHTTP2_NV_FLAG_NONE }

/* A call that ends without a message: gRPC's Trailers-Only answer, the
 * status in the one header block. MSG is plain ASCII with no '%', so it
 * needs no percent-encoding.
 */
static int answer_status(struct stream *st, enum sl_grpc_status code,
			 const char *msg)
{
	snprintf(st->status, sizeof(st->status), "%u", code);
	nghttp2_nv hdrs[] = {
		NV(":status", "200"),
		NV("content-type", "application/grpc"),
		NV("grpc-status", st->status),
		NV("grpc-message", msg),
	};

	return nghttp2_submit_response(st->conn->s, st->id, hdrs, 4, NULL);
}

/* The body as one gRPC message: 0 with *msg and *len, or the status */
static enum sl_grpc_status unframe(const struct stream *st,
				   const uint8_t **msg, size_t *len,
				   const char **why)
{
	uint32_t n;

	if (st->in_len < GRPC_PREFIX) {
		*why = "a call carries one message: 5-byte prefix and the message";
		return SL_GRPC_INTERNAL;
	}
	if (st->in[0] == 1) {
		*why = "compressed messages are not supported (grpc-encoding identity)";
		return SL_GRPC_UNIMPLEMENTED;
	}
	if (st->in[0] != 0) {
		*why = "the message's flag is neither 0 nor 1";
		return SL_GRPC_INTERNAL;
	}
	n = (uint32_t)st->in[1] << 24 | (uint32_t)st->in[2] << 16 |
	    (uint32_t)st->in[3] << 8 | st->in[4];
	if (n > SL_GRPC_MAX_MESSAGE) {
		*why = "message larger than 64 KiB";
		return SL_GRPC_RESOURCE_EXHAUSTED;
	}
	if (st->in_len != GRPC_PREFIX + (size_t)n) {
		*why = st->in_len < GRPC_PREFIX + (size_t)n ?
		       "the message is cut short of its length" :
		       "a unary call carries one message";
		return SL_GRPC_INTERNAL;
	}
	*msg = st->in + GRPC_PREFIX;
	*len = n;
	return SL_GRPC_OK;
}

/* The whole request is in: check who asks and what, run the handler */
static int answer(struct stream *st)
{
	struct sl_grpc_server *g = st->conn->g;
	const char *why = "";
	const uint8_t *msg;
	enum sl_grpc_status code;
	uint8_t *out = NULL;
	size_t len, out_len = 0;
	nghttp2_data_provider dp = { .source.ptr = st, .read_callback = read_answer };
	nghttp2_nv hdrs[] = {
		NV(":status", "200"),
		NV("content-type", "application/grpc"),
	};

	if (st->answered)
		return 0;
	st->answered = true;
	if (st->conn->l->tcp && !st->authorized)
		return answer_status(st, SL_GRPC_UNAUTHENTICATED,
				     "this listener needs 'authorization: Bearer TOKEN' metadata (rls.token_file)");
	if (st->refused == SL_GRPC_RESOURCE_EXHAUSTED)
		return answer_status(st, st->refused,
				     "call larger than this server takes (headers 16 KiB, message 64 KiB)");
	if (!st->post || !st->path_ok)
		return answer_status(st, SL_GRPC_UNIMPLEMENTED,
				     "unknown method: this server has only POST /envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit");
	code = unframe(st, &msg, &len, &why);
	if (code)
		return answer_status(st, code, why);
	code = g->handler(g->arg, msg, len, &out, &out_len, &why);
	stream_unhold(st);
	if (code) {
		free(out);
		return answer_status(st, code, why);
	}
	st->out = malloc(GRPC_PREFIX + out_len);
	if (!st->out) {
		free(out);
		return answer_status(st, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
	}
	st->out[0] = 0;
	st->out[1] = out_len >> 24;
	st->out[2] = out_len >> 16;
	st->out[3] = out_len >> 8;
	st->out[4] = out_len;
	if (out_len)
		memcpy(st->out + GRPC_PREFIX, out, out_len);
	free(out);
	st->out_len = GRPC_PREFIX + out_len;
	return nghttp2_submit_response(st->conn->s, st->id, hdrs, 2, &dp);
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f,
			 void *user)
{
	struct stream *st;

	if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
	    !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
	if (!st)
		return 0;
	return answer(st) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t error,
			   void *user)
{
	struct stream *st = nghttp2_session_get_stream_user_data(s, id);

	if (st) {
		nghttp2_session_set_stream_user_data(s, id, NULL);
		stream_free(st);
	}
	return 0;
}

static ssize_t send_cb(nghttp2_session *s, const uint8_t *data, size_t len,
		       int flags, void *user)
{
	struct conn *c = user;
	ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);

	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return NGHTTP2_ERR_WOULDBLOCK;
	return NGHTTP2_ERR_CALLBACK_FAILURE;
}

static void conn_close(struct conn *c)
{
	/* the session frees its streams without their close callbacks:
	 * their memory is freed here
	 */
	nghttp2_session_del(c->s);
	while (c->streams)
		stream_free(c->streams);
	close(c->fd);
	c->l->nr_conns--;
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	free(c);
}

/* Send what the session has, and wait for what it wants next. false:
 * the connection is done (closed here).
 */
static bool conn_flush(struct conn *c)
{
	struct epoll_event ev = { .data.ptr = c };

	if (nghttp2_session_send(c->s)) {
		conn_close(c);
		return false;
	}
	if (!nghttp2_session_want_read(c->s) &&
	    !nghttp2_session_want_write(c->s)) {
		conn_close(c);
		return false;
	}
	ev.events = EPOLLIN | (nghttp2_session_want_write(c->s) ? EPOLLOUT : 0);
	epoll_ctl(c->g->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	return true;
}

static void conn_read(struct conn *c)
{
	uint8_t buf[16384];
	ssize_t n;

	for (;;) {
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		c->last_ms = sl_now_mono_ns() / 1000000;
		/* a bad preface, a frame out of place: the session answers
		 * GOAWAY where it can, and the connection ends
		 */
		if (nghttp2_session_mem_recv(c->s, buf, n) < 0) {
			nghttp2_session_send(c->s);
			conn_close(c);
			return;
		}
		/* answers go out as calls complete, not after the whole read */
		if (!conn_flush(c))
			return;
	}
	conn_flush(c);
}

static bool same_host(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

static bool over_per_ip(const struct sl_grpc_server *g,
			const struct sockaddr_storage *peer)
{
	const struct conn *c;
	unsigned n = 0;

	for (c = g->conns; c; c = c->next)
		if (c->l->tcp && same_host(&c->peer, peer) && ++n >= g->per_ip)
			return true;
	return false;
}

static void conn_accept(struct sl_grpc_server *g, struct listener *l)
{
	nghttp2_settings_entry settings[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_BYTES },
	};
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	struct epoll_event ev = { .events = EPOLLIN };
	struct conn *c;
	int fd;

	for (;;) {
		plen = sizeof(peer);
		fd = accept4(l->fd, (struct sockaddr *)&peer, &plen,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (l->nr_conns >= g->cap || (l->tcp && over_per_ip(g, &peer)) ||
		    !(c = calloc(1, sizeof(*c)))) {
			close(fd);
			continue;
		}
		/* an answer is several small frames, each its own send: with
		 * Nagle's wait on the client's delayed ACK, every call after
		 * the first on a connection took tens of milliseconds
		 */
		if (l->tcp)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 },
				   sizeof(int));
		c->g = g;
		c->l = l;
		c->fd = fd;
		c->peer = peer;
		c->last_ms = sl_now_mono_ns() / 1000000;
		if (nghttp2_session_server_new(&c->s, g->cbs, c) ||
		    nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, settings,
					    2)) {
			if (c->s)
				nghttp2_session_del(c->s);
			free(c);
			close(fd);
			continue;
		}
		l->nr_conns++;
		c->next = g->conns;
		if (c->next)
			c->next->pprev = &c->next;
		c->pprev = &g->conns;
		g->conns = c;
		ev.data.ptr = c;
		if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			conn_close(c);
			continue;
		}
		conn_flush(c);
	}
}

/* The deadline: a connection silent for the timeout, or holding a call
 * unfinished that long, is closed (a slow sender holds nothing long).
 */
static void sweep(struct sl_grpc_server *g)
{
	__u64 now = sl_now_mono_ns() / 1000000, limit = g->timeout_s * 1000ull;
	struct conn *c, *next;
	struct stream *st;
	bool late;

	for (c = g->conns; c; c = next) {
		next = c->next;
		late = now - c->last_ms > limit;
		for (st = c->streams; st && !late; st = st->next)
			late = !st->answered && now - st->start_ms > limit;
		if (late)
			conn_close(c);
	}
}

static void *serve(void *arg)
{
	struct sl_grpc_server *g = arg;
	struct epoll_event evs[64];
	int i, n;

	for (;;) {
		n = epoll_wait(g->epfd, evs, 64, 1000);
		for (i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &g->wake)
				return NULL;
			if (p == &g->sock || p == &g->tcp) {
				conn_accept(g, p);
				continue;
			}
			conn_read(p);
		}
		sweep(g);
	}
}

static int tcp_listen(const struct sockaddr_storage *addr)
{
	socklen_t len = addr->ss_family == AF_INET6 ?
			sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	int fd, one = 1, err;

	fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)addr, len) || listen(fd, 128)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int watch(struct sl_grpc_server *g, int fd, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ptr };

	return epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int setup_callbacks(struct sl_grpc_server *g)
{
	if (nghttp2_session_callbacks_new(&g->cbs))
		return -ENOMEM;
	nghttp2_session_callbacks_set_send_callback(g->cbs, send_cb);
	nghttp2_session_callbacks_set_on_begin_headers_callback(g->cbs,
							on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(g->cbs, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(g->cbs,
							on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_recv_callback(g->cbs,
							     on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(g->cbs,
							on_stream_close);
	return 0;
}

int sl_grpc_start(const struct sl_http_config *cfg, const char *path,
		  sl_grpc_handler handler, void *arg,
		  struct sl_grpc_server **out, bool *socket_failed)
{
	struct sl_grpc_server *g = calloc(1, sizeof(*g));
	int err;

	*socket_failed = false;
	if (!g)
		return -ENOMEM;
	g->sock.fd = g->tcp.fd = g->wake = -1;
	g->tcp.tcp = true;
	g->handler = handler;
	g->arg = arg;
	g->timeout_s = cfg->timeout_s ? cfg->timeout_s : 10;
	g->per_ip = cfg->per_ip ? cfg->per_ip : 32;
	g->cap = MAX_CONNECTIONS;
	snprintf(g->path, sizeof(g->path), "%s", path);
	g->epfd = epoll_create1(EPOLL_CLOEXEC);
	g->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	err = g->epfd < 0 || g->wake < 0 ? -errno : setup_callbacks(g);
	if (!err)
		err = watch(g, g->wake, &g->wake);
	if (err)
		goto fail;
	if (cfg->socket_enabled) {
		g->sock.fd = sl_api_socket_listen(cfg->socket, cfg->socket_mode,
						  cfg->socket_group_set,
						  cfg->socket_gid);
		if (g->sock.fd < 0) {
			err = g->sock.fd;
			*socket_failed = true;
			goto fail;
		}
		/* from here the file is this instance's to remove */
		snprintf(g->socket_path, sizeof(g->socket_path), "%s",
			 cfg->socket);
		err = watch(g, g->sock.fd, &g->sock);
		if (err)
			goto fail;
	}
	if (cfg->tcp_enabled) {
		sl_bearer_hash(cfg->token, g->token_hash);
		g->tcp.fd = tcp_listen(&cfg->addr);
		err = g->tcp.fd < 0 ? g->tcp.fd : watch(g, g->tcp.fd, &g->tcp);
		if (err)
			goto fail;
	}
	err = -pthread_create(&g->thread, NULL, serve, g);
	if (err)
		goto fail;
	g->running = true;
	*out = g;
	return 0;
fail:
	sl_grpc_stop(g);
	return err;
}

void sl_grpc_stop(struct sl_grpc_server *g)
{
	if (!g)
		return;
	if (g->running) {
		eventfd_write(g->wake, 1);
		pthread_join(g->thread, NULL);
	}
	while (g->conns)
		conn_close(g->conns);
	if (g->sock.fd >= 0)
		close(g->sock.fd);
	if (g->tcp.fd >= 0)
		close(g->tcp.fd);
	if (g->socket_path[0])
		sl_api_socket_remove(g->socket_path);
	if (g->wake >= 0)
		close(g->wake);
	if (g->epfd >= 0)
		close(g->epfd);
	nghttp2_session_callbacks_del(g->cbs);
	free(g);
}
