// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/http/floor_hello.c ADDRESS PORT: the floor under any HTTP server
 * library: one thread, epoll, no library and no HTTP parser beyond finding
 * the end of each request's header block, answering every request with the
 * headers and body of an allowed check (the same as mhd_hello's and
 * h2o_hello's). It assumes what wrk sends (GET with no body, keep-alive);
 * it is a measuring stick for bench/bench_http.sh, not a server.
 * SIGTERM or SIGINT stops it.
 */
#define _GNU_SOURCE		/* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BODY "{ \"allowed\": true, \"rule\": \"api\", \"key\": \"client-00001\", " \
	"\"limit\": 4000000000, \"window_s\": 60, \"used\": 1, " \
	"\"remaining\": 3999999999, \"reset_s\": 60, \"retry_after_s\": 0, " \
	"\"decision\": \"kernel\" }"

static const char answer[] =
	"HTTP/1.1 200 OK\r\n"
	"Content-Type: application/json\r\n"
	"Cache-Control: no-store\r\n"
	"RateLimit-Policy: \"api\";q=4000000000;w=60\r\n"
	"RateLimit: \"api\";r=3999999999;t=60\r\n"
	"X-RateLimit-Limit: 4000000000\r\n"
	"X-RateLimit-Remaining: 3999999999\r\n"
	"X-RateLimit-Reset: 60\r\n"
	"SliceLimit-Decision: kernel\r\n"
	"Content-Length: 187\r\n"
	"\r\n" BODY;

_Static_assert(sizeof(BODY) - 1 == 187, "Content-Length must match the body");

#define MAX_CONNS 4096
#define MAX_PIPELINE 64		/* answers one read can ask for */

/* the bytes of a header-block end seen so far, per connection, since a
 * "\r\n\r\n" can straddle two reads */
static unsigned char matched[MAX_CONNS];

/* count_requests: the request ends in buf, carrying the partial match */
static int count_requests(int fd, const char *buf, ssize_t len)
{
	static const char end[] = "\r\n\r\n";
	unsigned char m = matched[fd];
	int n = 0;
	ssize_t i;

	for (i = 0; i < len; i++) {
		if (buf[i] == end[m])
			m++;
		else
			m = buf[i] == '\r';
		if (m == 4) {
			n++;
			m = 0;
		}
	}
	matched[fd] = m;
	return n;
}

static void serve(int ep, int fd)
{
	static char out[MAX_PIPELINE * sizeof(answer)];
	char buf[16384];
	ssize_t len;
	int n, i;

	for (;;) {
		len = read(fd, buf, sizeof(buf));
		if (len < 0 && errno == EAGAIN)
			return;
		if (len <= 0)
			break;
		n = count_requests(fd, buf, len);
		if (n > MAX_PIPELINE)
			break;
		for (i = 0; i < n; i++)
			memcpy(out + i * (sizeof(answer) - 1), answer, sizeof(answer) - 1);
		/* a short write would need buffering: a floor server drops
		 * the connection instead (wrk's loads never fill the socket) */
		if (n && write(fd, out, n * (sizeof(answer) - 1)) != (ssize_t)(n * (sizeof(answer) - 1)))
			break;
	}
	epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct epoll_event ev, evs[64];
	int lfd, ep, fd, n, i, one = 1;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
		fprintf(stderr, "usage: %s IPV4-ADDRESS PORT\n", argv[0]);
		return 2;
	}
	addr.sin_port = htons(atoi(argv[2]));
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (lfd < 0 || ep < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) || listen(lfd, SOMAXCONN)) {
		fprintf(stderr, "floor_hello: cannot listen on %s:%s\n", argv[1], argv[2]);
		return 1;
	}
	ev.events = EPOLLIN;
	ev.data.fd = lfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	for (;;) {
		n = epoll_wait(ep, evs, 64, -1);
		for (i = 0; i < n; i++) {
			if (evs[i].data.fd != lfd) {
				serve(ep, evs[i].data.fd);
				continue;
			}
			while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
				if (fd >= MAX_CONNS) {
					close(fd);
					continue;
				}
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				matched[fd] = 0;
				ev.events = EPOLLIN;
				ev.data.fd = fd;
				epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
			}
		}
	}
}
