// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl-traffic: the traffic generator and counter of the namespace tests.
 *
 *   sl-traffic send --src ADDR --dst ADDR --port N --count N
 *                   [--proto udp|tcp] [--rate PPS] [--size B] [--wait MS]
 *                   [--timeout S] [--json]
 *   sl-traffic recv --bind ADDR --port N --seconds S [--proto udp|tcp]
 *                   [--ready FILE] [--json]
 *
 * `send` sends exactly N UDP datagrams, or makes N TCP connection attempts
 * (non-blocking connect, each socket closed once it connects or after
 * --wait ms), from a bound source address. `recv` counts datagrams, or
 * accepted connections, per source address until S seconds have passed or
 * SIGTERM/SIGINT arrives, and prints {"ADDR": count, ...}.
 *
 * Every loop is bounded twice: by a count and by a deadline, so a test that
 * goes wrong ends with a failure instead of hanging.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE	2
#define MAX_COUNT	1000000		/* packets or attempts per run */
#define MAX_PAYLOAD	1400		/* stays under the veth MTU: no fragments */
#define MAX_SOURCES	1024		/* distinct sources recv reports */
#define MAX_INFLIGHT	256		/* TCP attempts open at once (fds) */

static const char usage_text[] =
"Usage: sl-traffic send --src ADDR --dst ADDR --port N --count N\n"
"                       [--proto udp|tcp] [--rate PPS] [--size B]\n"
"                       [--wait MS] [--timeout S] [--json]\n"
"       sl-traffic recv --bind ADDR --port N --seconds S [--proto udp|tcp]\n"
"                       [--ready FILE] [--json]\n"
"\n"
"send  exactly N UDP datagrams of B payload bytes (default 32), or N TCP\n"
"      connection attempts, from ADDR (bound, any port) to DST:PORT, paced\n"
"      at PPS per second (default 1000, 0 = unpaced). A TCP attempt counts\n"
"      as connected if the handshake completes within --wait ms (default\n"
"      500; keep it under the 1 s SYN retransmission timeout so every\n"
"      attempt is one SYN). Gives up after --timeout seconds (default:\n"
"      twice the paced duration plus 5).\n"
"recv  count datagrams (udp) or accepted connections (tcp) per source\n"
"      address, for S seconds or until SIGTERM/SIGINT, then print them.\n"
"      --ready FILE is created once the socket is bound and listening.\n"
"\n"
"--json prints JSON: send {\"proto\", \"sent\", \"connected\", \"failed\",\n"
"\"seconds\"}; recv {\"ADDR\": count, ...}. Addresses of either family.\n"
"Exit status: 0 ok, 1 failure (not all sent), 2 usage error.\n";

struct opts {
	const char *src, *dst, *bind, *ready;
	int port;
	long count;
	bool tcp, json;
	double rate, seconds, timeout;
	long size, wait_ms;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
	       !stop)
		;
}

static int usage(const char *why)
{
	if (why)
		fprintf(stderr, "sl-traffic: %s\n", why);
	fputs(usage_text, why ? stderr : stdout);
	return why ? EXIT_USAGE : 0;
}

/* ADDR and port into a sockaddr of the address's own family. */
static int make_addr(const char *s, int port, struct sockaddr_storage *ss,
		     socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return 0;
	}
	return -1;
}

