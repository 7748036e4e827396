// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Redis backend of the sync engine (the promise: sync/redis.h).
 *
 * Layout in the store
 *   sl:{RRRRRRRR:AAAA...AAAA:PORT}   one hash per client: rule name hash
 *       (8 hex), address (32 hex, IPv4-mapped for IPv4), destination port
 *       (decimal, host order; 0 when the rule does not key by port).
 *       Field "START:NODE" holds the units NODE accepted in the peer slice
 *       that began at START (TAI ms). The whole id is the hash tag, so a
 *       client's fields sit in one Cluster slot and one script may touch
 *       them atomically.
 *   sl:{index}   sorted set of the client ids pushed lately, scored by the
 *       store's own clock (µs, made strictly increasing by
 *       sl:{index}:clock, the same slot), so every node reads "what changed
 *       since I last looked" against one clock, whatever the nodes' clocks
 *       say.
 *
 * A round (one per interval, on the sync thread):
 *   1. read the index from this node's cursor: the clients any node pushed
 *      since (at most SL_REDIS_LEARN_MAX);
 *   2. collect this node's deltas (sl_sync_collect_entries) and push them
 *      with the round script, SL_REDIS_BATCH client hashes per call: it
 *      HINCRBYs this node's fields, keeps the newest SL_PEER_SLOTS slices,
 *      sets the expiry, and returns the other nodes' totals per slice;
 *   3. add the pushed clients to the index;
 *   4. read the totals of the clients learned in 1 and not pushed in 2
 *      (the same script with nothing to add), and move the cursor past
 *      what was read;
 *   5. (in 2 and 4) merge the totals with sl_sync_merge_totals, which sets
 *      the slot: a total read twice counts once.
 * Pushing (2) before indexing (3), and reading the index (1) before the
 * hashes (2, 4), mean that a node which learns of a client reads data at
 * least as new as the push that indexed it; a push it raced with moves
 * the client's score past the cursor, so the next round reads it again.
 *
 * Only ever this node's own fields are written and only others' are read,
 * so an own unit is never counted twice. A batch whose reply was lost may
 * or may not have been applied: it is never sent again, since the peers'
 * part must stay a lower bound (NFR-2), and an undercount only fails open.
 *
 * Every algorithm's entries are alike here (include/sl_peer.h): units per
 * peer slice of the rule, counted for at most SL_PEER_SLOTS slices after
 * the slice's start (sl_peer_keep_ms: a window for the sums, the window
 * and one slice for the weighted counter, the 16 slices of a bucket's
 * horizon).
 *
 * Expiry. The entries do not carry the rule's window, but their slice
 * starts are multiples of the rule's slice length ps (sl_peer_slice_of;
 * ceil(W / 15) for the sums), so the gcd g of the starts a node pushed
 * for a rule is a multiple of ps, and SL_PEER_SLOTS * g >= keep. A hash lives that long (plus two
 * intervals) after its last push, by when every slice in it has left the
 * window of every node reading it. g comes down to ps once two
 * neighbouring slices were pushed; until then it is larger and the expiry
 * longer (at most the longest window the rules allow). Each push sets the
 * expiry rather than extending it: every node's bound covers the window
 * from this push, which comes after the pushes of the fields already
 * there, so a tight bound may replace a loose one. g is recomputed every
 * SL_REDIS_EPOCH_ROUNDS rounds to follow a rule whose window changes; in
 * the epoch of the change a longer window can get a shorter expiry, which
 * only undercounts (fails open). Fields older than a hash's newest
 * SL_PEER_SLOTS slices are dropped at each push: such a slice began at
 * least 16 slices before one that has begun, so it has left every window
 * (keep <= 16 ps).
 *
 * An unreachable or misbehaving store is a peer outage: the round stops at
 * the first error, the context is dropped, and reconnects are tried with a
 * backoff from one interval, doubling up to SL_REDIS_BACKOFF_MAX_MS. Until
 * then rounds return at once and do not collect, so what the node accepts
 * meanwhile stays in its counters and is pushed on reconnect (while still
 * in the window). Deltas collected but not yet sent when a round stops are
 * kept for the next push (up to SL_REDIS_MAX_ENTRIES); only the batch in
 * flight is given up. Every command has a timeout of half an interval (at
 * least 50 ms), and a round that runs past its interval leaves the rest of
 * its pushes and reads to the next, so the sync thread is back within
 * about an interval. The data path never waits for any of it.
 *
 * Redis Cluster: a script call touches one slot only if its keys share
 * one, and must go to the master serving it. At connect the URL's
 * server is asked for CLUSTER SLOTS: a standalone server (or a proxy:
 * anything that is not a slot map) serves every slot on the one
 * connection; a Cluster's masters get a connection each, opened at first
 * use (AUTH and the scripts loaded there too), and every batch is cut
 * per slot (CRC16 of the hash tag, as Cluster computes it) and sent to
 * the slot's master. MOVED (a failover or resharding) is followed to
 * the master it names and the map is read again before the next round;
 * ASK is followed with ASKING; all are refused before the script runs,
 * so following them applies a batch once. Any other failure is the
 * outage above (all connections dropped); the reconnect asks the URL's
 * server and then every node the last map named (masters and replicas),
 * so a fleet pointed at a master that died finds the promoted replica.
 * Batches to a standalone server mix slots (cheaper) until it answers
 * CROSSSLOT (a Cluster proxy); from then on they are cut per slot.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include "core/log.h"
#include "lua/sync_index.lua.h"
#include "lua/sync_round.lua.h"
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

/*
 * KEYS: client hashes. ARGV: node, slices to keep, then for each key:
 * expiry (ms), n, and n pairs (slice start, units) to add. Returns for
 * each key the other nodes' units per slice start, flat: {s, u, s, u}.
 * A key with n = 0 is only read: its expiry is left alone.
 * (sl_lua_sync_round, from user/sync/lua/sync_round.lua.)
 */

/*
 * KEYS: the index and its clock. ARGV: from (score), offset, limit (0:
 * read nothing), keep (µs; 0: no trim), then client ids to add. Reads
 * before adding, so a node does not read back what it adds. Returns
 * {now, {id, score, id, score, ...}} with now the score of this call,
 * strictly above every earlier call's (the store's clock may step back).
 * (sl_lua_sync_index, from user/sync/lua/sync_index.lua.)
 */

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
	unsigned interval_ms, timeout_ms;

	redisContext *c;		/* the node of the command at hand */
	bool up;			/* connected (the map read, if a Cluster) */
	/* Cluster: the masters and who serves each slot (0xff: nobody);
	 * standalone: nodes[0] is the URL's server and serves every slot
	 */
	bool cluster;
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

