// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Redis sync backend (user/sync/redis.c) between two nodes: two
 * private model-clock instances of the real BPF object, A (node 1) and B
 * (node 2), with the same rules, each with the real sync engine, and a
 * redis-server of the test's own on a free port (started and killed by
 * pid). What a node makes of its peers is decided by the real program:
 * a test sends packets and counts XDP_PASS.
 *
 *  - units A accepted are counted by B (learned from the index, read as
 *    totals: reading them twice does not count them twice), B's by A, and
 *    a node's own units never come back to it as a peer's;
 *  - a store that hangs or dies: the round returns within the command
 *    timeout, the status shows it, reconnects back off, both nodes go on
 *    deciding with what they have, and what A accepted meanwhile reaches B
 *    after the store is back;
 *  - so are sliding-log's, sliding-counter's and token-bucket's;
 *  - a flushed script cache is loaded again without an error;
 *  - a client's hash keeps the newest 16 slices, and expires from the
 *    window once two neighbouring slices told the slice length;
 *  - a fake server answering garbage of every shape: each is one backend
 *    error and a dropped connection, never a crash (run it under
 *    SANITIZE=1 too); one answering CROSSSLOT to mixed slots gets one
 *    script call per Cluster slot (CRC16 computed here, independently);
 *    one too slow for the interval gets whole batches, and the rest in
 *    the next round: pushes exactly once, index reads from where the
 *    last round stopped;
 *  - a Redis Cluster of three masters and three replicas (started and
 *    killed by pid): each client's hash is found on the master of its
 *    slot, the nodes count each other; the master the engines were
 *    pointed at killed mid-flood: backend errors, local decisions, the
 *    replica promoted, both engines back through the other nodes and
 *    converged (the figures printed, for docs/REDIS.md).
 *
 * Model time is what the kernel and the sync engine see; the store's
 * expiries run on its own clock, which the tests only read.
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
#include "core/clock.h"
#include "core/log.h"
#include "core/instance.h"
#include "instance_fixture.h"
#include "core/instance_maps.h"
#include "core/request_packet.h"
#include "rules/rules.h"
#include "sync/engine.h"
#include "sync/redis.h"
#include "sync/wire.h"

#define INTERVAL_MS	1000
#define WINDOW_MS	60000
#define SLICE_MS	4000	/* sl_peer_slice_ms(60 s): ceil(60000 / 15) */
/* A TAI-like time, so slice numbers are as large as in service */
#define T0		1700000000000ULL
#define ULL(x)		((unsigned long long)(x))

/* Two rules: `api` (10 per minute, per address) for 10.77/16, and `bulk`
 * (1000 per minute, per address and port) for 10.78/16, in slices of the
 * peer view's length (60 s / 15), so each slice is one field of a hash.
 */
static const char rules_yaml[] =
	"rules:\n"
	"  - name: api\n"
	"    algorithm: sliding\n"
	"    limit: 10\n"
	"    window: 60s\n"
	"    source: 10.77.0.0/16\n"
	"  - name: bulk\n"
	"    algorithm: sliding-plain\n"
	"    limit: 1000\n"
	"    window: 60s\n"
	"    slices: 15\n"
	"    source: 10.78.0.0/16\n"
	"    key:\n"
	"      per_port: true\n"
	"  - {name: log, algorithm: sliding-log, limit: 10, window: 60s,\n"
	"     source: 10.79.0.0/16}\n"
	"  - {name: counter, algorithm: sliding-counter, slices: 12, limit: 10,\n"
	"     window: 60s, source: 10.80.0.0/16}\n"
	"  - {name: bucket, algorithm: token-bucket, limit: 10,\n"
	"     bucket_capacity: 10, refill_per_s: 0.01, window: 60s,\n"
	"     source: 10.81.0.0/16}\n";

#define NET_API		77
#define NET_BULK	78
#define NET_LOG		79
#define NET_COUNTER	80
#define NET_BUCKET	81
/* the bucket's peer slices: 20 refills of 10 x 100 s over 15 slices */
#define BUCKET_SLICE_MS	1333334
#define DPORT		9

/* ---- a fake server, for replies no real one gives ---------------------- */

enum fake_mode {
	FAKE_OK,		/* well-formed, empty answers */
	FAKE_RAW_INDEX,		/* `raw` to the index script, the rest OK */
	FAKE_RAW_ROUND,		/* `raw` to the round script, the rest OK */
	FAKE_HANG,		/* never answers a script */
	FAKE_CLUSTER,		/* CROSSSLOT for keys of more than one slot */
	FAKE_SLOW,		/* OK, 300 ms after each round script */
	FAKE_LEARN,		/* the index lists `learn_count` api clients,
				 * scored learn_score + i * learn_step; round
				 * scripts are slow */
};

/* Shared with the fake's process (MAP_SHARED): set by the test before a
 * round, counted by the fake.
 */
struct fake {
	volatile int mode;
	char raw[256];
	volatile int round_calls;	/* round scripts answered */
	volatile int keys_answered;	/* client keys in those */
	volatile int crossslot;		/* refusals */
	/* the index's time, and FAKE_LEARN's members */
	volatile unsigned long long index_now, learn_score, learn_step;
	volatile int learn_count;
	uint32_t api_hash;
	/* the cursor of the last index read: from, offset */
	volatile unsigned long long read_from, read_offset;
	/* round scripts that carried each client (by its number) */
	volatile unsigned char pushed[65536];
};

struct node {
	struct sl_instance in;
	bool open;
	struct sl_sync *sync;
	struct sl_redis *redis;
};

struct fixture {
	struct node a, b;
	char dir[64];
	int port;
	pid_t server;		/* redis-server or the fake; 0: none */
	bool have_redis;
	char url[64];
	__u64 now;		/* model ms */
	unsigned test_no;
	unsigned next_client;
	struct fake *fake;
};

static struct fixture fx;

/* A Redis Cluster of the test's own: three masters, a replica each. */
#define CLUSTER_N	6
static struct {
	int port[CLUSTER_N];
	pid_t pid[CLUSTER_N];
	bool up;
} cl;

