/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the Redis backend (sync/redis.h): its state and the functions
 * its files share, each file one job:
 *   redis.c          the backend: its URL, login, making and freeing it
 *   redis_round.c    a round: push the deltas, read the totals, merge
 *   redis_index.c    the index of clients pushed lately, and the cursor
 *   redis_command.c  a script call: arguments, NOSCRIPT/MOVED/ASK
 *   redis_scripts.c  the Lua scripts (user/sync/lua/) loaded at connect
 *   redis_cluster.c  connecting, the Cluster slot map, the connection per
 *                    master (built on redis_link.c, never the other way)
 *   redis_link.c     one connection, AUTH, and the outage with its backoff
 *   redis_bounded.c  one command within its deadline and reply cap
 *   redis_expiry.c   how long the hashes and the index keep a push
 *   redis_keys.c     the client hash names, ids and their Cluster slot
 */
#ifndef SL_SYNC_REDIS_INTERNAL_H
#define SL_SYNC_REDIS_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <hiredis/hiredis.h>
#include "util/clock.h"
#include "util/grow.h"
#include "util/log.h"
#include "sl_peer.h"
#include "sync/redis.h"

#define SL_REDIS_BATCH		64	/* client hashes per script call */
#define SL_REDIS_LEARN_MAX	16384	/* clients read from the index per round */
#define SL_REDIS_MAX_ENTRIES	(1u << 18)	/* collected + kept: 10 MiB */
#define SL_REDIS_BACKOFF_MAX_MS	5000
#define SL_REDIS_TIMEOUT_MIN_MS	50
#define SL_REDIS_EPOCH_ROUNDS	600
#define SL_REDIS_RULE_SLOTS	2048	/* > SL_MAX_RULES, a power of two */
#define SL_REDIS_KEY_MAX	56	/* "sl:{" 8 ":" 32 ":" 5 "}" + NUL = 53 */

#define SL_REDIS_MAX_NODES	64	/* Cluster masters (< 0xff) */
#define SL_REDIS_MAX_SEEDS	128
#define SL_REDIS_REDIRECTS	3	/* MOVED/ASK hops per command */

#define INDEX_KEY		"sl:{index}"
#define INDEX_TAG		"index"
#define INDEX_CLOCK_KEY		"sl:{index}:clock"

/* A client of this round: what it pushes (entries [first, first + n) of
 * the round's array; n == 0: only read) and where its totals go.
 */
struct client {
	char key[SL_REDIS_KEY_MAX];	/* "sl:{id}" */
	uint8_t key_len;
	bool done;			/* pushed or given up: not kept */
	uint16_t slot;			/* Cluster hash slot of the id */
	struct sl_wire_entry who;	/* addr, rule_hash, dport */
	uint32_t first, n;
	uint32_t pos;			/* learned: place in the index read */
};

struct redis_addr {
	char host[256];
	int port;
};

/* A server the round talks to; its connection is opened at first use. */
struct redis_node {
	struct redis_addr a;
	redisContext *c;
};

/* Per rule name hash: the gcd of the slice starts pushed this epoch and
 * in the last one (0: none), the basis of its hashes' expiry.
 */
struct rule_slices {
	uint32_t hash;
	bool used;
	uint64_t g_cur, g_last;
};

struct sl_redis {
	char host[256];
	int port;
	char where[300];		/* "HOST:PORT" for messages */
	char *user, *pass;		/* AUTH; pass NULL: none */
	unsigned node;
	unsigned interval_ms;
	struct sl_redis_limits lim;	/* every command's */

	redisContext *c;		/* the node of the command at hand */
	bool up;			/* connected (the map read, if a Cluster) */
	/* Cluster: the masters and who serves each slot (0xff: nobody);
	 * standalone: nodes[0] is the URL's server and serves every slot
	 */
	bool cluster;
	bool want_cluster;		/* sync.cluster: false, never a Cluster */
	/* the nodes a Cluster may send us to besides the URL's (configured) */
	struct redis_addr allowed[SL_REDIS_MAX_SEEDS];
	unsigned nr_allowed;
	unsigned long long refused;	/* redirects and map nodes refused */
	bool map_stale;			/* a MOVED said the map is old */
	struct redis_node nodes[SL_REDIS_MAX_NODES];
	unsigned nr_nodes;
	uint8_t slot_node[16384];
	/* every node a map named (masters and replicas): where to find the
	 * Cluster when the URL's node is gone
	 */
	struct redis_addr seeds[SL_REDIS_MAX_SEEDS];
	unsigned nr_seeds;
	char sha_round[41], sha_index[41];
	bool ever_up;			/* connected once: later ones reconnect */
	bool down_logged;		/* the outage was reported */
	bool per_slot;			/* the server refused mixed slots */
	char why[160];			/* what went wrong, for the log */
	struct sl_sync_store store;	/* for the engine's status */
	uint64_t backoff_ms, retry_ms;
	uint64_t rounds;

