// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A gRPC connection: its HTTP/2 session fed with what the socket reads,
 * and the frames the session makes gathered into one send(): an answer's
 * HEADERS, DATA and trailing HEADERS leave as one segment, not three (a
 * syscall each, and on TCP small segments that wait on one another).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include "util/clock.h"
#include "util/grow.h"
#include "service/grpc_server_internal.h"

/* Frames gathered before a send: past this the rest waits for the
 * socket to take what is gathered, so a connection holds little more.
 */
#define SEND_GATHER_BYTES	(64 * 1024)

void sl_grpc_conn_close(struct sl_grpc_conn *c)
{
	/* the session frees its streams without their close callbacks:
	 * their memory is freed here
	 */
	nghttp2_session_del(c->s);
	while (c->streams)
		sl_grpc_stream_free(c->streams);
	close(c->fd);
	c->l->nr_conns--;
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	free(c->send_buf);
	free(c);
}

/* The frames the session has ready, appended to the send buffer: 1 when
 * it stopped at SEND_GATHER_BYTES with more to come, 0 when the session
 * has nothing more now, -errno.
 */
static int conn_gather(struct sl_grpc_conn *c)
{
	const uint8_t *data;
	ssize_t n;

	while (c->send_len < SEND_GATHER_BYTES) {
		n = nghttp2_session_mem_send(c->s, &data);
		if (n < 0)
			return -EPROTO;
		if (!n)
			return 0;
		if (sl_grow((void **)&c->send_buf, &c->send_cap,
			    c->send_len + n, 1))
			return -ENOMEM;
		memcpy(c->send_buf + c->send_len, data, n);
		c->send_len += n;
	}
	return 1;
}

/* The gathered bytes to the socket; what it does not take now stays for
 * EPOLLOUT. 0 or -errno.
 */
static int conn_send(struct sl_grpc_conn *c)
{
	ssize_t n;

	while (c->send_off < c->send_len) {
		n = send(c->fd, c->send_buf + c->send_off,
			 c->send_len - c->send_off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return -errno;
		c->send_off += n;
	}
	c->send_off = c->send_len = 0;
	return 0;
}

/* Send what the session has, and wait for what it wants next. false:
 * the connection is done (closed here).
 */
static bool conn_flush(struct sl_grpc_conn *c)
{
	struct epoll_event ev = { .data.ptr = c };
	bool pending;
	int more;

	do {
		more = conn_gather(c);
		if (more < 0 || conn_send(c)) {
			sl_grpc_conn_close(c);
			return false;
		}
	} while (more && !c->send_len);
	pending = c->send_len || nghttp2_session_want_write(c->s);
	if (!pending && !nghttp2_session_want_read(c->s)) {
		sl_grpc_conn_close(c);
		return false;
	}
	ev.events = EPOLLIN | (pending ? EPOLLOUT : 0);
	epoll_ctl(c->g->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	return true;
}

void sl_grpc_conn_read(struct sl_grpc_conn *c)
{
	uint8_t buf[16384];
	ssize_t n;

	for (;;) {
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			sl_grpc_conn_close(c);
			return;
		}
		c->last_ms = sl_now_mono_ns() / 1000000;
		/* a bad preface, a frame out of place: the session answers
		 * GOAWAY where it can, and the connection ends
		 */
		if (nghttp2_session_mem_recv(c->s, buf, n) < 0) {
			if (conn_gather(c) >= 0)
				conn_send(c);
			sl_grpc_conn_close(c);
			return;
		}
		/* answers go out as calls complete, not after the whole read */
		if (!conn_flush(c))
			return;
	}
	conn_flush(c);
}

int sl_grpc_conn_open(struct sl_grpc_server *g, struct sl_grpc_listener *l,
		      int fd, const struct sockaddr_storage *peer)
{
	nghttp2_settings_entry settings[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, SL_GRPC_MAX_STREAMS },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, SL_GRPC_MAX_HEADER_BYTES },
	};
	struct epoll_event ev = { .events = EPOLLIN };
	struct sl_grpc_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	/* answers leave whole, in one send: nothing is gained by Nagle's
	 * wait, and a client's delayed ACK would hold the next answer
	 */
	if (l->tcp)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 },
			   sizeof(int));
	c->g = g;
	c->l = l;
	c->fd = fd;
	c->peer = *peer;
	c->last_ms = sl_now_mono_ns() / 1000000;
	if (nghttp2_session_server_new(&c->s, g->cbs, c) ||
	    nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, settings, 2)) {
		if (c->s)
			nghttp2_session_del(c->s);
		free(c);
		close(fd);
		return -ENOMEM;
	}
	l->nr_conns++;
	c->next = g->conns;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &g->conns;
	g->conns = c;
	ev.data.ptr = c;
	if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		sl_grpc_conn_close(c);
		return -EIO;
	}
	conn_flush(c);
	return 0;
}