/* ---- servers ------------------------------------------------------------ */

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* One command on a connection of its own to the server on `port`. */
static redisReply *vcommand_at(int port, const char *fmt, va_list ap)
{
	struct timeval tv = { .tv_sec = 1 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
	redisReply *x = NULL;

	if (c && !c->err) {
		redisSetTimeout(c, tv);
		x = redisvCommand(c, fmt, ap);
	}
	redisFree(c);
	return x;
}

static redisReply *command(const char *fmt, ...)
{
	redisReply *x;
	va_list ap;

	va_start(ap, fmt);
	x = vcommand_at(fx.port, fmt, ap);
	va_end(ap);
	return x;
}

static redisReply *command_at(int port, const char *fmt, ...)
{
	redisReply *x;
	va_list ap;

	va_start(ap, fmt);
	x = vcommand_at(port, fmt, ap);
	va_end(ap);
	return x;
}

/* PONG, or NOAUTH from a server that wants a login first: it is up. */
static bool redis_answers(void)
{
	redisReply *x = command("PING");
	bool ok = x && ((x->type == REDIS_REPLY_STATUS &&
			 !strcmp(x->str, "PONG")) ||
			(x->type == REDIS_REPLY_ERROR &&
			 !strncmp(x->str, "NOAUTH", 6)));

	freeReplyObject(x);
	return ok;
}

static void stop_server(void)
{
	if (fx.server > 0) {
		kill(fx.server, SIGKILL);
		waitpid(fx.server, NULL, 0);
	}
	fx.server = 0;
}

/* Extra redis-server arguments for the next start_redis (NULL-ended). */
static const char *const *server_extra;

/* redis-server on fx.port, in the test's own directory, nothing saved. */
static int start_redis(void)
{
	const char *argv[32] = {
		"redis-server", "--port", NULL, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--dir", fx.dir,
	};
	size_t argc = 13, i;
	char port[16];
	uint64_t until;
	pid_t pid;
	int fd;

	snprintf(port, sizeof(port), "%d", fx.port);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		argv[2] = port;
		for (i = 0; server_extra && server_extra[i] && argc < 31; i++)
			argv[argc++] = server_extra[i];
		argv[argc] = NULL;
		execvp("redis-server", (char *const *)argv);
		_exit(127);
	}
	fx.server = pid;
	for (until = sl_now_mono_ms() + 5000; sl_now_mono_ms() < until; usleep(10000))
		if (redis_answers())
			return 0;
	stop_server();
	return -1;
}

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
static unsigned ref_slot(const char *key, size_t len)
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

static void fake_serve(int lfd, struct fake *f)
{
	char buf[65536];

	for (;;) {
		redisReader *rd;
		void *q;
		ssize_t n;
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		rd = redisReaderCreate();
		while ((n = read(fd, buf, sizeof(buf))) > 0) {
			redisReaderFeed(rd, buf, n);
			while (redisReaderGetReply(rd, &q) == REDIS_OK && q) {
				fake_answer(fd, f, q);
				freeReplyObject(q);
			}
		}
		redisReaderFree(rd);
		close(fd);
	}
}

static int start_fake(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(fx.port) };
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);
	pid_t pid;

	if (lfd < 0)
		return -1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 8)) {
		close(lfd);
		return -1;
	}
	memset(fx.fake, 0, sizeof(*fx.fake));
	fx.fake->api_hash = sl_rule_name_hash("api");
	pid = fork();
	if (pid < 0) {
		close(lfd);
		return -1;
	}
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fake_serve(lfd, fx.fake);
		_exit(0);
	}
	close(lfd);
	fx.server = pid;
	return 0;
}

/* ---- nodes ------------------------------------------------------------- */

static struct sl_sync_status *status(struct node *n)
{
	return sl_sync_status(n->sync);
}

static struct sl_addr new_client(unsigned net)
{
	unsigned k = ++fx.next_client;
	struct sl_addr a;

	memset(&a, 0, sizeof(a));
	a.byte[10] = a.byte[11] = 0xff;
	a.byte[12] = 10;
	a.byte[13] = net;
	a.byte[14] = k >> 8;
	a.byte[15] = k;
	return a;
}

/* `count` packets from `who` to node n at the model time: how many the
 * program passed.
 */
static unsigned send_n(struct node *n, const struct sl_addr *who,
		       unsigned count)
{
	struct sl_addr dst;
	uint8_t pkt[SL_PACKET_MAX];
	unsigned i, passed = 0;
	__u32 ret;
	size_t len;

	memset(&dst, 0, sizeof(dst));
	dst.byte[10] = dst.byte[11] = 0xff;
	dst.byte[12] = 192;
	dst.byte[13] = 0;
	dst.byte[14] = 2;
	dst.byte[15] = 1;
	len = sl_packet_udp(pkt, who, &dst, 40000, DPORT, 18);
	sl_instance_set_time(&n->in, fx.now);
	for (i = 0; i < count; i++) {
		assert_int_equal(sl_instance_run(&n->in, false, 0, pkt, len, 1,
						 &ret, NULL), 0);
		passed += ret == XDP_PASS;
	}
	return passed;
}

/* A round at the model time; returns how long it took, in real ms. */
static uint64_t round_on(struct node *n)
{
	uint64_t t = sl_now_mono_ms();

	sl_redis_round(n->redis, n->sync, fx.now);
	return sl_now_mono_ms() - t;
}

static void step(void)
{
	fx.now += 10;
}

static int node_start(struct node *n, unsigned id)
{
	struct sl_sync_opts o = {
		.layout = SL_LAYOUT_DELAYED_SYNC,
		.node = id,
		.interval_ms = INTERVAL_MS,
		.nodes = 2,
		.peers_configured = 1,
		.incarnation = 1,
	};

	n->sync = sl_sync_new(&n->in.maps, &o);
	if (!n->sync)
		return -1;
	n->redis = sl_redis_new(fx.url, id, INTERVAL_MS);
	return n->redis ? 0 : -1;
}

static void node_stop(struct node *n)
{
	sl_redis_free(n->redis);
	sl_sync_free(n->sync);
	n->redis = NULL;
	n->sync = NULL;
}

/* ---- fixture ------------------------------------------------------------ */

static int open_node(struct node *n)
{
	if (sl_test_open_instance(&n->in, 4096, T0))
		return -1;
	n->open = true;
	return sl_test_apply_yaml(&n->in, rules_yaml) ? -1 : 0;
}

static int group_teardown(void **state)
{
	if (fx.a.open)
		sl_instance_close(&fx.a.in);
	if (fx.b.open)
		sl_instance_close(&fx.b.in);
	if (fx.dir[0])
		rmdir(fx.dir);
	if (fx.fake)
		munmap(fx.fake, sizeof(*fx.fake));
	sl_test_restore_cpus();
	return 0;
}

static int group_setup(void **state)
{
	sl_test_save_cpus();
	snprintf(fx.dir, sizeof(fx.dir), "/tmp/sl-test-redis.XXXXXX");
	if (!mkdtemp(fx.dir)) {
		fx.dir[0] = 0;
		return -1;
	}
	fx.fake = mmap(NULL, sizeof(*fx.fake), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fx.fake == MAP_FAILED) {
		fx.fake = NULL;
		return -1;
	}
	fx.have_redis = !system("command -v redis-server >/dev/null 2>&1");
	if (!fx.have_redis)
		fprintf(stderr, "redis-server not found: its tests skip\n");
	if (open_node(&fx.a) || open_node(&fx.b)) {
		group_teardown(state);
		return -1;
	}
	*state = &fx;
	return 0;
}

/* Each test: a new server on a new port, new engines (their clients are
 * new too), an hour of model time after the last test, so what earlier
 * tests left in the kernel is idle and not collected.
 */
static int begin(bool real, bool fake)
{
	fx.port = free_port();
	snprintf(fx.url, sizeof(fx.url), "redis://127.0.0.1:%d", fx.port);
	fx.now = T0 + (__u64)++fx.test_no * 3600000;
	if (real && fx.have_redis && start_redis())
		return -1;
	if (fake && start_fake())
		return -1;
	if (node_start(&fx.a, 1) || node_start(&fx.b, 2))
		return -1;
	return 0;
}

static int begin_redis(void **state)
{
	server_extra = NULL;
	return begin(true, false);
}

/* The default user needs "pw-default"; the ACL user "sl" logs in with
 * "pw-sl" (and may run everything the sync needs, on every key).
 */
