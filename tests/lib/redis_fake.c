// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A fake server, for replies no real one gives: it answers the scripts
 * and commands of the Redis backend as tests/lib/redis_fixture.h's
 * struct fake (shared with the test's process) says.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <hiredis/hiredis.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "util/log.h"
#include "instance/instance.h"
#include "instance/instance_maps.h"
#include "replay/request_packet.h"
#include "rules/rules.h"
#include "sync/engine.h"
#include "sync/redis.h"
#include "sync/wire.h"
#include "redis_fixture.h"

static void write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n <= 0)
			return;
		s += n;
		len -= n;
	}
}

static void write_str(int fd, const char *s)
{
	write_all(fd, s, strlen(s));
}

/* Redis Cluster's slot of a key, from the spec (not from the code under
 * test): CRC16-XMODEM of the hash tag, or of the key without one.
 */
unsigned ref_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close;
	unsigned crc = 0, i, b;

	if (open) {
		close = memchr(open + 1, '}', key + len - open - 1);
		if (close && close > open + 1) {
			len = close - open - 1;
			key = open + 1;
		}
	}
	for (i = 0; i < len; i++) {
		crc ^= (unsigned)(unsigned char)key[i] << 8;
		for (b = 0; b < 8; b++)
			crc = (crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1) &
			      0xffff;
	}
	return crc & 16383;
}

/* One write per reply, as a server does: several small ones would wait
 * on Nagle and delayed ACKs, 40 ms a reply.
 */
static void fake_round_ok(int fd, size_t keys)
{
	char buf[16 + 4 * 4096];
	size_t i, n;

	n = snprintf(buf, sizeof(buf), "*%zu\r\n", keys);
	for (i = 0; i < keys && n + 4 < sizeof(buf); i++, n += 4)
		memcpy(buf + n, "*0\r\n", 4);
	write_all(fd, buf, n);
}

/* Count a round script's keys, by the client number new_client() put in
 * the address's last two bytes (the 4 hex digits before the port).
 */
static void fake_count(struct fake *f, const redisReply *q, size_t keys)
{
	size_t i;

	f->round_calls++;
	f->keys_answered += keys;
	for (i = 0; i < keys && 3 + i < q->elements; i++) {
		const char *k = q->element[3 + i]->str, *c = strrchr(k, ':');
		char num[5];

		if (!c || c - k < 4)
			continue;
		memcpy(num, c - 4, 4);
		num[4] = 0;
		f->pushed[strtoul(num, NULL, 16)]++;
	}
}

/* The index script's answer: its time and FAKE_LEARN's members (none in
 * other modes), in one write.
 */
static void fake_index(int fd, struct fake *f)
{
	int i, m = f->mode == FAKE_LEARN ? f->learn_count : 0;
	size_t cap = 64 + (size_t)m * 96, n;
	char *buf = malloc(cap), id[64];

	if (!buf)
		return;
	/* the store's clock: later calls later */
	if (!f->index_now)
		f->index_now = 1000;
	n = snprintf(buf, cap, "*2\r\n:%llu\r\n*%d\r\n", f->index_now++,
		     2 * m);
	for (i = 0; i < m; i++) {
		char score[24];

		/* ::ffff:10.77.200+i/256.i%256, as client_init writes it */
		snprintf(id, sizeof(id), "%08x:00000000000000000000ffff0a4d%02x%02x:0",
			 f->api_hash, 200 + i / 256, i % 256);
		snprintf(score, sizeof(score), "%llu",
			 f->learn_score + (unsigned long long)i * f->learn_step);
		n += snprintf(buf + n, cap - n, "$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
			      strlen(id), id, strlen(score), score);
	}
	write_all(fd, buf, n);
	free(buf);
}

/* A reply written a byte every 40 ms: each read in time, the whole not. */
static void fake_trickle(int fd)
{
	char reply[128];
	int i, n;

	n = snprintf(reply, sizeof(reply), "$100\r\n%0100d\r\n", 0);
	for (i = 0; i < n; i++) {
		if (write(fd, reply + i, 1) != 1)
			return;
		usleep(40000);
	}
}

/* A bulk string of FLOOD_BYTES, written as fast as it is taken. */
#define FLOOD_BYTES	(150u << 20)
static void fake_flood(int fd)
{
	static char chunk[65536];
	size_t left = FLOOD_BYTES;
	char head[32];

	memset(chunk, 'x', sizeof(chunk));
	snprintf(head, sizeof(head), "$%u\r\n", FLOOD_BYTES);
	write_str(fd, head);
	while (left) {
		size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
		ssize_t w = write(fd, chunk, n);

		if (w <= 0)
			return;
		left -= w;
	}
	write_str(fd, "\r\n");
}

/* CLUSTER SLOTS: every slot served by the trap (FAKE_DIRECTOR) or by this
 * server (FAKE_MOVED); a standalone server's error otherwise.
 */
static void fake_slots(int fd, struct fake *f)
{
	char buf[128];

	if (f->mode != FAKE_DIRECTOR && f->mode != FAKE_MOVED) {
		write_str(fd, "-ERR This instance has cluster support disabled\r\n");
		return;
	}
	snprintf(buf, sizeof(buf),
		 "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n",
		 f->mode == FAKE_DIRECTOR ? f->trap_port : f->port);
	write_str(fd, buf);
}