/* ---- small helpers ---- */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* Redis Cluster's key slot: CRC16-CCITT (XMODEM) of the hash tag. */
static uint16_t cluster_slot(const char *tag, size_t len)
{
	uint16_t crc = 0;
	size_t i;
	int b;

	for (i = 0; i < len; i++) {
		crc ^= (uint16_t)(uint8_t)tag[i] << 8;
		for (b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
	}
	return crc & 16383;
}

static void client_init(struct client *c, const struct sl_wire_entry *who)
{
	static const char hex[] = "0123456789abcdef";
	char *p = c->key;
	int i, n;

	memset(c, 0, sizeof(*c));
	c->who.addr = who->addr;
	c->who.rule_hash = who->rule_hash;
	c->who.dport = who->dport;
	n = snprintf(p, sizeof(c->key), "sl:{%08x:", who->rule_hash);
	for (i = 0; i < 16; i++) {
		p[n++] = hex[who->addr.byte[i] >> 4];
		p[n++] = hex[who->addr.byte[i] & 15];
	}
	n += snprintf(p + n, sizeof(c->key) - n, ":%u}", ntohs(who->dport));
	c->key_len = n;
	c->slot = cluster_slot(c->key + 4, n - 5);
}

static int hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* An id read from the index, as client_init would have written it; a
 * member in any other form (not ours, or damaged) is refused.
 */
static int client_parse(struct client *c, const char *id, size_t len)
{
	struct sl_wire_entry who;
	size_t i;
	unsigned port = 0;
	int hi, lo;

	if (len < 8 + 1 + 32 + 1 + 1 || len > 8 + 1 + 32 + 1 + 5 ||
	    id[8] != ':' || id[41] != ':')
		return -EINVAL;
	memset(&who, 0, sizeof(who));
	for (i = 0; i < 8; i++) {
		if ((hi = hex_digit(id[i])) < 0)
			return -EINVAL;
		who.rule_hash = who.rule_hash << 4 | hi;
	}
	for (i = 0; i < 16; i++) {
		hi = hex_digit(id[9 + 2 * i]);
		lo = hex_digit(id[10 + 2 * i]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		who.addr.byte[i] = hi << 4 | lo;
	}
	for (i = 42; i < len; i++) {
		if (id[i] < '0' || id[i] > '9')
			return -EINVAL;
		port = port * 10 + (id[i] - '0');
	}
	if (port > 65535 || (id[42] == '0' && len > 43))
		return -EINVAL;
	who.dport = htons(port);
	client_init(c, &who);
	/* the canonical form only: one client, one hash */
	if ((size_t)c->key_len - 5 != len || memcmp(c->key + 4, id, len))
		return -EINVAL;
	return 0;
}

static int client_cmp(const void *a, const void *b)
{
	const struct client *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	if (x->key_len != y->key_len)
		return x->key_len < y->key_len ? -1 : 1;
	return memcmp(x->key, y->key, x->key_len);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct sl_wire_entry *x = a, *y = b;
	int d;

	if (x->rule_hash != y->rule_hash)
		return x->rule_hash < y->rule_hash ? -1 : 1;
	d = memcmp(&x->addr, &y->addr, sizeof(x->addr));
	if (d)
		return d;
	if (x->dport != y->dport)
		return x->dport < y->dport ? -1 : 1;
	if (x->start_ms != y->start_ms)
		return x->start_ms < y->start_ms ? -1 : 1;
	return 0;
}

static bool same_client(const struct sl_wire_entry *x,
			const struct sl_wire_entry *y)
{
	return x->rule_hash == y->rule_hash && x->dport == y->dport &&
	       !memcmp(&x->addr, &y->addr, sizeof(x->addr));
}

/* ---- expiry from the slices pushed ---- */

static struct rule_slices *rule_slices(struct sl_redis *r, uint32_t hash,
				       bool add)
{
	size_t i = (hash * 2654435761u) & (SL_REDIS_RULE_SLOTS - 1), n;

	for (n = 0; n < SL_REDIS_RULE_SLOTS; n++) {
		struct rule_slices *rs = &r->rules[i];

		if (rs->used && rs->hash == hash)
			return rs;
		if (!rs->used) {
			if (!add)
				return NULL;
			rs->used = true;
			rs->hash = hash;
			return rs;
		}
		i = (i + 1) & (SL_REDIS_RULE_SLOTS - 1);
	}
	return NULL;	/* more rule names than rules: the longest expiry */
}

/* The longest a hash need live: the longest window's slices (a one-slice
 * counter's two windows), and margin.
 */
static uint64_t ttl_cap_ms(const struct sl_redis *r)
{
	uint64_t slices = SL_PEER_SLOTS * sl_peer_slice_ms(SL_MAX_WINDOW_MS);

	return (slices > 2 * SL_MAX_WINDOW_MS ? slices : 2 * SL_MAX_WINDOW_MS) +
	       2ull * r->interval_ms;
}

static uint64_t ttl_ms(struct sl_redis *r, uint32_t rule_hash)
{
	const struct rule_slices *rs = rule_slices(r, rule_hash, false);
	uint64_t g = 0, ttl;

	if (rs)
		g = rs->g_cur > rs->g_last ? rs->g_cur : rs->g_last;
	if (!g || g > ttl_cap_ms(r) / SL_PEER_SLOTS)
		return ttl_cap_ms(r);
	ttl = SL_PEER_SLOTS * g + 2ull * r->interval_ms;
	return ttl < ttl_cap_ms(r) ? ttl : ttl_cap_ms(r);
}

/* How long the index keeps an id: as long as the longest-lived hash this
 * node writes. 0 (no trim) before it wrote any.
 */
static uint64_t index_keep_ms(struct sl_redis *r)
{
	uint64_t keep = 0, t;
	size_t i;

	for (i = 0; i < SL_REDIS_RULE_SLOTS; i++) {
		if (!r->rules[i].used)
			continue;
		t = ttl_ms(r, r->rules[i].hash);
		if (t > keep)
			keep = t;
	}
	return keep;
}

static void new_epoch(struct sl_redis *r)
{
	size_t i;

	for (i = 0; i < SL_REDIS_RULE_SLOTS; i++) {
		struct rule_slices *rs = &r->rules[i];

		/* a rule with no push this epoch keeps what it knew */
		if (rs->used && rs->g_cur) {
			rs->g_last = rs->g_cur;
			rs->g_cur = 0;
		}
	}
}

/* ---- connection ---- */

int sl_redis_url_parse(const char *url, char *host, size_t host_size,
		       int *port_out)
{
	const char *h, *end, *p;
	char *e;
	unsigned long port = 6379;
	size_t len;

	if (strncmp(url, "redis://", 8))
		return -EINVAL;
	h = url + 8;
	if (*h == '[') {
		end = strchr(++h, ']');
		if (!end)
			return -EINVAL;
		p = end + 1;
	} else {
		end = h + strcspn(h, ":/");
		p = end;
	}
	len = end - h;
	if (!len || len >= host_size || memchr(h, '@', len))
		return -EINVAL;
	if (*p == ':') {
		if (p[1] < '0' || p[1] > '9')
			return -EINVAL;
		errno = 0;
		port = strtoul(p + 1, &e, 10);
		if (e == p + 1 || errno || !port || port > 65535)
			return -EINVAL;
		p = e;
	}
	if (*p == '/')
		p++;
	if (*p)
		return -EINVAL;	/* no database, user or options: not used */
	memcpy(host, h, len);
	host[len] = 0;
	*port_out = port;
	return 0;
}

static int parse_url(struct sl_redis *r, const char *url)
{
	if (sl_redis_url_parse(url, r->host, sizeof(r->host), &r->port))
		return -EINVAL;
	snprintf(r->where, sizeof(r->where), "%s%s%s:%d",
		 strchr(r->host, ':') ? "[" : "", r->host,
		 strchr(r->host, ':') ? "]" : "", r->port);
	return 0;
}

/* Every connection: after any failure the map is read again. */
static void drop_context(struct sl_redis *r)
{
	unsigned i;

	for (i = 0; i < r->nr_nodes; i++) {
		if (r->nodes[i].c)
			redisFree(r->nodes[i].c);
		r->nodes[i].c = NULL;
	}
	r->nr_nodes = 0;
	r->c = NULL;
	r->up = false;
}

/* Any failure: drop the connection (a reply we cannot trust leaves us
 * unsure where in the stream we are), count it, and back off.
 */
static void went_down(struct sl_redis *r, uint64_t now_ms, const char *what,
		      const char *reason)
{
	char why[sizeof(r->why)];

	/* the reason may live in the context about to go */
	snprintf(why, sizeof(why), "%s", reason);
	drop_context(r);
	r->store.up = false;
	r->store.errors++;
	if (!r->backoff_ms)
		r->backoff_ms = r->interval_ms;
	else if (r->backoff_ms < SL_REDIS_BACKOFF_MAX_MS)
		r->backoff_ms *= 2;
	if (r->backoff_ms > SL_REDIS_BACKOFF_MAX_MS)
		r->backoff_ms = SL_REDIS_BACKOFF_MAX_MS;
	r->retry_ms = now_ms + r->backoff_ms;
	if (!r->down_logged)
		pr_warn("sync: redis at %s %s: %s", r->where, what, why);
	else
		pr_debug("sync: redis at %s %s: %s", r->where, what, why);
	r->down_logged = true;
}

static int load_script(struct sl_redis *r, const char *src, char sha[41])
{
	redisReply *x;
	size_t i;
	int err = -EPROTO;

	x = redisCommand(r->c, "SCRIPT LOAD %s", src);
	if (x && x->type == REDIS_REPLY_STRING && x->len == 40) {
		err = 0;
		for (i = 0; i < 40; i++)
			if (hex_digit(x->str[i]) < 0)
				err = -EPROTO;
		if (!err)
			memcpy(sha, x->str, 41);
	}
	/* the server's words (NOAUTH, LOADING, ...), if any */
	if (err && x && x->type == REDIS_REPLY_ERROR)
		snprintf(r->why, sizeof(r->why), "SCRIPT LOAD: %.*s",
			 (int)(x->len < 120 ? x->len : 120), x->str);
	else if (err)
		snprintf(r->why, sizeof(r->why), "SCRIPT LOAD: unexpected reply");
	freeReplyObject(x);
	return err;
}

static int load_scripts(struct sl_redis *r)
{
	int err = load_script(r, sl_lua_sync_round, r->sha_round);

	return err ? err : load_script(r, sl_lua_sync_index, r->sha_index);
}

static const char *context_error(const struct sl_redis *r)
{
	if (r->c && r->c->err)
		return r->c->errstr;
	return r->why[0] ? r->why : "unexpected reply";
}

/* A connection to host:port with the command timeout, logged in; NULL
 * with the reason in r->why.
 */
static redisContext *open_ctx(struct sl_redis *r, const char *host, int port)
{
	struct timeval tv = {
		.tv_sec = r->timeout_ms / 1000,
		.tv_usec = (r->timeout_ms % 1000) * 1000,
	};
	redisContext *c;

	/* the name is resolved in here too; a resolver that hangs is the
	 * one wait this bounds only by its own timeouts
	 */
	c = redisConnectWithTimeout(host, port, tv);
	if (!c || c->err) {
		snprintf(r->why, sizeof(r->why), "%s:%d: %s", host, port,
			 c ? c->errstr : "out of memory");
		goto fail;
	}
	if (redisSetTimeout(c, tv) != REDIS_OK) {
		snprintf(r->why, sizeof(r->why), "%s:%d: %s", host, port,
			 c->errstr);
		goto fail;
	}
	redisEnableKeepAlive(c);
	if (sl_redis_auth(c, r->user, r->pass, r->why, sizeof(r->why)))
		goto fail;
	return c;
fail:
	if (c)
		redisFree(c);
	return NULL;
}

static bool addr_eq(const struct redis_addr *a, const char *host, int port)
{
	return a->port == port && !strcmp(a->host, host);
}

static void seed_add(struct sl_redis *r, const char *host, int port)
{
	unsigned i;

	if (port == r->port && !strcmp(host, r->host))
		return;	/* the URL's: always tried first */
	for (i = 0; i < r->nr_seeds; i++)
		if (addr_eq(&r->seeds[i], host, port))
			return;
	if (r->nr_seeds == SL_REDIS_MAX_SEEDS)
		return;
	snprintf(r->seeds[r->nr_seeds].host, sizeof(r->seeds[0].host), "%s",
		 host);
	r->seeds[r->nr_seeds++].port = port;
}

/* One "host, port, id" of a CLUSTER SLOTS range into a; an empty host
 * is the server that answered.
 */
static bool slots_addr(const redisReply *e, const char *asked,
		       struct redis_addr *a)
{
	if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
	    e->element[0]->type != REDIS_REPLY_STRING ||
	    e->element[1]->type != REDIS_REPLY_INTEGER ||
	    e->element[1]->integer <= 0 || e->element[1]->integer > 65535 ||
	    e->element[0]->len >= sizeof(a->host))
		return false;
	snprintf(a->host, sizeof(a->host), "%s",
		 e->element[0]->len ? e->element[0]->str : asked);
	a->port = e->element[1]->integer;
	return true;
}

/* Ask `c` (a server at `asked`) for the slot map. 1: a Cluster, whose
 * masters and slots are now r->nodes and r->slot_node (connections to
 * masters kept from before, and `c` itself if it is one, carried over);
 * 0: a standalone server (c is left alone); -1: no usable answer (why).
 * `c` is taken over on 1.
 */
static int read_map(struct sl_redis *r, redisContext *c, const char *asked,
		    int asked_port)
{
	struct redis_node fresh[SL_REDIS_MAX_NODES];
	uint8_t *map = NULL;
	unsigned nr = 0, i, k;
	redisReply *x;
	size_t j;
	int ret = -1;

	/* a standalone server says "cluster support disabled"; a proxy may
	 * say anything: whatever is not a map is a server of every slot
	 */
	x = redisCommand(c, "CLUSTER SLOTS");
	if (x && x->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(x);
		return 0;
	}
	if (!x || x->type != REDIS_REPLY_ARRAY || !x->elements) {
		snprintf(r->why, sizeof(r->why), "CLUSTER SLOTS at %s:%d: %s",
			 asked, asked_port, !x ? (c->err ? c->errstr : "no reply") :
			 x->type == REDIS_REPLY_ERROR ? x->str : "no slots");
		goto out;
	}
	map = malloc(sizeof(r->slot_node));
	if (!map) {
		snprintf(r->why, sizeof(r->why), "out of memory");
		goto out;
	}
	memset(map, 0xff, sizeof(r->slot_node));
	memset(fresh, 0, sizeof(fresh));
	for (j = 0; j < x->elements; j++) {
		const redisReply *e = x->element[j];
		struct redis_addr a;
		long long lo, hi, s;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER ||
		    !slots_addr(e->element[2], asked, &a)) {
			snprintf(r->why, sizeof(r->why),
				 "CLUSTER SLOTS: a range of an unexpected form");
			goto out;
		}
		lo = e->element[0]->integer;
		hi = e->element[1]->integer;
		if (lo < 0 || hi > 16383 || lo > hi) {
			snprintf(r->why, sizeof(r->why),
				 "CLUSTER SLOTS: range %lld-%lld", lo, hi);
			goto out;
		}
		for (i = 0; i < nr && !addr_eq(&fresh[i].a, a.host, a.port); i++)
			;
		if (i == nr) {
			if (nr == SL_REDIS_MAX_NODES) {
				snprintf(r->why, sizeof(r->why),
					 "CLUSTER SLOTS: more than %d masters",
					 SL_REDIS_MAX_NODES);
				goto out;
			}
			fresh[nr++].a = a;
		}
		for (s = lo; s <= hi; s++)
			map[s] = i;
		seed_add(r, a.host, a.port);
		for (k = 3; k < e->elements; k++)
			if (slots_addr(e->element[k], asked, &a))
				seed_add(r, a.host, a.port);
	}
	/* connections that still lead to a master are kept */
	for (i = 0; i < nr; i++) {
		for (k = 0; k < r->nr_nodes; k++)
			if (r->nodes[k].c &&
			    addr_eq(&r->nodes[k].a, fresh[i].a.host,
				    fresh[i].a.port)) {
				fresh[i].c = r->nodes[k].c;
				r->nodes[k].c = NULL;
				break;
			}
		if (!fresh[i].c && addr_eq(&fresh[i].a, asked, asked_port)) {
			fresh[i].c = c;
			c = NULL;
		}
	}
	for (k = 0; k < r->nr_nodes; k++)
		if (r->nodes[k].c)
			redisFree(r->nodes[k].c);
	memcpy(r->nodes, fresh, sizeof(fresh));
	r->nr_nodes = nr;
	memcpy(r->slot_node, map, sizeof(r->slot_node));
	r->cluster = true;
	r->per_slot = true;	/* a script's keys must share a slot */
	r->map_stale = false;
	r->c = NULL;
	if (c)
		redisFree(c);
	ret = 1;
out:
	free(map);
	freeReplyObject(x);
	return ret;
}