static int begin_redis_auth(void **state)
{
	static const char *const extra[] = {
		"--requirepass", "pw-default",
		"--user", "sl", "on", ">pw-sl", "~sl:*", "+@read", "+@write",
		"+@scripting", "+cluster|slots", "+time", "+ping",
		NULL,
	};

	server_extra = extra;
	return begin(true, false);
}

static int begin_fake(void **state)
{
	return begin(false, true);
}

static int begin_none(void **state)
{
	return begin(false, false);
}

static int end(void **state)
{
	node_stop(&fx.a);
	node_stop(&fx.b);
	stop_server();
	sl_test_restore_cpus();
	return 0;
}

static void need_redis(void)
{
	if (!fx.server)
		skip();
}

/* ---- with redis-server ------------------------------------------------- */

static void test_redis_peers_units_count_once_own_never(void **st)
{
	struct sl_addr x = new_client(NET_API), w = new_client(NET_API);
	struct sl_addr v = new_client(NET_API);

	need_redis();
	/* A's 4 reach B, which never saw the client: learned from the index */
	assert_int_equal(send_n(&fx.a, &x, 4), 4);
	step();
	round_on(&fx.a);
	round_on(&fx.b);
	round_on(&fx.b);
	step();
	assert_int_equal(send_n(&fx.b, &x, 10), 6);

	/* and B's 6 reach A: 10 in all */
	step();
	round_on(&fx.b);
	round_on(&fx.a);
	step();
	assert_int_equal(send_n(&fx.a, &x, 1), 0);

	/* totals are set, not added: B reads v's slice twice (2, then 5) */
	assert_int_equal(send_n(&fx.a, &v, 2), 2);
	round_on(&fx.a);
	round_on(&fx.b);
	step();
	assert_int_equal(send_n(&fx.a, &v, 3), 3);
	round_on(&fx.a);
	round_on(&fx.b);
	step();
	assert_int_equal(send_n(&fx.b, &v, 10), 5);

	/* A's own units do not come back to A as a peer's */
	assert_int_equal(send_n(&fx.a, &w, 3), 3);
	round_on(&fx.a);
	round_on(&fx.b);
	round_on(&fx.a);
	step();
	round_on(&fx.a);
	assert_int_equal(send_n(&fx.a, &w, 10), 7);

	assert_int_equal(status(&fx.a)->backend_up, 1);
	assert_int_equal(status(&fx.b)->backend_up, 1);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 0);
	assert_int_equal(status(&fx.a)->backend_reconnects, 0);
}

/* sliding-log, sliding-counter (12 slices of 5 s) and token-bucket
 * (capacity 10, a token per 100 s) through the store: A's 4 of a client
 * leave B 6, as for the sums. The bucket's level is taken from its peer
 * slice's start, so the test begins 100 ms into one: 0.001 tokens back.
 */
static void test_redis_log_counter_bucket_counted_across_nodes(void **st)
{
	static const unsigned nets[] = { NET_LOG, NET_COUNTER, NET_BUCKET };
	struct sl_addr x[3];
	unsigned i;

	need_redis();
	fx.now = (fx.now / BUCKET_SLICE_MS + 1) * BUCKET_SLICE_MS + 100;
	for (i = 0; i < 3; i++) {
		x[i] = new_client(nets[i]);
		assert_int_equal(send_n(&fx.a, &x[i], 4), 4);
	}
	step();
	round_on(&fx.a);
	round_on(&fx.b);
	round_on(&fx.b);
	step();
	for (i = 0; i < 3; i++)
		if (send_n(&fx.b, &x[i], 10) != 6)
			fail_msg("net 10.%u: B did not count A's 4", nets[i]);
	assert_int_equal(status(&fx.b)->backend_errors, 0);
}

static void test_redis_outage_is_a_peer_outage_and_sync_resumes(void **st)
{
	struct sl_addr x = new_client(NET_API), y = new_client(NET_API);
	struct sl_addr z = new_client(NET_API);
	__u64 errors;
	uint64_t took;
	int i;

	need_redis();
	assert_int_equal(send_n(&fx.a, &x, 4), 4);
	round_on(&fx.a);
	round_on(&fx.b);
	assert_int_equal(status(&fx.a)->backend_up, 1);

	/* a store that stops answering: the round gives up after the
	 * command timeout (half an interval)
	 */
	kill(fx.server, SIGSTOP);
	step();
	took = round_on(&fx.a);
	print_message("round against a stopped server: %llu ms\n", ULL(took));
	assert_true(took < 1000);
	assert_int_equal(status(&fx.a)->backend_up, 0);
	assert_true(status(&fx.a)->backend_errors >= 1);

	/* backing off: the next round returns at once, tries nothing */
	errors = status(&fx.a)->backend_errors;
	took = round_on(&fx.a);
	assert_true(took < 50);
	assert_int_equal(status(&fx.a)->backend_errors, errors);

	/* a store that died */
	stop_server();
	took = round_on(&fx.b);
	assert_true(took < 1000);
	assert_int_equal(status(&fx.b)->backend_up, 0);
	assert_true(status(&fx.b)->backend_errors >= 1);

	/* both go on deciding: B with A's 4 as last read, a new client on
	 * its own; A takes z's 5 meanwhile
	 */
	step();
	assert_int_equal(send_n(&fx.b, &x, 10), 6);
	assert_int_equal(send_n(&fx.b, &y, 11), 10);
	assert_int_equal(send_n(&fx.a, &z, 5), 5);

	/* reconnects back off: one interval, then doubling (2, 4, 5 s): in 8
	 * rounds an interval apart, attempts at +1, +3 and +7 s
	 */
	errors = status(&fx.a)->backend_errors;
	for (i = 0; i < 8; i++) {
		fx.now += INTERVAL_MS;
		took = round_on(&fx.a);
		assert_true(took < 1000);
	}
	assert_int_equal(status(&fx.a)->backend_errors - errors, 3);
	assert_int_equal(status(&fx.a)->backend_up, 0);

	/* the store is back (empty) on the same port */
	assert_int_equal(start_redis(), 0);
	for (i = 0; i < 10 && !status(&fx.a)->backend_up; i++) {
		fx.now += INTERVAL_MS;
		round_on(&fx.a);
	}
	for (i = 0; i < 10 && !status(&fx.b)->backend_up; i++) {
		fx.now += INTERVAL_MS;
		round_on(&fx.b);
	}
	print_message("back after %llu ms of model time; A: %llu errors, %llu "
		      "reconnects\n", ULL(fx.now - T0 - fx.test_no * 3600000ULL),
		      ULL(status(&fx.a)->backend_errors),
		      ULL(status(&fx.a)->backend_reconnects));
	assert_int_equal(status(&fx.a)->backend_up, 1);
	assert_int_equal(status(&fx.b)->backend_up, 1);
	assert_true(status(&fx.a)->backend_reconnects >= 1);
	assert_true(status(&fx.b)->backend_reconnects >= 1);

	/* what A accepted while the store was away reached B */
	step();
	round_on(&fx.b);
	assert_int_equal(send_n(&fx.b, &z, 10), 5);
}

