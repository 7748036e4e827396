// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gRPC server's listeners and its one epoll thread: connections
 * accepted within their bounds (per listener, per TCP address), read as
 * they become ready (grpc_conn.c), and closed at the deadline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include "util/clock.h"
#include "util/tcp_listen.h"
#include "service/api_socket.h"
#include "service/grpc_server_internal.h"

#define MAX_CONNECTIONS		1024	/* per listener */

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
	const struct sl_grpc_conn *c;
	unsigned n = 0;

	for (c = g->conns; c; c = c->next)
		if (c->l->tcp && same_host(&c->peer, peer) && ++n >= g->per_ip)
			return true;
	return false;
}

static void conn_accept(struct sl_grpc_server *g, struct sl_grpc_listener *l)
{
	struct sockaddr_storage peer;
	socklen_t plen;
	int fd;

	for (;;) {
		plen = sizeof(peer);
		fd = accept4(l->fd, (struct sockaddr *)&peer, &plen,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (l->nr_conns >= g->cap || (l->tcp && over_per_ip(g, &peer))) {
			close(fd);
			continue;
		}
		/* a connection that cannot start is closed there: the
		 * next one may
		 */
		sl_grpc_conn_open(g, l, fd, &peer);
	}
}

/* The deadline: a connection silent for the timeout, or holding a call
 * unfinished that long, is closed (a slow sender holds nothing long).
 */
static void sweep(struct sl_grpc_server *g)
{
	__u64 now = sl_now_mono_ns() / 1000000, limit = g->timeout_s * 1000ull;
	struct sl_grpc_conn *c, *next;
	struct sl_grpc_stream *st;
	bool late;

	for (c = g->conns; c; c = next) {
		next = c->next;
		late = now - c->last_ms > limit;
		for (st = c->streams; st && !late; st = st->next)
			late = !st->answered && now - st->start_ms > limit;
		if (late)
			sl_grpc_conn_close(c);
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
			sl_grpc_conn_read(p);
		}
		sweep(g);
	}
}

static int watch(struct sl_grpc_server *g, int fd, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ptr };

	return epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
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
	err = g->epfd < 0 || g->wake < 0 ? -errno : sl_grpc_callbacks_new(&g->cbs);
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
		g->tcp.fd = sl_tcp_listen(&cfg->addr);
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
		sl_grpc_conn_close(g->conns);
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
