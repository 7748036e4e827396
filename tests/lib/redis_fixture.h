/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The fixture of the tests/redis/test_redis_* binaries: two private
 * model-clock instances of the real object, A (node 1) and B (node 2),
 * with the same rules, each with the real sync engine over the Redis
 * backend, and a server of the test's own on a free port (started and
 * killed by pid): a redis-server, or a fake one (tests/lib/redis_fake.c)
 * for replies no real one gives. Model time is what the kernel and the
 * sync engine see; the store's expiries run on its own clock.
 */
#ifndef SL_TEST_REDIS_FIXTURE_H
#define SL_TEST_REDIS_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <hiredis/hiredis.h>
#include "slicelimit.h"
#include "util/clock.h"
#include "instance/instance.h"
#include "sync/engine.h"
#include "sync/redis.h"

#define INTERVAL_MS	1000
#define WINDOW_MS	60000
#define SLICE_MS	4000	/* sl_peer_slice_ms(60 s): ceil(60000 / 15) */
/* A TAI-like time, so slice numbers are as large as in service */
#define T0		1700000000000ULL
#define ULL(x)		((unsigned long long)(x))

#define NET_API		77
#define NET_BULK	78
#define NET_LOG		79
#define NET_COUNTER	80
#define NET_BUCKET	81
/* the bucket's peer slices: 20 refills of 10 x 100 s over 15 slices */
#define BUCKET_SLICE_MS	1333334
#define DPORT		9

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
	FAKE_DIRECTOR,		/* CLUSTER SLOTS: every slot on the trap */
	FAKE_MOVED,		/* CLUSTER SLOTS: every slot here; scripts
				 * answer MOVED to the trap */
	FAKE_TRICKLE,		/* scripts answered a byte every 40 ms */
	FAKE_FLOOD,		/* scripts answered with a 150 MB string */
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
	/* the trap: a second server no config names, and what reached it */
	volatile int port, trap_port;
	volatile int trap_conns, trap_auths;
	/* round scripts that carried each client (by its number) */
	volatile unsigned char pushed[65536];
};

struct node {
	struct sl_instance in;
	bool open;
	struct sl_sync_engine *sync;
	struct sl_redis *redis;
};

struct fixture {
	struct node a, b;
	char dir[64];
	int port;
	pid_t server;		/* redis-server or the fake; 0: none */
	pid_t trap;		/* the fake's trap; 0: none */
	bool have_redis;
	char url[64];
	__u64 now;		/* model ms */
	unsigned test_no;
	unsigned next_client;
	struct fake *fake;
};

extern struct fixture fx;
redisReply *command(const char *fmt, ...);
redisReply *command_at(int port, const char *fmt, ...);
void stop_server(void);
int start_redis(void);
struct sl_sync_status *status(struct node *n);
struct sl_addr new_client(unsigned net);
unsigned send_n(struct node *n, const struct sl_addr *who,
		unsigned count);
uint64_t round_on(struct node *n);
void step(void);
void rounds(const char *order);
int node_start(struct node *n, unsigned id);
void node_stop(struct node *n);
int group_teardown(void **state);
int group_setup(void **state);
int begin_redis(void **state);
int begin_redis_auth(void **state);
int begin_fake(void **state);
int begin_none(void **state);
int end(void **state);
void need_redis(void);
void bulk_key(const struct sl_addr *who, char *key, size_t len);

/* the fake server (tests/lib/redis_fake.c) */
unsigned ref_slot(const char *key, size_t len);
int start_fake(void);

#endif /* SL_TEST_REDIS_FIXTURE_H */