static void test_redis_flushed_scripts_are_loaded_again(void **st)
{
	struct sl_addr x = new_client(NET_API);
	redisReply *q;

	need_redis();
	assert_int_equal(send_n(&fx.a, &x, 3), 3);
	round_on(&fx.a);
	round_on(&fx.b);
	q = command("SCRIPT FLUSH");
	assert_non_null(q);
	assert_int_equal(q->type, REDIS_REPLY_STATUS);
	freeReplyObject(q);

	step();
	assert_int_equal(send_n(&fx.a, &x, 2), 2);
	round_on(&fx.a);
	round_on(&fx.b);
	step();
	assert_int_equal(send_n(&fx.b, &x, 10), 5);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 0);
	assert_int_equal(status(&fx.a)->backend_up, 1);
}

/* AUTH: A logs in as the default user (requirepass), B as the ACL user;
 * they count each other's units as without a password. A wrong password,
 * and none at all, are refused at connect: a backend error each, the
 * backend down, and the node decides alone (fails open: its full limit).
 */
static void test_redis_auth_password_and_acl_user_wrong_one_fails_open(void **st)
{
	struct sl_addr x = new_client(NET_API), y = new_client(NET_API);

	need_redis();
	assert_int_equal(sl_redis_set_auth(fx.a.redis, NULL, "pw-default"), 0);
	assert_int_equal(sl_redis_set_auth(fx.b.redis, "sl", "pw-sl"), 0);
	assert_int_equal(send_n(&fx.a, &x, 4), 4);
	step();
	round_on(&fx.a);
	round_on(&fx.b);
	round_on(&fx.b);
	step();
	assert_int_equal(send_n(&fx.b, &x, 10), 6);
	assert_int_equal(status(&fx.a)->backend_up, 1);
	assert_int_equal(status(&fx.b)->backend_up, 1);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 0);

	/* new engines: A with a wrong password, B (the ACL user) with
	 * another's, then with none
	 */
	node_stop(&fx.a);
	node_stop(&fx.b);
	assert_int_equal(node_start(&fx.a, 1), 0);
	assert_int_equal(node_start(&fx.b, 2), 0);
	assert_int_equal(sl_redis_set_auth(fx.a.redis, NULL, "wrong"), 0);
	assert_int_equal(sl_redis_set_auth(fx.b.redis, "sl", "pw-default"), 0);
	fx.now += 3600000;	/* the last engines' clients idle */
	step();
	round_on(&fx.a);
	round_on(&fx.b);
	assert_int_equal(status(&fx.a)->backend_up, 0);
	assert_int_equal(status(&fx.a)->backend_errors, 1);
	assert_int_equal(status(&fx.b)->backend_up, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 1);
	assert_int_equal(send_n(&fx.a, &y, 4), 4);
	assert_int_equal(send_n(&fx.b, &y, 11), 10);	/* A's 4 unseen */

	assert_int_equal(sl_redis_set_auth(fx.b.redis, NULL, NULL), 0);
	fx.now += 2 * INTERVAL_MS;	/* past the backoff */
	round_on(&fx.b);
	assert_int_equal(status(&fx.b)->backend_up, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 2);
}

/* The client's hash, found by its documented name. */
static void bulk_key(const struct sl_addr *who, char *key, size_t len)
{
	int n, i;

	n = snprintf(key, len, "sl:{%08x:", sl_rule_name_hash("bulk"));
	for (i = 0; i < 16; i++)
		n += snprintf(key + n, len - n, "%02x", who->byte[i]);
	snprintf(key + n, len - n, ":%u}", DPORT);
}

static long long key_integer(const char *cmd, const char *key)
{
	redisReply *q = command("%s %s", cmd, key);
	long long v;

	assert_non_null(q);
	assert_int_equal(q->type, REDIS_REPLY_INTEGER);
	v = q->integer;
	freeReplyObject(q);
	return v;
}

static void test_redis_hash_keeps_16_slices_and_expires_from_window(void **st)
{
	struct sl_addr x = new_client(NET_BULK);
	__u64 base = fx.now / SLICE_MS * SLICE_MS;
	char key[64], field[32];
	redisReply *q;
	long long ttl;
	int i;

	need_redis();
	bulk_key(&x, key, sizeof(key));
	for (i = 0; i < 20; i++) {
		fx.now = base + (__u64)i * SLICE_MS + 100;
		assert_int_equal(send_n(&fx.a, &x, 1), 1);
		round_on(&fx.a);
		ttl = key_integer("PTTL", key);
		/* never shorter than the window */
		assert_true(ttl > WINDOW_MS);
		/* one slice start: the longest window's bound */
		if (i == 0)
			assert_true(ttl > 12LL * 24 * 3600 * 1000);
	}
	/* the slice length is known by now: 16 slices and 2 intervals */
	assert_true(ttl <= 16 * SLICE_MS + 2 * INTERVAL_MS);
	print_message("after 20 slices: %lld fields, expiry %lld ms\n",
		      key_integer("HLEN", key), ttl);
	/* the newest 16: slices 4 to 19 */
	assert_int_equal(key_integer("HLEN", key), 16);
	for (i = 0; i < 20; i++) {
		snprintf(field, sizeof(field), "%llu:1",
			 ULL(base + (__u64)i * SLICE_MS));
		q = command("HGET %s %s", key, field);
		assert_non_null(q);
		if (i < 4)
			assert_int_equal(q->type, REDIS_REPLY_NIL);
		else
			assert_true(q->type == REDIS_REPLY_STRING &&
				    !strcmp(q->str, "1"));
		freeReplyObject(q);
	}
	assert_int_equal(status(&fx.a)->backend_errors, 0);
}

/* ---- with the fake server ---------------------------------------------- */

static void set_fake(int mode, const char *raw)
{
	fx.fake->mode = mode;
	snprintf(fx.fake->raw, sizeof(fx.fake->raw), "%s", raw ? raw : "");
}