/* The connection of node i, opened (and the scripts loaded) at first
 * use, as r->c. 0, or -EIO with the reason in r->why.
 */
static int use_node(struct sl_redis *r, unsigned i)
{
	struct redis_node *n = &r->nodes[i];

	if (!n->c) {
		n->c = open_ctx(r, n->a.host, n->a.port);
		if (!n->c) {
			r->c = NULL;
			return -EIO;
		}
		r->c = n->c;
		if (load_scripts(r)) {
			if (r->c->err)
				snprintf(r->why, sizeof(r->why), "%s",
					 r->c->errstr);
			redisFree(n->c);
			n->c = NULL;
			r->c = NULL;
			return -EIO;
		}
	}
	r->c = n->c;
	return 0;
}

/* r->c for a command on keys of `slot`. */
static int use_slot(struct sl_redis *r, uint16_t slot)
{
	if (!r->cluster)
		return use_node(r, 0);
	if (r->slot_node[slot] >= r->nr_nodes) {
		snprintf(r->why, sizeof(r->why),
			 "Cluster slot %u is served by no master", slot);
		r->c = NULL;
		return -EIO;
	}
	return use_node(r, r->slot_node[slot]);
}

static uint16_t index_slot(void)
{
	return cluster_slot(INDEX_TAG, strlen(INDEX_TAG));
}

