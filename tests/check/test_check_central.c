// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * The check API's central store client (user/service/check_central.c) against a
 * fake Redis in a thread, for the replies a real one does not give: the
 * script's answer is taken only in its exact shape; every other reply is
 * an error (-EPROTO, counted, the connection kept), a broken stream or a
 * silent server drops the connection (-EIO) and backs off (-EAGAIN until
 * the backoff ends, doubling while tries fail), NOSCRIPT loads the scripts again and sends once more.
 * Never a crash (run it under SANITIZE=1 too). And the store's key and
 * client id: rule and client inside the hash tag, addresses masked to the
 * rule's prefix.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <hiredis/hiredis.h>
#include "service/check.h"
#include "service/check_central.h"

#define SHA "0123456789abcdef0123456789abcdef01234567"

/* What the fake answers EVALSHA with; NULL: nothing (it hangs). */
static const char *_Atomic eval_reply;
static atomic_int noscript_left;	/* answer NOSCRIPT this many times */
static atomic_int close_on_eval;	/* close the connection instead */
static atomic_int refuse_load;		/* SCRIPT LOAD answers an error */
static atomic_int loads, evals;
static int listen_fd, port;

static void reply(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) < 0)
		return;
}

static void serve(int fd)
{
	redisReader *rd = redisReaderCreate();
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		void *q = NULL;

		redisReaderFeed(rd, buf, n);
		while (redisReaderGetReply(rd, &q) == REDIS_OK && q) {
			redisReply *x = q;
			const char *cmd = x->type == REDIS_REPLY_ARRAY &&
					  x->elements ? x->element[0]->str : "";

			if (!strcasecmp(cmd, "SCRIPT")) {
				atomic_fetch_add(&loads, 1);
				reply(fd, atomic_load(&refuse_load) ?
					  "-LOADING Redis is loading the dataset in memory\r\n" :
					  "$40\r\n" SHA "\r\n");
			} else if (!strcasecmp(cmd, "EVALSHA")) {
				const char *r = atomic_load(&eval_reply);

				atomic_fetch_add(&evals, 1);
				if (atomic_load(&close_on_eval)) {
					freeReplyObject(x);
					goto out;
				}
				if (atomic_load(&noscript_left) > 0) {
					atomic_fetch_sub(&noscript_left, 1);
					reply(fd, "-NOSCRIPT No matching script.\r\n");
				} else if (r) {
					reply(fd, r);
				}
			} else {
				reply(fd, "-ERR unknown command\r\n");
			}
			freeReplyObject(x);
			q = NULL;
		}
	}
out:
	redisReaderFree(rd);
	close(fd);
}

static void *fake_thread(void *arg)
{
	int fd;

	while ((fd = accept(listen_fd, NULL, NULL)) >= 0)
		serve(fd);
	return NULL;
}

static int setup(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	pthread_t t;

	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(listen_fd, 8) ||
	    getsockname(listen_fd, (struct sockaddr *)&a, &len))
		return -1;
	port = ntohs(a.sin_port);
	if (pthread_create(&t, NULL, fake_thread, NULL))
		return -1;
	pthread_detach(t);
	return 0;
}

static struct sl_central *client(void)
{
	char url[64];
	struct sl_central *c;

	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
	c = sl_central_new(url, 400);	/* commands wait 200 ms */
	assert_non_null(c);
	return c;
}

static struct sl_rule rule(unsigned algorithm)
{
	struct sl_rule r = { .name = "api", .limit = 4, .window_ms = 60000,
			     .slice_ms = 5000, .algorithm = algorithm,
			     .bucket_capacity = 4, .token_ns = 2000000000ULL,
			     .key_ipv4_prefix = 24, .key_ipv6_prefix = 64 };
	return r;
}