static void test_redis_bad_replies_are_errors_not_crashes(void **st)
{
	static const struct {
		int mode;
		const char *raw;
		bool tolerated;		/* not an error: skipped */
		bool push;		/* the round must push one client */
		const char *what;
	} cases[] = {
		{ FAKE_RAW_INDEX, ":1\r\n", 0, 0, "index: an integer" },
		{ FAKE_RAW_INDEX, "*-1\r\n", 0, 0, "index: a nil array" },
		{ FAKE_RAW_INDEX, "$-1\r\n", 0, 0, "index: nil" },
		{ FAKE_RAW_INDEX, "*2\r\n$1\r\n5\r\n*0\r\n", 0, 0,
		  "index: its time as a string" },
		{ FAKE_RAW_INDEX, "*2\r\n:5\r\n*1\r\n$3\r\nabc\r\n", 0, 0,
		  "index: an id without a score" },
		{ FAKE_RAW_INDEX, "*2\r\n:5\r\n*2\r\n$3\r\nabc\r\n$2\r\n1x\r\n",
		  0, 0, "index: a score that is no number" },
		{ FAKE_RAW_INDEX, "*2\r\n:5\r\n*2\r\n$3\r\nabc\r\n:7\r\n", 0, 0,
		  "index: a score as an integer" },
		{ FAKE_RAW_INDEX, "*2\r\n:5\r\n*4\r\n$1\r\na\r\n$1\r\n9\r\n"
		  "$1\r\nb\r\n$1\r\n3\r\n", 0, 0, "index: scores out of order" },
		{ FAKE_RAW_INDEX, "*3\r\n:5\r\n*0\r\n*0\r\n", 0, 0,
		  "index: three elements" },
		{ FAKE_RAW_INDEX, "*2\r\n*0\r\n*0\r\n", 0, 0,
		  "index: its time as an array" },
		{ FAKE_RAW_INDEX, "-ERR boom\r\n", 0, 0, "index: an error" },
		{ FAKE_RAW_INDEX, "-LOADING Redis is loading\r\n", 0, 0,
		  "index: LOADING" },
		{ FAKE_HANG, NULL, 0, 0, "no answer at all" },
		{ FAKE_RAW_INDEX, "*2\r\n:5\r\n*4\r\n$3\r\nabc\r\n$1\r\n3\r\n"
		  "$47\r\n00000000:ffffffffffffffffffffffffffffffff:99999\r\n"
		  "$1\r\n4\r\n", 1, 0, "index: ids not ours (skipped)" },
		{ FAKE_RAW_ROUND, "*0\r\n", 0, 1, "round: no totals" },
		{ FAKE_RAW_ROUND, "*2\r\n*0\r\n*0\r\n", 0, 1,
		  "round: totals for two keys" },
		{ FAKE_RAW_ROUND, "*1\r\n:7\r\n", 0, 1,
		  "round: totals as an integer" },
		{ FAKE_RAW_ROUND, "*1\r\n$-1\r\n", 0, 1, "round: nil totals" },
		{ FAKE_RAW_ROUND, "*1\r\n*1\r\n:5\r\n", 0, 1,
		  "round: a start without units" },
		{ FAKE_RAW_ROUND, "*1\r\n*2\r\n:5\r\n$1\r\n3\r\n", 0, 1,
		  "round: units as a string" },
		{ FAKE_RAW_ROUND, "*1\r\n*2\r\n:-5\r\n:3\r\n", 0, 1,
		  "round: a negative start" },
		{ FAKE_RAW_ROUND, "*1\r\n*2\r\n:5\r\n:-3\r\n", 0, 1,
		  "round: negative units" },
		{ FAKE_RAW_ROUND, "*1\r\n*2\r\n*1\r\n:1\r\n:3\r\n", 0, 1,
		  "round: an array as a start" },
		{ FAKE_RAW_ROUND, "-BUSY Redis is busy running a script\r\n",
		  0, 1, "round: BUSY" },
		{ FAKE_RAW_ROUND, "-NOSCRIPT No matching script\r\n", 0, 1,
		  "round: NOSCRIPT after loading again" },
		{ FAKE_RAW_ROUND, "+OK\r\n", 0, 1, "round: a status" },
		{ FAKE_RAW_ROUND, "%%% not RESP\r\n", 0, 1,
		  "round: not the protocol" },
		{ FAKE_RAW_ROUND, "*1\r\n*2\r\n:1700000000000\r\n"
		  ":99999999999\r\n", 1, 1, "round: units past 32 bits "
		  "(clamped)" },
	};
	struct sl_addr x;
	__u64 errors;
	uint64_t took;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		set_fake(cases[i].mode, cases[i].raw);
		/* past any backoff: every case connects afresh */
		fx.now += 10000;
		if (cases[i].push) {
			x = new_client(NET_API);
			assert_int_equal(send_n(&fx.a, &x, 1), 1);
		}
		errors = status(&fx.a)->backend_errors;
		took = round_on(&fx.a);
		print_message("%-40s %3llu ms, backend_up %u\n", cases[i].what,
			      ULL(took), status(&fx.a)->backend_up);
		if (cases[i].tolerated) {
			assert_int_equal(status(&fx.a)->backend_errors, errors);
			assert_int_equal(status(&fx.a)->backend_up, 1);
		} else {
			assert_int_equal(status(&fx.a)->backend_errors,
					 errors + 1);
			assert_int_equal(status(&fx.a)->backend_up, 0);
		}
		assert_true(took < 1000);
	}
	/* and a well-formed answer brings it back */
	set_fake(FAKE_OK, NULL);
	fx.now += 10000;
	round_on(&fx.a);
	assert_int_equal(status(&fx.a)->backend_up, 1);
	assert_true(status(&fx.a)->backend_reconnects >= 1);
}

static void test_redis_crossslot_makes_batches_per_slot(void **st)
{
	enum { CLIENTS = 40 };
	bool slot_seen[16384] = { false };
	struct sl_addr x;
	unsigned slots = 0;
	char key[64];
	int i;

	/* the reference itself, against the Cluster spec's example */
	assert_int_equal(ref_slot("123456789", 9), 0x31c3 & 16383);
	set_fake(FAKE_CLUSTER, NULL);
	for (i = 0; i < CLIENTS; i++) {
		x = new_client(NET_BULK);
		assert_int_equal(send_n(&fx.a, &x, 1), 1);
		bulk_key(&x, key, sizeof(key));
		if (!slot_seen[ref_slot(key, strlen(key))])
			slots++;
		slot_seen[ref_slot(key, strlen(key))] = true;
	}
	round_on(&fx.a);
	print_message("%d clients in %u slots: %d refusals, %d calls\n",
		      CLIENTS, slots, fx.fake->crossslot, fx.fake->round_calls);
	assert_int_equal(fx.fake->crossslot, 1);
	assert_int_equal(fx.fake->keys_answered, CLIENTS);
	assert_int_equal(fx.fake->round_calls, slots);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
	assert_int_equal(status(&fx.a)->backend_up, 1);
}

/* A store slow enough that a round's batches outlast the interval: the
 * round stops sending when the interval is up, and the next one sends
 * the clients left over, each exactly once.
 */
static void test_redis_slow_store_defers_pushes_to_next_round(void **st)
{
	enum { CLIENTS = 260 };		/* 5 batches of at most 64 */
	unsigned first = fx.next_client + 1, i;
	struct sl_addr x;
	uint64_t took;
	int after_first;

	set_fake(FAKE_SLOW, NULL);
	for (i = 0; i < CLIENTS; i++) {
		x = new_client(NET_API);
		assert_int_equal(send_n(&fx.a, &x, 1), 1);
	}
	took = round_on(&fx.a);
	after_first = fx.fake->keys_answered;
	print_message("slow store: %d of %d clients pushed in %llu ms\n",
		      after_first, CLIENTS, ULL(took));
	/* whole batches, stopped at the interval: at most a command's
	 * timeout (half an interval) past it
	 */
	assert_true(after_first > 0 && after_first < CLIENTS);
	assert_int_equal(after_first % 64, 0);
	assert_true(took < INTERVAL_MS + INTERVAL_MS / 2);
	assert_int_equal(status(&fx.a)->backend_errors, 0);

	set_fake(FAKE_OK, NULL);
	fx.now += INTERVAL_MS;
	round_on(&fx.a);
	assert_int_equal(fx.fake->keys_answered, CLIENTS);
	for (i = first; i < first + CLIENTS; i++)
		if (fx.fake->pushed[i & 0xffff] != 1)
			fail_msg("client %u pushed %u times", i,
				 fx.fake->pushed[i & 0xffff]);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
}

/* Learning from the index as long as the interval lasts: B is told of
 * 600 clients it has not seen, and the store reads slowly, so a round
 * reads whole batches of them (4 of 64 in the 1 s interval, 300 ms
 * each), and the next round's index read goes on right after the last
 * one read (the k-th): by score, and by offset among equal scores.
 */