/* Connect: the URL's server, or if it is gone (a Cluster master that
 * failed over), each node the last map named, until one answers (for
 * about an interval; the next attempt starts from the URL again); a
 * Cluster's map is read there. The index's node is opened at once, so
 * a server that refuses the scripts is an outage now.
 */
static int connect_now(struct sl_redis *r, uint64_t now_ms)
{
	char first[sizeof(r->why)] = "";
	redisContext *c = NULL;
	const char *host = r->host;
	int port = r->port, ret = -1;
	unsigned i;

	uint64_t until = mono_ms() + r->interval_ms;

	drop_context(r);
	/* the seeds are tried for one interval at most (each connection
	 * waits half of one): the round stays bounded when many are gone
	 */
	for (i = 0; i <= r->nr_seeds && (!i || mono_ms() < until); i++) {
		if (i) {
			host = r->seeds[i - 1].host;
			port = r->seeds[i - 1].port;
		}
		r->why[0] = 0;
		c = open_ctx(r, host, port);
		if (c) {
			ret = read_map(r, c, host, port);
			if (ret >= 0)
				break;
			redisFree(c);
			c = NULL;
		}
		if (!first[0])
			snprintf(first, sizeof(first), "%s", r->why);
	}
	if (ret < 0) {
		const char *why = first[0] ? first : r->why;

		went_down(r, now_ms, strncmp(why, "AUTH", 4) ?
			  "unreachable" : "refused the login", why);
		return -EIO;
	}
	if (!ret) {
		/* standalone: the server that answered serves every slot */
		r->cluster = false;
		snprintf(r->nodes[0].a.host, sizeof(r->nodes[0].a.host), "%s",
			 host);
		r->nodes[0].a.port = port;
		r->nodes[0].c = c;
		r->nr_nodes = 1;
		r->c = c;
		if (load_scripts(r)) {
			went_down(r, now_ms, "unreachable", r->c->err ?
				  r->c->errstr : r->why);
			return -EIO;
		}
	} else if (use_slot(r, index_slot())) {
		went_down(r, now_ms, "unreachable", r->why);
		return -EIO;
	}
	r->up = true;
	r->store.up = true;
	if (r->ever_up)
		r->store.reconnects++;
	if (r->down_logged)
		pr_notice("sync: redis at %s reachable again%s", r->where,
			  r->cluster ? " (Cluster)" : "");
	else
		pr_info("sync: redis at %s connected%s", r->where,
			r->cluster ? " (Cluster)" : "");
	r->ever_up = true;
	r->down_logged = false;
	r->backoff_ms = 0;
	return 0;
}