static int ask(struct sl_central *c, bool *allowed, struct sl_client_view *v)
{
	struct sl_rule r = rule(SL_ALGO_SLIDING);

	return sl_central_check(c, &r, "k:alice", 7, 1, allowed, v);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void test_central_answer_taken_in_its_exact_shape(void **state)
{
	struct sl_central *c = client();
	struct sl_central_stats st;
	struct sl_client_view v;
	bool allowed = false;

	atomic_store(&eval_reply, "*5\r\n:1\r\n:3\r\n:1\r\n:0\r\n:59000\r\n");
	assert_int_equal(ask(c, &allowed, &v), 0);
	assert_true(allowed);
	assert_int_equal(v.used, 3);
	assert_int_equal(v.remaining, 1);
	assert_int_equal(v.retry_after_ms, 0);
	assert_int_equal(v.reset_ms, 59000);
	atomic_store(&eval_reply, "*5\r\n:0\r\n:4\r\n:0\r\n:1500\r\n:1500\r\n");
	assert_int_equal(ask(c, &allowed, &v), 0);
	assert_false(allowed);
	assert_int_equal(v.retry_after_ms, 1500);
	sl_central_stats(c, &st);
	assert_true(st.up);
	assert_int_equal(st.errors, 0);
	sl_central_free(c);
}

/* A whole reply that is not the answer: an error, the connection kept. */
static void test_central_bad_replies_are_errors_not_decisions(void **state)
{
	static const char *const bad[] = {
		"*4\r\n:1\r\n:3\r\n:1\r\n:0\r\n",		/* too short */
		"*6\r\n:1\r\n:3\r\n:1\r\n:0\r\n:0\r\n:0\r\n",	/* too long */
		"*5\r\n:2\r\n:3\r\n:1\r\n:0\r\n:0\r\n",		/* allowed 2 */
		"*5\r\n:1\r\n:-3\r\n:1\r\n:0\r\n:0\r\n",	/* negative */
		"*5\r\n$1\r\n1\r\n:3\r\n:1\r\n:0\r\n:0\r\n",	/* a string */
		"*5\r\n*0\r\n:3\r\n:1\r\n:0\r\n:0\r\n",		/* nested */
		"*5\r\n$-1\r\n:3\r\n:1\r\n:0\r\n:0\r\n",	/* nil inside */
		"*-1\r\n",					/* nil array */
		"*0\r\n",
		":1\r\n",
		"+OK\r\n",
		"$5\r\nhello\r\n",
		"-ERR slicelimit check_sliding: bad arguments\r\n",
		"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
	};
	struct sl_central *c = client();
	struct sl_central_stats st;
	struct sl_client_view v;
	bool allowed;
	unsigned i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		atomic_store(&eval_reply, bad[i]);
		if (ask(c, &allowed, &v) != -EPROTO)
			fail_msg("reply %u (%s) not refused", i, bad[i]);
	}
	sl_central_stats(c, &st);
	assert_int_equal(st.errors, sizeof(bad) / sizeof(bad[0]));
	assert_true(st.up);			/* still in step */
	assert_int_equal(st.reconnects, 0);
	atomic_store(&eval_reply, "*5\r\n:1\r\n:1\r\n:3\r\n:0\r\n:60000\r\n");
	assert_int_equal(ask(c, &allowed, &v), 0);
	sl_central_free(c);
}

static void test_central_noscript_loads_and_sends_once_more(void **state)
{
	struct sl_central *c = client();
	struct sl_client_view v;
	bool allowed;
	int l0, e0;

	atomic_store(&eval_reply, "*5\r\n:1\r\n:1\r\n:3\r\n:0\r\n:60000\r\n");
	assert_int_equal(ask(c, &allowed, &v), 0);	/* connected */
	l0 = atomic_load(&loads);
	e0 = atomic_load(&evals);
	atomic_store(&noscript_left, 1);
	assert_int_equal(ask(c, &allowed, &v), 0);
	assert_true(allowed);
	assert_int_equal(atomic_load(&loads) - l0, 2);	/* both scripts */
	assert_int_equal(atomic_load(&evals) - e0, 2);
	/* NOSCRIPT again after the reload: an error, not a loop */
	atomic_store(&noscript_left, 2);
	assert_int_equal(ask(c, &allowed, &v), -EPROTO);
	atomic_store(&noscript_left, 0);
	sl_central_free(c);
}

/* Broken streams, silence, a closed connection: dropped, backed off. */
static void test_central_outage_drops_and_backs_off(void **state)
{
	struct sl_central *c = client();
	struct sl_central_stats st;
	struct sl_client_view v;
	bool allowed;

	atomic_store(&eval_reply, "*5\r\n:1\r\n:1\r\n:3\r\n:0\r\n:60000\r\n");
	assert_int_equal(ask(c, &allowed, &v), 0);

	atomic_store(&eval_reply, "!!! not RESP\r\n");	/* protocol error */
	assert_int_equal(ask(c, &allowed, &v), -EIO);
	sl_central_stats(c, &st);
	assert_false(st.up);
	/* backing off one interval (400 ms): no wait, no connection */
	atomic_store(&eval_reply, "*5\r\n:1\r\n:1\r\n:3\r\n:0\r\n:60000\r\n");
	assert_int_equal(ask(c, &allowed, &v), -EAGAIN);
	sleep_ms(450);
	assert_int_equal(ask(c, &allowed, &v), 0);
	sl_central_stats(c, &st);
	assert_true(st.up);
	assert_int_equal(st.reconnects, 1);

	atomic_store(&eval_reply, NULL);		/* silence: the timeout */
	assert_int_equal(ask(c, &allowed, &v), -EIO);
	sleep_ms(450);
	atomic_store(&eval_reply, "*5\r\n:1\r\n:1\r\n:3\r\n:0\r\n:60000\r\n");
	atomic_store(&close_on_eval, 1);		/* closed mid-command */
	assert_int_equal(ask(c, &allowed, &v), -EIO);
	atomic_store(&close_on_eval, 0);
	sleep_ms(450);

	/* a store that will not take the scripts: every try fails, and
	 * each waits twice as long as the one before, until one connects
	 * (from 400 ms after the close: 800, then 1600)
	 */
	atomic_store(&refuse_load, 1);
	assert_int_equal(ask(c, &allowed, &v), -EIO);
	sleep_ms(450);
	assert_int_equal(ask(c, &allowed, &v), -EAGAIN);
	sleep_ms(400);
	assert_int_equal(ask(c, &allowed, &v), -EIO);
	sleep_ms(900);
	assert_int_equal(ask(c, &allowed, &v), -EAGAIN);
	sleep_ms(750);
	atomic_store(&refuse_load, 0);
	assert_int_equal(ask(c, &allowed, &v), 0);
	assert_true(allowed);
	sl_central_stats(c, &st);
	assert_true(st.up);
	/* the protocol error, the silence, the close, two refusals */
	assert_int_equal(st.errors, 5);
	assert_int_equal(st.reconnects, 3);
	sl_central_free(c);
}