	/* the index cursor: every id scored below `from`, and the first
	 * `offset` of those scored `from`, have been read
	 */
	uint64_t from;
	uint64_t offset;
	/* what the last index read returned: its time, and the score of
	 * each member in index order
	 */
	uint64_t index_now;
	uint64_t *scores;
	size_t nr_members, cap_scores;

	struct rule_slices rules[SL_REDIS_RULE_SLOTS];

	/* the round: entries kept from earlier rounds, then collected */
	struct sl_sync_entries ent, spare;
	struct client *push, *learn;
	size_t nr_push, cap_push, nr_learn, cap_learn;
	struct sl_wire_entry *totals;	/* a batch's decoded totals */
	size_t cap_totals;

	/* a command's arguments */
	const char **argv;
	size_t *argvlen;
	char (*num)[24];
	size_t cap_args;
};

enum {
	RUN_OK = 0,
	RUN_FAILED = -1,	/* the connection is gone (redis_went_down) */
	RUN_SPLIT = -2,		/* CROSSSLOT: send again cut per slot */
};

/* redis_keys.c */
void redis_client_init(struct client *c, const struct sl_wire_entry *who);
int redis_client_parse(struct client *c, const char *id, size_t len);
int redis_client_cmp(const void *a, const void *b);
int redis_entry_cmp(const void *a, const void *b);
bool redis_same_client(const struct sl_wire_entry *x,
		       const struct sl_wire_entry *y);
uint16_t redis_index_slot(void);

/* redis_expiry.c */
void redis_expiry_note(struct sl_redis *r, const struct sl_wire_entry *e);
uint64_t redis_ttl_ms(struct sl_redis *r, uint32_t rule_hash);
uint64_t redis_index_keep_ms(struct sl_redis *r);
void redis_new_epoch(struct sl_redis *r);

/* redis_link.c */
void redis_drop_all(struct sl_redis *r);
void redis_went_down(struct sl_redis *r, uint64_t now_ms, const char *what,
		     const char *reason);
redisContext *redis_open_ctx(struct sl_redis *r, const char *host, int port);
void redis_reply_failed(struct sl_redis *r, uint64_t now_ms,
			const redisReply *x);

bool redis_node_allowed(struct sl_redis *r, const char *host, int port,
			const char *who);

static inline bool redis_addr_eq(const struct redis_addr *a,
				 const char *host, int port)
{
	return a->port == port && !strcmp(a->host, host);
}

/* redis_cluster.c */
int redis_connect(struct sl_redis *r, uint64_t now_ms);
int redis_read_map(struct sl_redis *r, redisContext *c, const char *asked,
		   int asked_port);
int redis_use_node(struct sl_redis *r, unsigned i);
int redis_use_slot(struct sl_redis *r, uint16_t slot);
int redis_refresh_map(struct sl_redis *r);
int redis_redirect_node(struct sl_redis *r, const redisReply *x);

/* redis_scripts.c */
int redis_load_scripts(struct sl_redis *r);

/* redis_command.c */
int redis_args_room(struct sl_redis *r, size_t n);
void redis_arg_str(struct sl_redis *r, size_t *n, const char *s, size_t len);
void redis_arg_u64(struct sl_redis *r, size_t *n, uint64_t v);
bool redis_error_is(const redisReply *x, const char *code);
redisReply *redis_evalsha(struct sl_redis *r, size_t n, uint16_t slot);

/* redis_index.c */
int redis_index_call(struct sl_redis *r, uint64_t now_ms, bool add);
void redis_advance_cursor(struct sl_redis *r, size_t k);

#endif /* SL_SYNC_REDIS_INTERNAL_H */