/* After a MOVED: the map read again from a master still connected (the
 * one the index lives on). An error is an outage.
 */
static int refresh_map(struct sl_redis *r)
{
	struct redis_node *n;

	if (use_slot(r, index_slot()))
		return -EIO;
	n = &r->nodes[r->slot_node[index_slot()]];
	/* read_map takes the connection over: detach it from its node */
	{
		redisContext *c = n->c;
		char host[sizeof(n->a.host)];
		int port = n->a.port;

		snprintf(host, sizeof(host), "%s", n->a.host);
		n->c = NULL;
		if (read_map(r, c, host, port) != 1) {
			redisFree(c);
			return -EIO;
		}
	}
	return 0;
}

int sl_redis_auth(redisContext *c, const char *user, const char *pass,
		  char *why, size_t size)
{
	redisReply *x;
	int err = 0;

	if (!pass)
		return 0;
	/* as arguments, never formatted into the command: a password may
	 * hold any byte but NUL
	 */
	if (user && *user)
		x = redisCommand(c, "AUTH %s %s", user, pass);
	else
		x = redisCommand(c, "AUTH %s", pass);
	if (!x) {
		snprintf(why, size, "AUTH: %s", c->err ? c->errstr : "no reply");
		err = -EACCES;
	} else if (x->type == REDIS_REPLY_ERROR) {
		snprintf(why, size, "AUTH%s%s: %.*s", user && *user ? " as " : "",
			 user && *user ? user : "",
			 (int)(x->len < 120 ? x->len : 120), x->str);
		err = -EACCES;
	} else if (x->type != REDIS_REPLY_STATUS) {
		snprintf(why, size, "AUTH: unexpected reply (type %d)", x->type);
		err = -EACCES;
	}
	freeReplyObject(x);
	return err;
}

int sl_redis_set_auth(struct sl_redis *r, const char *user, const char *pass)
{
	free(r->user);
	free(r->pass);
	r->user = user && *user ? strdup(user) : NULL;
	r->pass = pass ? strdup(pass) : NULL;
	if ((user && *user && !r->user) || (pass && !r->pass))
		return -ENOMEM;
	return 0;
}

/* ---- commands ---- */

static int args_room(struct sl_redis *r, size_t n)
{
	size_t cap = r->cap_args;

	if (grow((void **)&r->argv, &cap, n, sizeof(*r->argv)))
		return -ENOMEM;
	cap = r->cap_args;
	if (grow((void **)&r->argvlen, &cap, n, sizeof(*r->argvlen)))
		return -ENOMEM;
	cap = r->cap_args;
	if (grow((void **)&r->num, &cap, n, sizeof(*r->num)))
		return -ENOMEM;
	r->cap_args = cap;
	return 0;
}

static void arg_str(struct sl_redis *r, size_t *n, const char *s, size_t len)
{
	r->argv[*n] = s;
	r->argvlen[*n] = len;
	(*n)++;
}

static void arg_u64(struct sl_redis *r, size_t *n, uint64_t v)
{
	int len = snprintf(r->num[*n], sizeof(r->num[0]), "%llu",
			   (unsigned long long)v);

	arg_str(r, n, r->num[*n], len);
}

enum {
	RUN_OK = 0,
	RUN_FAILED = -1,	/* the connection is gone (went_down done) */
	RUN_SPLIT = -2,		/* CROSSSLOT: send again cut per slot */
};