static void test_redis_learning_resumes_where_the_round_stopped(void **st)
{
	static const struct {
		unsigned long long now, score, step;
		const char *what;
	} cases[] = {
		{ 2000000, 1000, 1, "distinct scores" },
		{ 3000000, 2500000, 0, "one score (one ZADD call)" },
	};
	unsigned long long past, k;
	uint64_t took;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fx.fake->learn_count = 600;
		fx.fake->learn_score = cases[i].score;
		fx.fake->learn_step = cases[i].step;
		fx.fake->index_now = cases[i].now;
		fx.fake->keys_answered = 0;
		set_fake(FAKE_LEARN, NULL);
		fx.now += INTERVAL_MS;
		took = round_on(&fx.b);
		k = fx.fake->keys_answered;
		print_message("%s: read %llu of 600 in %llu ms\n",
			      cases[i].what, k, ULL(took));
		/* whole batches, not all (4 unless the machine is slow) */
		assert_true(k > 0 && k < 600 && k % 64 == 0);
		assert_true(took < INTERVAL_MS + INTERVAL_MS / 2);

		/* the next read starts after them */
		set_fake(FAKE_OK, NULL);
		fx.now += INTERVAL_MS;
		round_on(&fx.b);
		if (cases[i].step) {	/* at the k-th score, past 1 there */
			assert_int_equal(fx.fake->read_from,
					 cases[i].score + k - 1);
			assert_int_equal(fx.fake->read_offset, 1);
		} else {		/* at the score, past k there */
			assert_int_equal(fx.fake->read_from, cases[i].score);
			assert_int_equal(fx.fake->read_offset, k);
		}
		assert_int_equal(status(&fx.b)->backend_errors, 0);
		/* and a read of nothing more moves it past that read's time
		 * (the time the fake gives next, less one)
		 */
		past = fx.fake->index_now;
		fx.now += INTERVAL_MS;
		round_on(&fx.b);
		assert_int_equal(fx.fake->read_from, past);
		assert_int_equal(fx.fake->read_offset, 0);
	}
}

/* ---- without a server -------------------------------------------------- */

static void test_redis_url_forms(void **st)
{
	static const struct {
		const char *url;
		bool ok;
	} cases[] = {
		{ "redis://127.0.0.1:6379", true },
		{ "redis://redis.example:7000/", true },
		{ "redis://[::1]:6379", true },
		{ "redis://localhost", true },
		{ "redis://", false },
		{ "redis://:6379", false },
		{ "redis://h:0", false },
		{ "redis://h:65536", false },
		{ "redis://h:12x", false },
		{ "redis://h:6379/0", false },
		{ "redis://user:pw@h:6379", false },
		{ "redis://[::1:6379", false },
		{ "http://h:6379", false },
	};
	struct sl_redis *r;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = sl_redis_new(cases[i].url, 1, INTERVAL_MS);
		if (!!r != cases[i].ok)
			fail_msg("%s: %s", cases[i].url,
				 r ? "taken" : "refused");
		sl_redis_free(r);
	}
}


/* ---- a Redis Cluster ---------------------------------------------------- */

static void stop_cluster(void)
{
	char path[128];
	int i;

	for (i = 0; i < CLUSTER_N; i++) {
		if (cl.pid[i] > 0) {
			kill(cl.pid[i], SIGKILL);
			waitpid(cl.pid[i], NULL, 0);
		}
		cl.pid[i] = 0;
		snprintf(path, sizeof(path), "%s/nodes-%d.conf", fx.dir,
			 cl.port[i]);
		unlink(path);
	}
	cl.up = false;
}

/* `what` (CLUSTER INFO, INFO replication) at port has `line`. */
static bool info_has(int port, const char *what, const char *line)
{
	redisReply *x = command_at(port, what);
	bool ok = x && x->type == REDIS_REPLY_STRING && strstr(x->str, line);

	freeReplyObject(x);
	return ok;
}

/* The master serving `slot`, as CLUSTER SLOTS at `port` says: its port,
 * or -1.
 */
static int slot_owner(int port, unsigned slot)
{
	redisReply *x = command_at(port, "CLUSTER SLOTS");
	int owner = -1;
	size_t i;

	for (i = 0; x && x->type == REDIS_REPLY_ARRAY && i < x->elements; i++) {
		const redisReply *e = x->element[i];

		if (e->elements >= 3 &&
		    (unsigned)e->element[0]->integer <= slot &&
		    slot <= (unsigned)e->element[1]->integer)
			owner = e->element[2]->element[1]->integer;
	}
	freeReplyObject(x);
	return owner;
}

static unsigned keyslot(const char *key)
{
	redisReply *x = command_at(cl.port[0], "CLUSTER KEYSLOT %s", key);
	unsigned slot = x && x->type == REDIS_REPLY_INTEGER ? x->integer : 99999;

	freeReplyObject(x);
	return slot;
}

static bool port_free(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok = fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a));

	if (fd >= 0)
		close(fd);
	return ok;
}

/* The first of CLUSTER_N free ports in a row whose Cluster bus ports
 * (10000 above) are free too; -1 if none was found.
 */
static int cluster_ports(void)
{
	int i, j, p;

	for (i = 0; i < 200; i++) {
		p = 20000 + (getpid() * 7 + i * 47) % (10000 - CLUSTER_N);
		for (j = 0; j < CLUSTER_N; j++)
			if (!port_free(p + j) || !port_free(p + j + 10000))
				break;
		if (j == CLUSTER_N)
			return p;
	}
	return -1;
}

/* Six redis-servers in cluster mode (a node is judged failed after 1 s),
 * joined by redis-cli --cluster create with a replica per master; ready
 * when every node says cluster_state:ok and every replica's link is up.
 */