static const char *addr_str(const struct sockaddr_storage *ss, char *buf,
			    size_t len)
{
	const void *a = ss->ss_family == AF_INET ?
		(const void *)&((const struct sockaddr_in *)ss)->sin_addr :
		(const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;

	if (!inet_ntop(ss->ss_family, a, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

/* ---- send ---- */

static int open_bound(const struct opts *o, int type,
		      const struct sockaddr_storage *dst)
{
	struct sockaddr_storage src;
	socklen_t len;
	int fd;

	if (make_addr(o->src, 0, &src, &len) || src.ss_family != dst->ss_family) {
		fprintf(stderr, "sl-traffic: --src %s: not an address of --dst's family\n",
			o->src);
		return -1;
	}
	fd = socket(src.ss_family, type | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("sl-traffic: socket");
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&src, len)) {
		fprintf(stderr, "sl-traffic: bind %s: %s\n", o->src, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static double paced_at(const struct opts *o, double start, long i)
{
	return o->rate > 0 ? start + i / o->rate : 0;
}

static long send_udp(const struct opts *o, const struct sockaddr_storage *dst,
		     socklen_t dlen, double start, double deadline)
{
	char payload[MAX_PAYLOAD] = { 0 };
	long sent = 0;
	int fd;

	fd = open_bound(o, SOCK_DGRAM, dst);
	if (fd < 0)
		return -1;
	while (sent < o->count && !stop && now_s() < deadline) {
		ssize_t n;

		sleep_until(paced_at(o, start, sent));
		memcpy(payload, &sent, sizeof(sent));	/* a sequence number */
		n = sendto(fd, payload, o->size, 0, (struct sockaddr *)dst, dlen);
		if (n == o->size) {
			sent++;
		} else if (n < 0 && (errno == EAGAIN || errno == ENOBUFS ||
				     errno == EINTR)) {
			/* queue full: try the same datagram again shortly */
			sleep_until(now_s() + 0.001);
		} else {
			fprintf(stderr, "sl-traffic: sendto: %s\n",
				n < 0 ? strerror(errno) : "short write");
			break;
		}
	}
	close(fd);
	return sent;
}

struct attempt {
	int fd;
	double deadline;
};

/* Settle the open attempts: the ones that connected or failed, then the ones
 * past their deadline. Waits at most timeout_ms for a change.
 */
static void reap(struct attempt *a, int *n, int timeout_ms, long *connected,
		 long *failed)
{
	struct pollfd pfd[MAX_INFLIGHT];
	double now;
	int i, k;

	for (i = 0; i < *n; i++) {
		pfd[i].fd = a[i].fd;
		pfd[i].events = POLLOUT;
		pfd[i].revents = 0;
	}
	if (*n && poll(pfd, *n, timeout_ms) < 0 && errno != EINTR)
		perror("sl-traffic: poll");
	now = now_s();
	for (i = 0, k = 0; i < *n; i++) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (pfd[i].revents) {
			if (getsockopt(a[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) || err)
				(*failed)++;
			else
				(*connected)++;
			close(a[i].fd);
		} else if (now >= a[i].deadline) {
			/* SYN dropped (or unanswered): give the attempt up
			 * before the kernel retransmits it
			 */
			(*failed)++;
			close(a[i].fd);
		} else {
			a[k++] = a[i];
		}
	}
	*n = k;
}

static int earliest_ms(const struct attempt *a, int n)
{
	double t = 1e18, now = now_s();
	int i;

	for (i = 0; i < n; i++)
		if (a[i].deadline < t)
			t = a[i].deadline;
	return t <= now ? 0 : (int)((t - now) * 1000) + 1;
}

static long send_tcp(const struct opts *o, const struct sockaddr_storage *dst,
		     socklen_t dlen, double start, double deadline,
		     long *connected, long *failed)
{
	struct attempt a[MAX_INFLIGHT];
	long sent = 0;
	int n = 0;

	while (sent < o->count && !stop && now_s() < deadline) {
		int fd;

		sleep_until(paced_at(o, start, sent));
		while (n == MAX_INFLIGHT && now_s() < deadline)
			reap(a, &n, earliest_ms(a, n), connected, failed);
		if (n == MAX_INFLIGHT)
			break;
		fd = open_bound(o, SOCK_STREAM | SOCK_NONBLOCK, dst);
		if (fd < 0)
			break;
		sent++;
		if (!connect(fd, (struct sockaddr *)dst, dlen)) {
			(*connected)++;
			close(fd);
		} else if (errno == EINPROGRESS) {
			a[n].fd = fd;
			a[n++].deadline = now_s() + o->wait_ms / 1000.0;
		} else {
			(*failed)++;
			close(fd);
		}
		reap(a, &n, 0, connected, failed);
	}
	while (n && now_s() < deadline)
		reap(a, &n, earliest_ms(a, n), connected, failed);
	while (n) {		/* past the deadline: give the rest up */
		close(a[--n].fd);
		(*failed)++;
	}
	return sent;
}

static int do_send(const struct opts *o)
{
	struct sockaddr_storage dst;
	socklen_t dlen;
	long sent, connected = 0, failed = 0;
	double start, deadline, timeout = o->timeout;

	if (!o->src || !o->dst || o->port <= 0 || o->count < 0)
		return usage("send needs --src, --dst, --port and --count");
	if (make_addr(o->dst, o->port, &dst, &dlen))
		return usage("--dst: not an IPv4 or IPv6 address");
	if (timeout <= 0)
		timeout = 5 + 2 * (o->rate > 0 ? o->count / o->rate : 0) +
			  (o->tcp ? o->wait_ms / 1000.0 : 0);
	start = now_s();
	deadline = start + timeout;
	sent = o->tcp ? send_tcp(o, &dst, dlen, start, deadline, &connected, &failed) :
			send_udp(o, &dst, dlen, start, deadline);
	if (sent < 0)
		return 1;
	if (o->json) {
		printf("{\"proto\": \"%s\", \"sent\": %ld", o->tcp ? "tcp" : "udp", sent);
		if (o->tcp)
			printf(", \"connected\": %ld, \"failed\": %ld", connected, failed);
		printf(", \"seconds\": %.3f}\n", now_s() - start);
	} else {
		printf("%s: sent %ld of %ld", o->tcp ? "tcp" : "udp", sent, o->count);
		if (o->tcp)
			printf(", connected %ld, failed %ld", connected, failed);
		printf(" in %.3f s\n", now_s() - start);
	}
	if (sent != o->count) {
		fprintf(stderr, "sl-traffic: sent %ld of %ld before %s\n", sent,
			o->count, stop ? "a signal" : "the timeout");
		return 1;
	}
	return 0;
}

/* ---- recv ---- */

struct tally {
	char addr[INET6_ADDRSTRLEN];
	long count;
};

static struct tally sources[MAX_SOURCES];
static int nr_sources;
static long unlisted;		/* from sources beyond MAX_SOURCES */

static void count_source(const struct sockaddr_storage *ss)
{
	char buf[INET6_ADDRSTRLEN];
	int i;

	addr_str(ss, buf, sizeof(buf));
	for (i = 0; i < nr_sources; i++)
		if (!strcmp(sources[i].addr, buf)) {
			sources[i].count++;
			return;
		}
	if (nr_sources == MAX_SOURCES) {
		unlisted++;
		return;
	}
	snprintf(sources[nr_sources].addr, sizeof(sources[0].addr), "%s", buf);
	sources[nr_sources++].count = 1;
}

/* Take everything already queued, without waiting. */
static void drain(int fd, bool tcp)
{
	char buf[2048];
	int i;

	for (i = 0; i < MAX_COUNT; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);

		if (tcp) {
			int c = accept4(fd, (struct sockaddr *)&ss, &len,
					SOCK_CLOEXEC);

			if (c < 0)
				return;
			close(c);
		} else if (recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT,
				    (struct sockaddr *)&ss, &len) < 0) {
			return;
		}
		count_source(&ss);
	}
}

static int open_listener(const struct opts *o)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1, rcvbuf = 8 << 20;

	if (make_addr(o->bind, o->port, &ss, &len)) {
		fprintf(stderr, "sl-traffic: --bind %s: not an IPv4 or IPv6 address\n",
			o->bind);
		return -1;
	}
	fd = socket(ss.ss_family, (o->tcp ? SOCK_STREAM : SOCK_DGRAM) |
		    SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("sl-traffic: socket");
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	/* a full socket buffer would lose datagrams that slicelimit passed */
	if (!o->tcp && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
				  sizeof(rcvbuf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (bind(fd, (struct sockaddr *)&ss, len) ||
	    (o->tcp && listen(fd, 4096))) {
		fprintf(stderr, "sl-traffic: bind %s port %d: %s\n", o->bind,
			o->port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int do_recv(const struct opts *o)
{
	double deadline;
	int fd, i;

	if (!o->bind || o->port <= 0 || o->seconds <= 0)
		return usage("recv needs --bind, --port and --seconds");
	fd = open_listener(o);
	if (fd < 0)
		return 1;
	if (o->ready) {
		int r = open(o->ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (r < 0) {
			fprintf(stderr, "sl-traffic: --ready %s: %s\n", o->ready,
				strerror(errno));
			close(fd);
			return 1;
		}
		close(r);
	}
	deadline = now_s() + o->seconds;
	while (!stop) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left = deadline - now_s();

		if (left <= 0)
			break;
		if (poll(&pfd, 1, left > 0.1 ? 100 : (int)(left * 1000) + 1) > 0)
			drain(fd, o->tcp);
	}
	drain(fd, o->tcp);	/* what arrived with the signal */
	close(fd);

	if (o->json) {
		printf("{");
		for (i = 0; i < nr_sources; i++)
			printf("%s\"%s\": %ld", i ? ", " : "", sources[i].addr,
			       sources[i].count);
		if (unlisted)
			printf("%s\"other\": %ld", nr_sources ? ", " : "", unlisted);
		printf("}\n");
	} else {
		for (i = 0; i < nr_sources; i++)
			printf("%-40s %ld\n", sources[i].addr, sources[i].count);
		if (unlisted)
			printf("%-40s %ld\n", "other", unlisted);
	}
	return 0;
}

static int parse_num(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Option c (optarg its value) into o: -1, or the exit status of a usage
 * error or of --help.
 */
static int set_opt(struct opts *o, int c)
{
	double v;

	switch (c) {
	case 's': o->src = optarg; return -1;
	case 'd': o->dst = optarg; return -1;
	case 'b': o->bind = optarg; return -1;
	case 'R': o->ready = optarg; return -1;
	case 'j': o->json = true; return -1;
	case 'P':
		if (strcmp(optarg, "udp") && strcmp(optarg, "tcp"))
			return usage("--proto: udp or tcp");
		o->tcp = !strcmp(optarg, "tcp");
		return -1;
	case 'p':
		if (parse_num(optarg, 1, 65535, &v))
			return usage("--port: 1-65535");
		o->port = (int)v;
		return -1;
	case 'c':
		if (parse_num(optarg, 0, MAX_COUNT, &v) || v != (long)v)
			return usage("--count: a whole number up to 1000000");
		o->count = (long)v;
		return -1;
	case 'r':
		if (parse_num(optarg, 0, 1e7, &v))
			return usage("--rate: packets per second, 0 = unpaced");
		o->rate = v;
		return -1;
	case 'z':
		if (parse_num(optarg, 1, MAX_PAYLOAD, &v))
			return usage("--size: 1-1400 payload bytes");
		o->size = (long)v;
		return -1;
	case 'w':
		if (parse_num(optarg, 1, 60000, &v))
			return usage("--wait: 1-60000 ms");
		o->wait_ms = (long)v;
		return -1;
	case 't':
		if (parse_num(optarg, 0.001, 3600, &v))
			return usage("--timeout: seconds, up to 3600");
		o->timeout = v;
		return -1;
	case 'S':
		if (parse_num(optarg, 0.001, 3600, &v))
			return usage("--seconds: up to 3600");
		o->seconds = v;
		return -1;
	case 'h':
		return usage(NULL);
	default:
		return usage("unknown option");
	}
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "src", required_argument, NULL, 's' },
		{ "dst", required_argument, NULL, 'd' },
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'c' },
		{ "proto", required_argument, NULL, 'P' },
		{ "rate", required_argument, NULL, 'r' },
		{ "size", required_argument, NULL, 'z' },
		{ "wait", required_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 'S' },
		{ "ready", required_argument, NULL, 'R' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct opts o = { .port = -1, .count = -1, .rate = 1000, .size = 32,
			  .wait_ms = 500 };
	struct sigaction sa = { .sa_handler = on_signal };
	const char *cmd;
	int c;

	if (argc < 2)
		return usage("a command is needed: send or recv");
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help"))
		return usage(NULL);
	if (strcmp(cmd, "send") && strcmp(cmd, "recv"))
		return usage("the command is send or recv");
	optind = 2;
	while ((c = getopt_long(argc, argv, "jh", long_opts, NULL)) != -1) {
		int rc = set_opt(&o, c);

		if (rc >= 0)
			return rc;
	}
	if (optind != argc)
		return usage("unexpected argument");
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return cmd[0] == 's' ? do_send(&o) : do_recv(&o);
}