static bool error_is(const redisReply *x, const char *code)
{
	size_t n = strlen(code);

	return x && x->type == REDIS_REPLY_ERROR && x->len >= n &&
	       !strncmp(x->str, code, n);
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": the node it names. */
static int redirect_node(struct sl_redis *r, const redisReply *x)
{
	char host[256];
	const char *sp, *colon = NULL, *p;
	unsigned long port;
	unsigned i;
	size_t len;

	sp = memchr(x->str, ' ', x->len);
	sp = sp ? memchr(sp + 1, ' ', x->len - (sp + 1 - x->str)) : NULL;
	if (!sp)
		return -1;
	sp++;
	for (p = sp; p < x->str + x->len; p++)
		if (*p == ':')
			colon = p;	/* the last: an IPv6 host has more */
	if (!colon || colon == sp || (size_t)(colon - sp) >= sizeof(host))
		return -1;
	len = colon - sp;
	memcpy(host, sp, len);
	host[len] = 0;
	port = strtoul(colon + 1, NULL, 10);
	if (!port || port > 65535)
		return -1;
	for (i = 0; i < r->nr_nodes; i++)
		if (addr_eq(&r->nodes[i].a, host, port))
			return i;
	if (r->nr_nodes == SL_REDIS_MAX_NODES)
		return -1;
	memset(&r->nodes[i], 0, sizeof(r->nodes[i]));
	snprintf(r->nodes[i].a.host, sizeof(r->nodes[i].a.host), "%s", host);
	r->nodes[i].a.port = port;
	seed_add(r, host, port);
	r->nr_nodes++;
	return i;
}

/* EVALSHA with the arguments in r->argv[0..n) (argv[1] is the sha), on
 * the node serving `slot`: on NOSCRIPT (a restarted or flushed server)
 * load the scripts and send once more; on MOVED (the slot has another
 * master: a failover or a resharding) send to the master it names and
 * read the map again after the round; on ASK (a slot being migrated)
 * send ASKING and the command to the node it names. NOSCRIPT, CROSSSLOT,
 * MOVED and ASK are refused before the script runs, so nothing was
 * applied twice. NULL with r->c NULL and the reason in r->why if the
 * node could not be reached.
 */
static redisReply *evalsha(struct sl_redis *r, size_t n, uint16_t slot)
{
	redisReply *x;
	unsigned hops;
	int i;

	if (use_slot(r, slot))
		return NULL;
	for (hops = 0;; hops++) {
		x = redisCommandArgv(r->c, n, r->argv, r->argvlen);
		if (error_is(x, "NOSCRIPT")) {
			freeReplyObject(x);
			pr_info("sync: redis at %s lost the scripts: loading "
				"them again", r->where);
			if (load_scripts(r))
				return NULL;
			/* argv[1] points at the sha just loaded again (the
			 * same text, so the same sha)
			 */
			x = redisCommandArgv(r->c, n, r->argv, r->argvlen);
		}
		if (!r->cluster || hops == SL_REDIS_REDIRECTS ||
		    !(error_is(x, "MOVED ") || error_is(x, "ASK ")))
			return x;
		i = redirect_node(r, x);
		if (i < 0)
			return x;	/* one we cannot follow: an error */
		pr_debug("sync: redis: %.*s", (int)(x->len < 120 ? x->len : 120),
			 x->str);
		if (error_is(x, "MOVED ")) {
			r->slot_node[slot] = i;
			r->map_stale = true;
		}
		if (use_node(r, i)) {
			freeReplyObject(x);
			return NULL;
		}
		if (error_is(x, "ASK ")) {
			redisReply *y = redisCommand(r->c, "ASKING");
			bool ok = y && y->type == REDIS_REPLY_STATUS;

			freeReplyObject(y);
			if (!ok) {
				freeReplyObject(x);
				snprintf(r->why, sizeof(r->why),
					 "ASKING refused");
				return NULL;
			}
		}
		freeReplyObject(x);
	}
}

/* A reply that is neither the answer nor a reason: the connection state
 * or the server's error, for the log.
 */
static void reply_failed(struct sl_redis *r, uint64_t now_ms,
			 const redisReply *x)
{
	char why[160];

	if (!x || (r->c && r->c->err)) {
		went_down(r, now_ms, "unreachable", context_error(r));
		return;
	}
	if (x->type == REDIS_REPLY_ERROR)
		snprintf(why, sizeof(why), "%.*s", (int)(x->len < 120 ? x->len :
							 120), x->str);
	else
		snprintf(why, sizeof(why), "a reply of an unexpected form "
			 "(type %d)", x->type);
	went_down(r, now_ms, "failed", why);
}

/* ---- the index ---- */

static bool score_parse(const redisReply *x, uint64_t *v)
{
	size_t i;

	if (!x || x->type != REDIS_REPLY_STRING || !x->len || x->len > 17)
		return false;
	*v = 0;
	for (i = 0; i < x->len; i++) {
		if (x->str[i] < '0' || x->str[i] > '9')
			return false;
		*v = *v * 10 + (x->str[i] - '0');
	}
	return true;
}

/* Read the clients indexed since the cursor into r->learn (a cursor that
 * moves past them only once they are read: see advance_cursor), or, with
 * `add`, index the pushed clients. 0 or RUN_FAILED.
 */
static int index_call(struct sl_redis *r, uint64_t now_ms, bool add)
{
	size_t n = 0, i, m, want = 9 + (add ? r->nr_push : 0);
	redisReply *x, *got;
	uint64_t score, last = 0;
	int bad = 0;

	if (args_room(r, want))
		return RUN_FAILED;
	arg_str(r, &n, "EVALSHA", 7);
	arg_str(r, &n, r->sha_index, 40);
	arg_str(r, &n, "2", 1);
	arg_str(r, &n, INDEX_KEY, strlen(INDEX_KEY));
	arg_str(r, &n, INDEX_CLOCK_KEY, strlen(INDEX_CLOCK_KEY));
	arg_u64(r, &n, add ? 0 : r->from);
	arg_u64(r, &n, add ? 0 : r->offset);
	arg_u64(r, &n, add ? 0 : SL_REDIS_LEARN_MAX);
	arg_u64(r, &n, index_keep_ms(r) * 1000);
	for (i = 0; add && i < r->nr_push; i++)
		if (r->push[i].done)
			arg_str(r, &n, r->push[i].key + 4,
				r->push[i].key_len - 5);
	x = evalsha(r, n, index_slot());
	if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 2 ||
	    x->element[0]->type != REDIS_REPLY_INTEGER ||
	    x->element[0]->integer <= 0 ||
	    x->element[1]->type != REDIS_REPLY_ARRAY ||
	    x->element[1]->elements % 2 ||
	    x->element[1]->elements > 2 * SL_REDIS_LEARN_MAX) {
		reply_failed(r, now_ms, x);
		freeReplyObject(x);
		return RUN_FAILED;
	}
	if (add) {
		freeReplyObject(x);
		return 0;
	}
	r->index_now = x->element[0]->integer;
	got = x->element[1];
	m = got->elements / 2;
	r->nr_learn = 0;
	r->nr_members = 0;
	if (grow((void **)&r->learn, &r->cap_learn, m + 1, sizeof(*r->learn)) ||
	    grow((void **)&r->scores, &r->cap_scores, m + 1,
		 sizeof(*r->scores))) {
		went_down(r, now_ms, "failed", "out of memory");
		freeReplyObject(x);
		return RUN_FAILED;
	}
	for (i = 0; i < m; i++) {
		const redisReply *id = got->element[2 * i];
		struct client *c = &r->learn[r->nr_learn];

		if (!score_parse(got->element[2 * i + 1], &score) ||
		    score < last) {
			bad++;	/* not a score, or out of order */
			break;
		}
		last = score;
		r->scores[i] = score;
		/* a member that is not a client id of ours is skipped, but
		 * still passed by the cursor
		 */
		if (id->type != REDIS_REPLY_STRING ||
		    client_parse(c, id->str, id->len))
			continue;
		c->pos = i;
		r->nr_learn++;
	}
	if (bad) {
		reply_failed(r, now_ms, got);
		freeReplyObject(x);
		return RUN_FAILED;
	}
	r->nr_members = m;
	freeReplyObject(x);
	return 0;
}

