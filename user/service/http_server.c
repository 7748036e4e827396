// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "service/http_conn.h"
#include "service/http_server.h"

#define HTTP_MAX_THREADS	64
#define HTTP_EVENTS		64
/* accepts in one turn: the others' connections wait no longer */
#define HTTP_ACCEPT_BATCH	32

struct worker {
	struct sl_http_server *s;
	pthread_t thread;
	bool started;
	int epfd;
	struct http_conn *conns;	/* all of this worker's */
};

/* One client address and its TCP connections (all workers') */
struct peer_count {
	struct in6_addr addr;
	unsigned n;
};

struct sl_http_server {
	struct sl_http_server_opts o;
	int listen_fd;
	int stop_fd;			/* an eventfd: readable once stopping */
	atomic_uint connections;
	pthread_mutex_t peers_lock;
	struct peer_count *peers;	/* max_connections of them */
	unsigned nr_peers;
	unsigned nr_workers;
	struct worker workers[HTTP_MAX_THREADS];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The peer's address as IPv6 (IPv4 mapped); false for a Unix peer */
static bool peer_address(const struct sockaddr_storage *ss,
			 struct in6_addr *a)
{
	if (ss->ss_family == AF_INET6) {
		*a = ((const struct sockaddr_in6 *)ss)->sin6_addr;
		return true;
	}
	if (ss->ss_family != AF_INET)
		return false;
	memset(a, 0, sizeof(*a));
	a->s6_addr[10] = a->s6_addr[11] = 0xff;
	memcpy(&a->s6_addr[12], &((const struct sockaddr_in *)ss)->sin_addr, 4);
	return true;
}

/* Count one more connection of A: false when A holds per_ip already */
static bool peer_take(struct sl_http_server *s, const struct in6_addr *a)
{
	unsigned i;
	bool ok = true;

	pthread_mutex_lock(&s->peers_lock);
	for (i = 0; i < s->nr_peers; i++)
		if (!memcmp(&s->peers[i].addr, a, sizeof(*a)))
			break;
	if (i == s->nr_peers) {
		s->peers[i].addr = *a;	/* fewer peers than connections */
		s->peers[i].n = 0;
		s->nr_peers++;
	}
	if (s->peers[i].n >= s->o.per_ip)
		ok = false;
	else
		s->peers[i].n++;
	if (!s->peers[i].n)
		s->peers[i] = s->peers[--s->nr_peers];
	pthread_mutex_unlock(&s->peers_lock);
	return ok;
}

static void peer_put(struct sl_http_server *s, const struct in6_addr *a)
{
	unsigned i;

	pthread_mutex_lock(&s->peers_lock);
	for (i = 0; i < s->nr_peers; i++)
		if (!memcmp(&s->peers[i].addr, a, sizeof(*a))) {
			if (!--s->peers[i].n)
				s->peers[i] = s->peers[--s->nr_peers];
			break;
		}
	pthread_mutex_unlock(&s->peers_lock);
}

static void conn_close(struct worker *w, struct http_conn *c)
{
	struct sl_http_server *s = w->s;

	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->has_peer)
		peer_put(s, &c->peer);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	sl_http_out_free(&c->out);
	free(c);
	atomic_fetch_sub(&s->connections, 1);
}

/* Admit FD if the caps let it in: false when it was closed */
static bool conn_admit(struct sl_http_server *s, int fd,
		       const struct sockaddr_storage *ss, struct in6_addr *a,
		       bool *has_peer)
{
	int one = 1;

	if (atomic_fetch_add(&s->connections, 1) >= s->o.max_connections) {
		atomic_fetch_sub(&s->connections, 1);
		close(fd);
		return false;
	}
	*has_peer = s->o.per_ip && peer_address(ss, a);
	if (*has_peer && !peer_take(s, a)) {
		atomic_fetch_sub(&s->connections, 1);
		close(fd);
		return false;
	}
	if (ss->ss_family != AF_UNIX)	/* each answer is one send() */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return true;
}

static void conn_open(struct worker *w, int fd,
		      const struct sockaddr_storage *ss)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct http_conn *c;
	struct in6_addr a;
	bool has_peer;

	if (!conn_admit(w->s, fd, ss, &a, &has_peer))
		return;
	c = malloc(sizeof(*c));
	if (c) {
		memset(c, 0, offsetof(struct http_conn, in));
		c->fd = fd;
		c->has_peer = has_peer;
		c->peer = a;
		c->last_ms = now_ms();
		c->next = w->conns;
		if (w->conns)
			w->conns->prev = c;
		w->conns = c;
		ev.data.ptr = c;
		if (!epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev))
			return;
		conn_close(w, c);
		return;
	}
	close(fd);
	if (has_peer)
		peer_put(w->s, &a);
	atomic_fetch_sub(&w->s->connections, 1);
}