static void test_central_key_and_client_id(void **state)
{
	struct sl_rule r = rule(SL_ALGO_SLIDING_LOG), t = rule(SL_ALGO_SLIDING);
	char buf[400], big[300];

	assert_int_equal(sl_central_key(buf, sizeof(buf), &r, "k:alice", 7),
			 strlen("slc:{api:k:alice}:sliding-log:60000:5000"));
	assert_string_equal(buf, "slc:{api:k:alice}:sliding-log:60000:5000");
	assert_int_equal(sl_central_key(buf, 10, &r, "k:alice", 7), -ENAMETOOLONG);
	assert_int_equal(sl_central_key(buf, sizeof(buf), &r, "k:a\0b", 5),
			 -ENAMETOOLONG);

	/* an address under a rule without api_key_is_address is a key
	 * like any other: it never names an address's state
	 */
	assert_true(sl_check_central_id("10.1.2.3", &t, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "k:10.1.2.3");
	/* with it, addresses masked to the rule's prefix: one client, one id */
	t.api_key_is_address = 1;
	assert_true(sl_check_central_id("10.1.2.3", &t, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "ip:10.1.2.0/24");
	assert_true(sl_check_central_id("2001:db8:1:2:3::4", &t, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "ip:2001:db8:1:2::/64");
	t.key_ipv4_prefix = 32;
	assert_true(sl_check_central_id("10.1.2.3", &t, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "ip:10.1.2.3");
	/* anything else is a key of its own, never an address's id */
	assert_true(sl_check_central_id("ip:10.1.2.3", &t, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "k:ip:10.1.2.3");
	memset(big, 'x', 256);
	big[256] = 0;
	assert_int_equal(sl_check_central_id(big, &t, buf, sizeof(buf)), 258);
	assert_int_equal(sl_check_central_id(big, &t, buf, 100), -ENAMETOOLONG);
}

/* The id an API key is stored under: its keyed hash, the same on every
 * node with the same secret, another with another secret; an address's
 * id as it is.
 */
static void test_central_api_key_stored_under_keyed_hash(void **state)
{
	struct sl_central *a = sl_central_new("redis://127.0.0.1:1", 1000);
	struct sl_central *b = sl_central_new("redis://127.0.0.1:1", 1000);
	struct sl_central *o = sl_central_new("redis://127.0.0.1:1", 1000);
	uint8_t secret[SL_CENTRAL_SECRET], other[SL_CENTRAL_SECRET];
	char ia[64], ib[64], io[64], un[64];

	memset(secret, 0x5a, sizeof(secret));
	memset(other, 0xa5, sizeof(other));
	assert_int_equal(sl_central_client_id(a, "k:alice", 7, un, sizeof(un)),
			 3 + 2 * SL_CENTRAL_ID_HASH);
	sl_central_set_id_key(a, secret);
	sl_central_set_id_key(b, secret);
	sl_central_set_id_key(o, other);
	assert_int_equal(sl_central_client_id(a, "k:alice", 7, ia, sizeof(ia)),
			 3 + 2 * SL_CENTRAL_ID_HASH);
	sl_central_client_id(b, "k:alice", 7, ib, sizeof(ib));
	sl_central_client_id(o, "k:alice", 7, io, sizeof(io));
	assert_memory_equal(ia, "kh:", 3);
	assert_null(strstr(ia, "alice"));
	assert_string_equal(ia, ib);
	assert_string_not_equal(ia, io);
	assert_string_not_equal(ia, un);
	assert_int_equal(sl_central_client_id(a, "ip:10.1.2.0/24", 14, ia,
					      sizeof(ia)), 14);
	assert_string_equal(ia, "ip:10.1.2.0/24");
	assert_int_equal(sl_central_client_id(a, "k:alice", 7, ia, 20),
			 -ENAMETOOLONG);
	sl_central_free(a);
	sl_central_free(b);
	sl_central_free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_central_answer_taken_in_its_exact_shape),
		cmocka_unit_test(test_central_bad_replies_are_errors_not_decisions),
		cmocka_unit_test(test_central_noscript_loads_and_sends_once_more),
		cmocka_unit_test(test_central_outage_drops_and_backs_off),
		cmocka_unit_test(test_central_key_and_client_id),
		cmocka_unit_test(test_central_api_key_stored_under_keyed_hash),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