static void fake_answer(int fd, struct fake *f, const redisReply *q)
{
	const char *name;
	bool index;
	size_t keys, i;

	if (q->type != REDIS_REPLY_ARRAY || !q->elements ||
	    q->element[0]->type != REDIS_REPLY_STRING) {
		write_str(fd, "-ERR what\r\n");
		return;
	}
	name = q->element[0]->str;
	if (!strcasecmp(name, "CLUSTER")) {
		fake_slots(fd, f);
		return;
	}
	if (!strcasecmp(name, "SCRIPT")) {
		write_str(fd, "$40\r\nffffffffffffffffffffffffffffffffffffffff\r\n");
		return;
	}
	if (strcasecmp(name, "EVALSHA") || q->elements < 4) {
		write_str(fd, "+OK\r\n");
		return;
	}
	keys = strtoul(q->element[2]->str, NULL, 10);
	index = keys && !strcmp(q->element[3]->str, "sl:{index}");
	/* a read of the index: where its cursor stands */
	if (index && q->elements >= 9 && strcmp(q->element[7]->str, "0")) {
		f->read_from = strtoull(q->element[5]->str, NULL, 10);
		f->read_offset = strtoull(q->element[6]->str, NULL, 10);
	}
	switch (f->mode) {
	case FAKE_HANG:
		return;
	case FAKE_MOVED: {
		char buf[64];

		snprintf(buf, sizeof(buf), "-MOVED %u 127.0.0.1:%d\r\n",
			 ref_slot(q->element[3]->str, q->element[3]->len),
			 f->trap_port);
		write_str(fd, buf);
		return;
	}
	case FAKE_TRICKLE:
		fake_trickle(fd);
		return;
	case FAKE_FLOOD:
		fake_flood(fd);
		return;
	case FAKE_RAW_INDEX:
		if (index)
			write_all(fd, f->raw, strlen(f->raw));
		else
			fake_round_ok(fd, keys);
		return;
	case FAKE_RAW_ROUND:
		if (index)
			fake_index(fd, f);
		else
			write_all(fd, f->raw, strlen(f->raw));
		return;
	case FAKE_CLUSTER:
		if (index) {
			fake_index(fd, f);
			return;
		}
		for (i = 1; i < keys && 3 + i < q->elements; i++)
			if (ref_slot(q->element[3 + i]->str,
				     q->element[3 + i]->len) !=
			    ref_slot(q->element[3]->str, q->element[3]->len)) {
				f->crossslot++;
				write_str(fd, "-CROSSSLOT Keys in request don't "
					  "hash to the same slot\r\n");
				return;
			}
		fake_count(f, q, keys);
		fake_round_ok(fd, keys);
		return;
	default:
		if (index) {
			fake_index(fd, f);
			return;
		}
		if (f->mode == FAKE_SLOW || f->mode == FAKE_LEARN)
			usleep(300000);
		fake_count(f, q, keys);
		fake_round_ok(fd, keys);
	}
}

/* The trap: counts who reaches it and their AUTHs, answers like the
 * fake.
 */
static void trap_count(struct fake *f, const redisReply *q)
{
	if (q->type == REDIS_REPLY_ARRAY && q->elements &&
	    q->element[0]->type == REDIS_REPLY_STRING &&
	    !strcasecmp(q->element[0]->str, "AUTH"))
		f->trap_auths++;
}

static void fake_serve(int lfd, struct fake *f, bool trap)
{
	char buf[65536];

	for (;;) {
		redisReader *rd;
		void *q;
		ssize_t n;
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		if (trap)
			f->trap_conns++;
		rd = redisReaderCreate();
		while ((n = read(fd, buf, sizeof(buf))) > 0) {
			redisReaderFeed(rd, buf, n);
			while (redisReaderGetReply(rd, &q) == REDIS_OK && q) {
				if (trap)
					trap_count(f, q);
				fake_answer(fd, f, q);
				freeReplyObject(q);
			}
		}
		redisReaderFree(rd);
		close(fd);
	}
}

/* A listener on 127.0.0.1:port (0: any free one), its port in *bound. */
static int fake_listen(int port, int *bound)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(port) };
	socklen_t len = sizeof(a);
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);

	if (lfd < 0)
		return -1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 8) ||
	    getsockname(lfd, (struct sockaddr *)&a, &len)) {
		close(lfd);
		return -1;
	}
	*bound = ntohs(a.sin_port);
	return lfd;
}

/* A process serving lfd (the fake, or the trap); its pid, or -1. */
static pid_t fake_fork(int lfd, bool trap)
{
	pid_t pid = fork();

	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* a client that gives up mid-reply is not the fake's end */
		signal(SIGPIPE, SIG_IGN);
		fake_serve(lfd, fx.fake, trap);
		_exit(0);
	}
	close(lfd);
	return pid;
}

int start_fake(void)
{
	int lfd, tfd, port, trap_port;

	lfd = fake_listen(fx.port, &port);
	if (lfd < 0)
		return -1;
	tfd = fake_listen(0, &trap_port);
	if (tfd < 0) {
		close(lfd);
		return -1;
	}
	memset(fx.fake, 0, sizeof(*fx.fake));
	fx.fake->api_hash = sl_rule_name_hash("api");
	fx.fake->port = port;
	fx.fake->trap_port = trap_port;
	fx.server = fake_fork(lfd, false);
	fx.trap = fake_fork(tfd, true);
	if (fx.server < 0 || fx.trap < 0) {
		fx.server = fx.server < 0 ? 0 : fx.server;
		fx.trap = fx.trap < 0 ? 0 : fx.trap;
		stop_server();
		return -1;
	}
	return 0;
}