static int start_cluster(void)
{
	char cmd[512], port[16], conf[64];
	uint64_t until;
	int i, n, masters, base;
	pid_t pid;

	memset(&cl, 0, sizeof(cl));
	base = cluster_ports();
	if (base < 0) {
		fprintf(stderr, "cluster: no free ports\n");
		return -1;
	}
	n = snprintf(cmd, sizeof(cmd), "redis-cli --cluster create");
	for (i = 0; i < CLUSTER_N; i++) {
		cl.port[i] = base + i;
		snprintf(port, sizeof(port), "%d", cl.port[i]);
		snprintf(conf, sizeof(conf), "nodes-%d.conf", cl.port[i]);
		pid = fork();
		if (pid < 0)
			goto fail;
		if (!pid) {
			int fd = open("/dev/null", O_WRONLY);

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
			execlp("redis-server", "redis-server", "--port", port,
			       "--bind", "127.0.0.1", "--save", "",
			       "--appendonly", "no", "--daemonize", "no",
			       "--dir", fx.dir, "--cluster-enabled", "yes",
			       "--cluster-config-file", conf,
			       "--cluster-node-timeout", "1000",
			       "--repl-diskless-sync-delay", "0",
			       (char *)NULL);
			_exit(127);
		}
		cl.pid[i] = pid;
		n += snprintf(cmd + n, sizeof(cmd) - n, " 127.0.0.1:%d",
			      cl.port[i]);
	}
	for (i = 0; i < CLUSTER_N; i++)
		for (until = sl_now_mono_ms() + 5000;; usleep(10000)) {
			redisReply *x = command_at(cl.port[i], "PING");
			bool ok = x && x->type == REDIS_REPLY_STATUS;

			freeReplyObject(x);
			if (ok)
				break;
			if (sl_now_mono_ms() > until) {
				fprintf(stderr, "cluster: node %d does not "
					"answer\n", cl.port[i]);
				goto fail;
			}
		}
	snprintf(cmd + n, sizeof(cmd) - n,
		 " --cluster-replicas 1 --cluster-yes >/dev/null 2>&1");
	if (system(cmd)) {
		fprintf(stderr, "cluster: '%s' failed\n", cmd);
		goto fail;
	}
	for (until = sl_now_mono_ms() + 15000; sl_now_mono_ms() < until; usleep(50000)) {
		for (i = 0, masters = 0; i < CLUSTER_N; i++) {
			if (!info_has(cl.port[i], "CLUSTER INFO", "cluster_state:ok"))
				break;
			if (info_has(cl.port[i], "INFO replication", "role:master"))
				masters++;
			else if (!info_has(cl.port[i], "INFO replication",
					   "master_link_status:up"))
				break;
		}
		if (sl_now_mono_ms() + 50 >= until)
			fprintf(stderr, "cluster: node %d of %d, %d masters\n",
				i, CLUSTER_N, masters);
		if (i == CLUSTER_N && masters == 3) {
			cl.up = true;
			return 0;
		}
	}
	fprintf(stderr, "cluster: not ready in 15 s\n");
fail:
	stop_cluster();
	return -1;
}

/* The Cluster, and engines whose URL is the master of the index's slot:
 * the node the failover test kills.
 */
static int begin_cluster(void **state)
{
	int i;

	fx.port = 0;
	fx.now = T0 + (__u64)++fx.test_no * 3600000;
	if (!fx.have_redis || start_cluster())
		return fx.have_redis ? -1 : 0;
	fx.port = slot_owner(cl.port[0], keyslot("sl:{index}"));
	for (i = 0; i < CLUSTER_N && cl.port[i] != fx.port; i++)
		;
	if (i == CLUSTER_N) {
		fprintf(stderr, "cluster: no master of sl:{index} (%d)\n",
			fx.port);
		return -1;
	}
	snprintf(fx.url, sizeof(fx.url), "redis://127.0.0.1:%d", fx.port);
	if (node_start(&fx.a, 1) || node_start(&fx.b, 2)) {
		fprintf(stderr, "cluster: engines did not start\n");
		stop_cluster();
		return -1;
	}
	return 0;
}

static int end_cluster(void **state)
{
	stop_cluster();
	return end(state);
}

static void need_cluster(void)
{
	if (!cl.up)
		skip();
}

static void api_key(const struct sl_addr *who, char *key, size_t len)
{
	int n, i;

	n = snprintf(key, len, "sl:{%08x:", sl_rule_name_hash("api"));
	for (i = 0; i < 16; i++)
		n += snprintf(key + n, len - n, "%02x", who->byte[i]);
	snprintf(key + n, len - n, ":0}");
}

/* `nr` new clients send `n` each through A; after A's round and two of
 * B's (its push, then the read of A's), B lets each through only 10 - n
 * of 10.
 */
static void a_counts_b_sees(struct sl_addr *x, unsigned nr, unsigned n,
			    const char *when)
{
	unsigned i;

	for (i = 0; i < nr; i++) {
		x[i] = new_client(NET_API);
		assert_int_equal(send_n(&fx.a, &x[i], n), n);
	}
	step();
	round_on(&fx.a);
	round_on(&fx.b);
	round_on(&fx.b);
	step();
	for (i = 0; i < nr; i++)
		if (send_n(&fx.b, &x[i], 10) != 10 - n)
			fail_msg("client %u: %sB did not count A's %u", i, when, n);
}

/* Both engines pointed at one master: A's units of 40 clients land on
 * the masters owning their slots (CLUSTER KEYSLOT, then EXISTS on the
 * owner, asked directly: no redirect), on all three, and B counts them;
 * B's reach A. After a manual failover the MOVED answers are followed:
 * still no error, no reconnect.
 */
static void test_redis_cluster_counts_on_owning_master_across_nodes_moved_followed(void **st)
{
	struct sl_addr x[40];
	char key[64];
	unsigned i;
	int owner, j, owners[3] = { 0 }, masters = 0;
	redisReply *q;

	need_cluster();
	a_counts_b_sees(x, 40, 3, "");
	for (i = 0; i < 40; i++) {
		api_key(&x[i], key, sizeof(key));
		owner = slot_owner(cl.port[0], keyslot(key));
		q = command_at(owner, "EXISTS %s", key);
		assert_non_null(q);
		if (q->type != REDIS_REPLY_INTEGER || q->integer != 1)
			fail_msg("%s is not on %d, the master of slot %u", key,
				 owner, keyslot(key));
		freeReplyObject(q);
		for (j = 0; j < masters && owners[j] != owner; j++)
			;
		if (j == masters && masters < 3)
			owners[masters++] = owner;
	}
	q = command_at(slot_owner(cl.port[0], keyslot("sl:{index}")),
		       "ZCARD sl:{index}");
	assert_non_null(q);
	assert_int_equal(q->integer, 40);
	freeReplyObject(q);
	print_message("40 clients' hashes found on their slots' masters, "
		      "%d masters in all\n", masters);
	assert_int_equal(masters, 3);

	/* and B's reach A */
	step();
	round_on(&fx.b);
	round_on(&fx.a);
	step();
	for (i = 0; i < 40; i++)
		if (send_n(&fx.a, &x[i], 10) != 0)
			fail_msg("client %u: A did not count B's 7", i);
	assert_int_equal(status(&fx.a)->backend_errors, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 0);
	assert_int_equal(status(&fx.a)->backend_up, 1);

	/* a manual failover (CLUSTER FAILOVER at a replica): the old master
	 * answers MOVED for its slots; the engines follow it to the new one,
	 * with no error and no reconnect
	 */
	for (j = 0; j < CLUSTER_N; j++)
		if (info_has(cl.port[j], "INFO replication", "role:slave"))
			break;
	assert_true(j < CLUSTER_N);
	q = command_at(cl.port[j], "CLUSTER FAILOVER");
	assert_non_null(q);
	assert_int_equal(q->type, REDIS_REPLY_STATUS);
	freeReplyObject(q);
	for (i = 0; i < 100 && !info_has(cl.port[j], "INFO replication",
					 "role:master"); i++)
		usleep(50000);
	assert_true(info_has(cl.port[j], "INFO replication", "role:master"));
	a_counts_b_sees(x, 40, 2, "after the manual failover ");
	assert_int_equal(status(&fx.a)->backend_errors, 0);
	assert_int_equal(status(&fx.b)->backend_errors, 0);
	assert_int_equal(status(&fx.a)->backend_reconnects, 0);
}

/* Kill `pid` a moment after the call, from another thread: while the
 * engine is in the middle of a round (its pushes in flight).
 */
static void *killer(void *arg)
{
	usleep(1500);
	kill(*(pid_t *)arg, SIGKILL);
	return NULL;
}