/* Move the cursor past the first k members the index call returned (in
 * index order), which have been read.
 */
static void advance_cursor(struct sl_redis *r, size_t k)
{
	uint64_t last, same = 0;
	size_t i;

	if (r->index_now < r->from) {
		/* the store's clock is behind the cursor: another (or a reset)
		 * store; read it from the start
		 */
		r->from = 0;
		r->offset = 0;
		return;
	}
	if (k == r->nr_members && k < SL_REDIS_LEARN_MAX) {
		/* all up to the call: later calls score above it */
		r->from = r->index_now + 1;
		r->offset = 0;
		return;
	}
	if (!k)
		return;
	/* go on after the last one read; ids scored the same are ordered by
	 * id, so an offset among them holds (one that moves on to a later
	 * score is met again there)
	 */
	last = r->scores[k - 1];
	for (i = 0; i < k; i++)
		same += r->scores[i] == last;
	r->offset = last == r->from ? r->offset + same : same;
	r->from = last;
}

/* ---- pushing and reading totals ---- */

static int merge_reply(struct sl_redis *r, struct sl_sync *s,
		       const struct client *c, size_t nr,
		       const redisReply *x, uint64_t now_ms)
{
	size_t i, j, n = 0, need = 0;

	if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != nr)
		return -EPROTO;
	for (i = 0; i < nr; i++) {
		const redisReply *y = x->element[i];

		if (y->type != REDIS_REPLY_ARRAY || y->elements % 2)
			return -EPROTO;
		for (j = 0; j < y->elements; j++)
			if (y->element[j]->type != REDIS_REPLY_INTEGER ||
			    y->element[j]->integer < 0)
				return -EPROTO;
		need += y->elements / 2;
	}
	if (grow((void **)&r->totals, &r->cap_totals, need + 1,
		 sizeof(*r->totals)))
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		const redisReply *y = x->element[i];

		for (j = 0; j < y->elements; j += 2) {
			struct sl_wire_entry *e = &r->totals[n];
			long long units = y->element[j + 1]->integer;

			if (!units)
				continue;
			*e = c[i].who;
			e->start_ms = y->element[j]->integer;
			e->units = units > UINT32_MAX ? UINT32_MAX : units;
			n++;
		}
	}
	if (n)
		sl_sync_merge_totals(s, r->totals, n, now_ms);
	return 0;
}

/* One script call for clients c[0..nr): push their entries (none for
 * the clients only read) and merge the others' totals.
 */
static int run_batch(struct sl_redis *r, struct sl_sync *s,
		     struct client *c, size_t nr, uint64_t now_ms)
{
	size_t want = 5 + 3 * nr, n = 0, i, j;
	redisReply *x;
	int err;

	for (i = 0; i < nr; i++)
		want += 2 * c[i].n;
	if (args_room(r, want))
		return RUN_FAILED;
	arg_str(r, &n, "EVALSHA", 7);
	arg_str(r, &n, r->sha_round, 40);
	arg_u64(r, &n, nr);
	for (i = 0; i < nr; i++)
		arg_str(r, &n, c[i].key, c[i].key_len);
	arg_u64(r, &n, r->node);
	arg_u64(r, &n, SL_PEER_SLOTS);
	for (i = 0; i < nr; i++) {
		arg_u64(r, &n, c[i].n ? ttl_ms(r, c[i].who.rule_hash) : 0);
		arg_u64(r, &n, c[i].n);
		for (j = 0; j < c[i].n; j++) {
			const struct sl_wire_entry *e = &r->ent.e[c[i].first + j];

			arg_u64(r, &n, e->start_ms);
			arg_u64(r, &n, e->units);
		}
	}
	x = evalsha(r, n, c[0].slot);
	if (error_is(x, "CROSSSLOT") && !r->per_slot) {
		freeReplyObject(x);
		pr_notice("sync: redis at %s wants one slot per script: "
			  "batching per slot", r->where);
		r->per_slot = true;
		return RUN_SPLIT;
	}
	/* from here the batch was sent: whatever comes back, it is not
	 * sent again (it may have been applied)
	 */
	for (i = 0; i < nr; i++)
		c[i].done = true;
	err = merge_reply(r, s, c, nr, x, now_ms);
	if (err == -ENOMEM) {
		went_down(r, now_ms, "failed", "out of memory");
		freeReplyObject(x);
		return RUN_FAILED;
	}
	if (err) {
		reply_failed(r, now_ms, x);
		freeReplyObject(x);
		return RUN_FAILED;
	}
	freeReplyObject(x);
	return RUN_OK;
}

/* Clients c[0..nr) in batches (per slot: cut where the slot changes);
 * stops at `deadline` (monotonic ms), leaving the rest not done. 0 or
 * RUN_FAILED.
 */
static int run_batches(struct sl_redis *r, struct sl_sync *s,
		       struct client *c, size_t nr, uint64_t now_ms,
		       uint64_t deadline)
{
	size_t i = 0, j;
	int ret;

	while (i < nr) {
		if (mono_ms() >= deadline) {
			pr_info("sync: redis round over its interval: %zu "
				"clients left for the next", nr - i);
			return 0;
		}
		for (j = i + 1; j < nr && j - i < SL_REDIS_BATCH; j++)
			if (r->per_slot && c[j].slot != c[i].slot)
				break;
		ret = run_batch(r, s, c + i, j - i, now_ms);
		if (ret == RUN_SPLIT)
			continue;	/* the same clients, cut per slot */
		if (ret)
			return ret;
		i = j;
	}
	return 0;
}

/* ---- the round ---- */

/* hiredis sends with write(2): a server that went away between two
 * writes raises SIGPIPE, whose default action ends the whole daemon. It
 * is held blocked on this thread for the round, and one it raised is
 * taken back before the mask is restored.
 */
struct pipe_guard {
	sigset_t old;
	bool was_pending;
};

