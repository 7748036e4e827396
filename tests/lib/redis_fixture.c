// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The fixture of tests/lib/redis_fixture.h. */
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
#include "instance_fixture.h"
#include "redis_fixture.h"

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

struct fixture fx;

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

redisReply *command(const char *fmt, ...)
{
	redisReply *x;
	va_list ap;

	va_start(ap, fmt);
	x = vcommand_at(fx.port, fmt, ap);
	va_end(ap);
	return x;
}

redisReply *command_at(int port, const char *fmt, ...)
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

void stop_server(void)
{
	if (fx.server > 0) {
		kill(fx.server, SIGKILL);
		waitpid(fx.server, NULL, 0);
	}
	fx.server = 0;
	if (fx.trap > 0) {
		kill(fx.trap, SIGKILL);
		waitpid(fx.trap, NULL, 0);
	}
	fx.trap = 0;
}

/* Extra redis-server arguments for the next start_redis (NULL-ended). */
static const char *const *server_extra;

/* redis-server on fx.port, in the test's own directory, nothing saved. */
int start_redis(void)
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

/* ---- nodes ------------------------------------------------------------- */

struct sl_sync_status *status(struct node *n)
{
	return sl_sync_status(n->sync);
}

struct sl_addr new_client(unsigned net)
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
unsigned send_n(struct node *n, const struct sl_addr *who,
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
uint64_t round_on(struct node *n)
{
	uint64_t t = sl_now_mono_ms();

	sl_redis_round(n->redis, n->sync, fx.now);
	return sl_now_mono_ms() - t;
}

void step(void)
{
	fx.now += 10;
}

/* The rounds ORDER names, one letter a node ("abb": A's, then B's twice),
 * at one model time, then one step: each round reads what the ones before
 * it wrote. */
void rounds(const char *order)
{
	for (; *order; order++)
		round_on(*order == 'a' ? &fx.a : &fx.b);
	step();
}

int node_start(struct node *n, unsigned id)
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

void node_stop(struct node *n)
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

int group_teardown(void **state)
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

int group_setup(void **state)
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

int begin_redis(void **state)
{
	server_extra = NULL;
	return begin(true, false);
}

/* The default user needs "pw-default"; the ACL user "sl" logs in with
 * "pw-sl" (and may run everything the sync needs, on every key).
 */
int begin_redis_auth(void **state)
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

int begin_fake(void **state)
{
	return begin(false, true);
}

int begin_none(void **state)
{
	return begin(false, false);
}

int end(void **state)
{
	node_stop(&fx.a);
	node_stop(&fx.b);
	stop_server();
	sl_test_restore_cpus();
	return 0;
}

void need_redis(void)
{
	if (!fx.server)
		skip();
}

/* The client's hash, found by its documented name. */
void bulk_key(const struct sl_addr *who, char *key, size_t len)
{
	int n, i;

	n = snprintf(key, len, "sl:{%08x:", sl_rule_name_hash("bulk"));
	for (i = 0; i < 16; i++)
		n += snprintf(key + n, len - n, "%02x", who->byte[i]);
	snprintf(key + n, len - n, ":%u}", DPORT);
}