/* A flood on both engines (each its own 20 clients, a unit each every
 * 100 ms, rounds as often), and the master of the index's slot, the
 * engines' URL, killed by its PID: rounds fail (backend errors) and
 * both go on deciding locally; the replica is promoted (bounded wait);
 * both reconnect through the nodes the map named and converge: each
 * sees the other's flood but for the units lost with the master (the
 * kill lands 1.5 ms into a round of A's), and a fresh client's units
 * exactly. The figures go to docs/REDIS.md.
 */
static void test_redis_cluster_master_killed_fails_open_then_converges(void **st)
{
	struct sl_addr xa[20], xb[20], pa, pb;
	unsigned sent_a = 0, sent_b = 0, seen_a = 0, seen_b = 0, i, k;
	unsigned out_tried = 0, out_passed = 0;
	uint64_t t0, t_kill = 0, t_err = 0, t_over = 0, t_conv = 0, now;
	__u64 err_a = 0, err_b = 0;
	int victim = -1, j, alive = -1;
	unsigned islot = keyslot("sl:{index}");
	__u64 base;

	need_cluster();
	for (i = 0; i < 20; i++) {
		xa[i] = new_client(NET_BULK);
		xb[i] = new_client(NET_BULK);
	}
	for (j = 0; j < CLUSTER_N; j++)
		if (cl.port[j] == fx.port)
			victim = j;
	alive = (victim + 1) % CLUSTER_N;
	base = fx.now;
	t0 = sl_now_mono_ms();
	for (k = 0; (now = sl_now_mono_ms()) - t0 < 40000; k++) {
		fx.now = base + (now - t0);
		for (i = 0; i < 20; i++) {
			unsigned pa1 = send_n(&fx.a, &xa[i], 1);
			unsigned pb1 = send_n(&fx.b, &xb[i], 1);

			sent_a += pa1;
			sent_b += pb1;
			/* the store away: each decides alone, and lets its
			 * clients (far below the limit) through
			 */
			if (t_err && !t_conv) {
				out_tried += 2;
				out_passed += pa1 + pb1;
			}
		}
		if (!t_kill && now - t0 >= 1500) {
			pthread_t th;

			/* mid-round: A's pushes in flight */
			err_a = status(&fx.a)->backend_errors;
			err_b = status(&fx.b)->backend_errors;
			assert_int_equal(pthread_create(&th, NULL, killer,
							&cl.pid[victim]), 0);
			t_kill = sl_now_mono_ms();
			round_on(&fx.a);
			pthread_join(th, NULL);
			waitpid(cl.pid[victim], NULL, 0);
			cl.pid[victim] = 0;
			round_on(&fx.b);
		} else {
			round_on(&fx.a);
			round_on(&fx.b);
		}
		if (t_kill && !t_err &&
		    status(&fx.a)->backend_errors > err_a &&
		    status(&fx.b)->backend_errors > err_b)
			t_err = sl_now_mono_ms();
		if (t_kill && !t_over) {
			int o = slot_owner(cl.port[alive], islot);

			if (o > 0 && o != cl.port[victim] &&
			    info_has(cl.port[alive], "CLUSTER INFO",
				     "cluster_state:ok"))
				t_over = sl_now_mono_ms();
		}
		if (t_over && !t_conv && status(&fx.a)->backend_up &&
		    status(&fx.b)->backend_up)
			t_conv = sl_now_mono_ms();
		/* flood on for a second after both are back */
		if (t_conv && sl_now_mono_ms() - t_conv > 1000)
			break;
		usleep(100000);
	}
	assert_true(t_kill && t_err);
	assert_true(out_tried > 0);
	assert_int_equal(out_passed, out_tried);
	if (!t_over)
		fail_msg("no failover within 40 s");
	if (!t_conv)
		fail_msg("the engines did not reconnect within 40 s");

	/* two more rounds each, then what each sees of the other's flood */
	for (i = 0; i < 2; i++) {
		fx.now += 100;
		round_on(&fx.a);
		round_on(&fx.b);
	}
	fx.now += 10;
	for (i = 0; i < 20; i++) {
		seen_a += 1000 - send_n(&fx.b, &xa[i], 1000);
		seen_b += 1000 - send_n(&fx.a, &xb[i], 1000);
	}
	print_message("cluster failover: %u rounds; kill -> both nodes' first "
		      "error %llu ms, -> replica promoted %llu ms, -> both "
		      "reconnected %llu ms; A %llu errors, %llu reconnects; "
		      "units lost: A's %u of %u, B's %u of %u; %u packets "
		      "decided locally meanwhile, all passed\n", k,
		      ULL(t_err - t_kill), ULL(t_over - t_kill),
		      ULL(t_conv - t_kill),
		      ULL(status(&fx.a)->backend_errors),
		      ULL(status(&fx.a)->backend_reconnects),
		      sent_a - seen_a, sent_a, sent_b - seen_b, sent_b,
		      out_tried);
	/* never counted more than was sent; what was lost is what the dead
	 * master took with it: a few rounds' worth at most
	 */
	assert_true(seen_a <= sent_a && seen_b <= sent_b);
	assert_true(sent_a - seen_a <= sent_a / 5);
	assert_true(sent_b - seen_b <= sent_b / 5);

	/* converged: fresh clients' units are seen exactly, both ways */
	pa = new_client(NET_API);
	pb = new_client(NET_API);
	assert_int_equal(send_n(&fx.a, &pa, 4), 4);
	assert_int_equal(send_n(&fx.b, &pb, 3), 3);
	step();
	round_on(&fx.a);
	round_on(&fx.b);
	round_on(&fx.a);
	step();
	assert_int_equal(send_n(&fx.b, &pa, 10), 6);
	assert_int_equal(send_n(&fx.a, &pb, 10), 7);
	assert_int_equal(status(&fx.a)->backend_up, 1);
	assert_int_equal(status(&fx.b)->backend_up, 1);
}

int main(void)
{
#define T(name, setup) cmocka_unit_test_setup_teardown(name, setup, end)
	const struct CMUnitTest tests[] = {
		T(test_redis_peers_units_count_once_own_never, begin_redis),
		T(test_redis_log_counter_bucket_counted_across_nodes, begin_redis),
		T(test_redis_outage_is_a_peer_outage_and_sync_resumes,
		  begin_redis),
		T(test_redis_flushed_scripts_are_loaded_again, begin_redis),
		T(test_redis_auth_password_and_acl_user_wrong_one_fails_open,
		  begin_redis_auth),
		T(test_redis_hash_keeps_16_slices_and_expires_from_window,
		  begin_redis),
		T(test_redis_bad_replies_are_errors_not_crashes, begin_fake),
		T(test_redis_crossslot_makes_batches_per_slot, begin_fake),
		T(test_redis_slow_store_defers_pushes_to_next_round,
		  begin_fake),
		T(test_redis_learning_resumes_where_the_round_stopped,
		  begin_fake),
		T(test_redis_url_forms, begin_none),
		cmocka_unit_test_setup_teardown(
			test_redis_cluster_counts_on_owning_master_across_nodes_moved_followed,
			begin_cluster, end_cluster),
		cmocka_unit_test_setup_teardown(
			test_redis_cluster_master_killed_fails_open_then_converges,
			begin_cluster, end_cluster),
	};
#undef T

	if (getenv("SL_TEST_VERBOSE"))
		sl_verbose = 2;
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