static void pipe_guard_on(struct pipe_guard *g)
{
	sigset_t set, pending;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigemptyset(&pending);
	sigpending(&pending);
	g->was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

static void pipe_guard_off(struct pipe_guard *g)
{
	struct timespec zero = { 0 };
	sigset_t set, pending;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigemptyset(&pending);
	sigpending(&pending);
	if (!g->was_pending && sigismember(&pending, SIGPIPE))
		sigtimedwait(&set, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* This node's deltas, after those kept from earlier rounds; the slice
 * starts pushed set the expiry of their rule's hashes.
 */
static int collect_entries(struct sl_redis *r, struct sl_sync *s,
			   uint64_t now_ms)
{
	size_t i = r->ent.nr;
	int err;

	err = sl_sync_collect_entries(s, now_ms, SL_SYNC_TO_STORE, &r->ent);
	for (; i < r->ent.nr; i++) {
		const struct sl_wire_entry *e = &r->ent.e[i];
		struct rule_slices *rs = rule_slices(r, e->rule_hash, true);

		if (rs)
			rs->g_cur = gcd64(rs->g_cur, e->start_ms);
	}
	return err;
}

/* The round's entries, one client each: sorted, grouped, and the
 * groups ordered by slot.
 */
static int group_entries(struct sl_redis *r)
{
	size_t i, start;

	r->nr_push = 0;
	if (!r->ent.nr)
		return 0;
	qsort(r->ent.e, r->ent.nr, sizeof(*r->ent.e), entry_cmp);
	for (i = 0, start = 0; i <= r->ent.nr; i++) {
		struct client *c;

		if (i < r->ent.nr && same_client(&r->ent.e[i], &r->ent.e[start]))
			continue;
		if (grow((void **)&r->push, &r->cap_push, r->nr_push + 1,
			 sizeof(*r->push)))
			return -ENOMEM;
		c = &r->push[r->nr_push++];
		client_init(c, &r->ent.e[start]);
		c->first = start;
		c->n = i - start;
		start = i;
	}
	qsort(r->push, r->nr_push, sizeof(*r->push), client_cmp);
	return 0;
}

/* Drop the learned clients this round pushes (their totals came back
 * with the push). The rest stay in index order, so a round cut short
 * reads a prefix and the cursor passes just that; per slot they are
 * ordered by slot, to fill batches.
 */
static void prune_learned(struct sl_redis *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->nr_learn; i++)
		if (!r->nr_push ||
		    !bsearch(&r->learn[i], r->push, r->nr_push,
			     sizeof(*r->push), client_cmp))
			r->learn[n++] = r->learn[i];
	r->nr_learn = n;
	if (n && r->per_slot)
		qsort(r->learn, n, sizeof(*r->learn), client_cmp);
}

/* After a round that grouped its entries: keep those of the clients not
 * pushed for the next round.
 */
static void keep_unsent(struct sl_redis *r)
{
	struct sl_sync_entries t;
	size_t i, n = 0;

	if (grow((void **)&r->spare.e, &r->spare.cap, r->ent.nr,
		 sizeof(*r->ent.e))) {
		r->ent.nr = 0;	/* no room to keep them: given up */
		r->nr_push = 0;
		return;
	}
	for (i = 0; i < r->nr_push; i++) {
		const struct client *c = &r->push[i];

		if (c->done)
			continue;
		memcpy(r->spare.e + n, r->ent.e + c->first,
		       c->n * sizeof(*r->ent.e));
		n += c->n;
	}
	t = r->ent;
	r->ent = r->spare;
	r->spare = t;
	r->ent.nr = n;
	r->nr_push = 0;
}

static void round_guarded(struct sl_redis *r, struct sl_sync *s,
			  uint64_t now_ms)
{
	uint64_t deadline;
	bool grouped = false;
	size_t i, k;
	int err;

	if (r->up && r->map_stale && refresh_map(r))
		went_down(r, now_ms, "unreachable", r->why);
	if (!r->up) {
		/* backing off; a clock that stepped back does not hold it */
		if (r->retry_ms && now_ms < r->retry_ms &&
		    r->retry_ms - now_ms <= SL_REDIS_BACKOFF_MAX_MS)
			return;
		if (connect_now(r, now_ms))
			return;
	}
	deadline = mono_ms() + r->interval_ms;
	r->why[0] = 0;
	if (++r->rounds % SL_REDIS_EPOCH_ROUNDS == 0)
		new_epoch(r);

	/* 1: who changed since the last round */
	if (index_call(r, now_ms, false))
		goto out;

	/* 2: this node's deltas; none are collected while the store is
	 * away, so the kernel keeps them until a round can send them
	 */
	err = collect_entries(r, s, now_ms);
	if (err)
		pr_warn("sync: a round failed: %s", strerror(-err));
	if (group_entries(r)) {
		r->ent.nr = 0;	/* no memory to sort them out: given up */
		r->nr_push = 0;
	}
	grouped = true;
	prune_learned(r);
	if (run_batches(r, s, r->push, r->nr_push, now_ms, deadline))
		goto out;

	/* 3: tell the others */
	if (r->nr_push && index_call(r, now_ms, true))
		goto out;

	/* 4: the clients only others pushed, as long as the interval lasts;
	 * the cursor passes what was read (and what this round pushed, or
	 * could not parse), up to the first client left
	 */
	if (run_batches(r, s, r->learn, r->nr_learn, now_ms, deadline))
		goto out;
	k = r->nr_members;
	for (i = 0; i < r->nr_learn; i++)
		if (!r->learn[i].done && r->learn[i].pos < k)
			k = r->learn[i].pos;
	advance_cursor(r, k);
out:
	if (grouped)
		keep_unsent(r);
}

void sl_redis_round(struct sl_redis *r, struct sl_sync *s, uint64_t now_ms)
{
	struct pipe_guard g;

	pipe_guard_on(&g);
	round_guarded(r, s, now_ms);
	pipe_guard_off(&g);
	sl_sync_store_report(s, &r->store);
}

struct sl_redis *sl_redis_new(const char *url, unsigned node,
			      unsigned interval_ms)
{
	struct sl_redis *r = calloc(1, sizeof(*r));

	if (!r) {
		pr_error("sync: out of memory");
		return NULL;
	}
	if (!url || parse_url(r, url)) {
		pr_error("sync.url: '%s' is not redis://HOST:PORT",
			 url ? url : "");
		free(r);
		return NULL;
	}
	r->node = node;
	r->ent.max = SL_REDIS_MAX_ENTRIES;
	r->spare.max = SL_REDIS_MAX_ENTRIES;
	r->interval_ms = interval_ms ? interval_ms : 1000;
	r->timeout_ms = r->interval_ms / 2;
	if (r->timeout_ms < SL_REDIS_TIMEOUT_MIN_MS)
		r->timeout_ms = SL_REDIS_TIMEOUT_MIN_MS;
	return r;
}

void sl_redis_free(struct sl_redis *r)
{
	if (!r)
		return;
	drop_context(r);
	if (r->pass)
		explicit_bzero(r->pass, strlen(r->pass));
	free(r->pass);
	free(r->user);
	free(r->ent.e);
	free(r->spare.e);
	free(r->push);
	free(r->learn);
	free(r->scores);
	free(r->totals);
	free(r->argv);
	free(r->argvlen);
	free(r->num);
	free(r);
}