static void accept_some(struct worker *w)
{
	struct sockaddr_storage ss;
	socklen_t len;
	unsigned i;
	int fd;

	for (i = 0; i < HTTP_ACCEPT_BATCH; i++) {
		len = sizeof(ss);
		memset(&ss, 0, sizeof(ss));
		fd = accept4(w->s->listen_fd, (struct sockaddr *)&ss, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;	/* EAGAIN: another worker took it */
		if (!len)
			ss.ss_family = AF_UNIX;
		conn_open(w, fd, &ss);
	}
}

/* Connections idle past the timeout, and closing ones that keep sending */
static void sweep(struct worker *w, uint64_t now)
{
	uint64_t idle = (uint64_t)w->s->o.timeout_s * 1000;
	struct http_conn *c, *next;

	for (c = w->conns; c; c = next) {
		next = c->next;
		if ((idle && now - c->last_ms >= idle) ||
		    (c->draining && now - c->last_ms >= 1000))
			conn_close(w, c);
	}
}

static void conn_event(struct worker *w, struct http_conn *c, uint32_t ev)
{
	const struct sl_http_server_opts *o = &w->s->o;
	struct epoll_event next = { .data.ptr = c };
	enum http_conn_want want;

	c->last_ms = now_ms();
	if (ev & EPOLLOUT)
		want = http_conn_writable(c, o);
	else if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
		want = http_conn_readable(c, o);
	else
		return;
	if (want == HTTP_CONN_CLOSE) {
		conn_close(w, c);
		return;
	}
	/* writing waits for room; reading waits until then */
	next.events = want == HTTP_CONN_WRITE ? EPOLLOUT : EPOLLIN;
	if ((ev & EPOLLOUT) != (next.events & EPOLLOUT) &&
	    epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &next))
		conn_close(w, c);
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	struct sl_http_server *s = w->s;
	struct epoll_event ev[HTTP_EVENTS];
	uint64_t last_sweep = now_ms(), now;
	bool accept_ready;
	int n, i;

	for (;;) {
		n = epoll_wait(w->epfd, ev, HTTP_EVENTS, 1000);
		accept_ready = false;
		for (i = 0; i < n; i++) {
			if (ev[i].data.ptr == &s->stop_fd)
				return NULL;
			if (ev[i].data.ptr == &s->listen_fd)
				accept_ready = true;
			else
				conn_event(w, ev[i].data.ptr, ev[i].events);
		}
		/* after the others: a client's closed connections leave the
		 * count per address before its new ones are counted
		 */
		if (accept_ready)
			accept_some(w);
		now = now_ms();
		if (now - last_sweep >= 1000) {
			sweep(w, now);
			last_sweep = now;
		}
	}
}

static int worker_init(struct sl_http_server *s, struct worker *w)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE };
	int err;

	w->s = s;
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->epfd < 0)
		return -errno;
	ev.data.ptr = &s->listen_fd;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, s->listen_fd, &ev))
		return -errno;
	ev.events = EPOLLIN;	/* every worker sees the stop */
	ev.data.ptr = &s->stop_fd;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, s->stop_fd, &ev))
		return -errno;
	err = -pthread_create(&w->thread, NULL, worker_run, w);
	w->started = !err;
	return err;
}

int sl_http_server_start(const struct sl_http_server_opts *o, int listen_fd,
			 struct sl_http_server **out)
{
	struct sl_http_server *s = calloc(1, sizeof(*s));
	unsigned i;
	int err = -ENOMEM;

	if (!s) {
		close(listen_fd);
		return -ENOMEM;
	}
	s->o = *o;
	if (s->o.max_body > SL_HTTP_BODY_MAX)
		s->o.max_body = SL_HTTP_BODY_MAX;
	s->listen_fd = listen_fd;
	s->nr_workers = o->threads < 1 ? 1 : o->threads > HTTP_MAX_THREADS ?
			HTTP_MAX_THREADS : o->threads;
	for (i = 0; i < s->nr_workers; i++)
		s->workers[i].epfd = -1;
	pthread_mutex_init(&s->peers_lock, NULL);
	s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->peers = calloc(o->max_connections + 1, sizeof(*s->peers));
	if (s->stop_fd < 0 || !s->peers ||
	    fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK))
		goto fail;
	for (i = 0; i < s->nr_workers; i++) {
		err = worker_init(s, &s->workers[i]);
		if (err)
			goto fail;
	}
	*out = s;
	return 0;
fail:
	sl_http_server_stop(s);
	return err;
}

void sl_http_server_stop(struct sl_http_server *s)
{
	uint64_t one = 1;
	unsigned i;

	if (!s)
		return;
	if (s->stop_fd >= 0 && write(s->stop_fd, &one, sizeof(one)) < 0)
		one = 0;	/* an eventfd's counter cannot be full here */
	for (i = 0; i < s->nr_workers; i++) {
		struct worker *w = &s->workers[i];

		if (w->started)
			pthread_join(w->thread, NULL);
		while (w->conns)
			conn_close(w, w->conns);
		if (w->epfd >= 0)
			close(w->epfd);
	}
	close(s->listen_fd);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	pthread_mutex_destroy(&s->peers_lock);
	free(s->peers);
	free(s);
}
