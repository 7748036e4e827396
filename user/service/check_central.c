// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Central checks in Redis (the promise: service/check_central.h).
 *
 * One script per family, each in its own file (user/lua/), built into the
 * binary as a C string by the Makefile (build/lua/NAME.lua.h):
 *   check_bucket.lua   token-bucket: GCRA over one TAT string per client
 *   check_sliding.lua  sliding, sliding-plain, fixed, sliding-counter,
 *                      sliding-log: the representation each algorithm
 *                      needs (its header says which, and what it bounds)
 * Only the service uses it, and it ignores SIGPIPE (a store gone
 * mid-write is an error here, not the end of the process).
 * A check is one EVALSHA, one round trip; the scripts read the store's
 * clock (TIME), so the nodes' clocks do not enter the decision.
 *
 * Keys: slc:{RULE:ID}:ALGORITHM:WINDOW_MS:SLICE_MS. An API key's ID is
 * kh: and its keyed hash (sl_central_set_id_key), never the key: whoever
 * reads the store learns which clients are counted, not their keys; an
 * address's ID is ip:ADDR[/BITS] as the rule masks it. RULE:ID is the hash
 * tag, so a Redis Cluster keeps one client's keys in one slot; the
 * algorithm and its window are part of the name, so a rule whose window
 * changes starts its clients afresh (an undercount: fails open) instead
 * of reading slices of another length. Every script sets a TTL past
 * which nothing in the key could count.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <hiredis/hiredis.h>
#include <sodium.h>
#include "service/check_central.h"
#include "util/clock.h"
#include "util/log.h"
#include "rules/rules.h"
#include "sync/redis.h"
#include "lua/check_bucket.lua.h"
#include "lua/check_sliding.lua.h"

#define CENTRAL_BACKOFF_MAX_MS	5000
#define CENTRAL_TIMEOUT_MIN_MS	50
#define CENTRAL_KEY_MAX		(4 + 32 + 1 + 260 + 2 + 16 + 24 + 1)

enum { SCRIPT_BUCKET, SCRIPT_SLIDING, NR_SCRIPTS };

static const char *const script_src[NR_SCRIPTS] = {
	[SCRIPT_BUCKET] = sl_lua_check_bucket,
	[SCRIPT_SLIDING] = sl_lua_check_sliding,
};

struct sl_central {
	char host[256];
	int port;
	unsigned interval_ms;
	struct sl_redis_limits lim;	/* every command's deadline and cap */
	char *user, *pass;		/* AUTH; pass NULL: none */
	/* the key of API keys' hashes; unkeyed until one is set */
	uint8_t id_key[crypto_generichash_KEYBYTES];
	bool id_keyed;

	pthread_mutex_t lock;		/* the connection and what follows */
	redisContext *ctx;
	char sha[NR_SCRIPTS][41];
	bool ever_up, down_logged;
	bool refusing_logged;	/* a run of replies not ours was reported */
	bool cluster_warned;		/* said once that this is a Cluster */
	uint64_t backoff_ms, retry_at_ms;	/* monotonic */

	atomic_bool up;
	atomic_ullong errors, reconnects;
};

struct sl_central *sl_central_new(const char *url, unsigned interval_ms)
{
	struct sl_central *c = calloc(1, sizeof(*c));

	if (!c) {
		pr_error("check: out of memory");
		return NULL;
	}
	if (!url || sl_redis_url_parse(url, c->host, sizeof(c->host), &c->port)) {
		pr_error("sync.url: '%s' is not redis://HOST:PORT", url ? url : "");
		free(c);
		return NULL;
	}
	c->interval_ms = interval_ms ? interval_ms : 1000;
	c->lim.timeout_ms = c->interval_ms / 2;
	if (c->lim.timeout_ms < CENTRAL_TIMEOUT_MIN_MS)
		c->lim.timeout_ms = CENTRAL_TIMEOUT_MIN_MS;
	c->lim.max_reply = SL_REDIS_MAX_REPLY_DEFAULT;
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

void sl_central_set_id_key(struct sl_central *c,
			   const uint8_t secret[SL_CENTRAL_SECRET])
{
	static const char ctx[] = "slicelimit central client ids";

	/* its own key, derived: the secret may key other things too */
	crypto_generichash(c->id_key, sizeof(c->id_key),
			   (const unsigned char *)ctx, sizeof(ctx) - 1, secret,
			   SL_CENTRAL_SECRET);
	c->id_keyed = true;
}

int sl_central_client_id(const struct sl_central *c, const char *client,
			 size_t len, char *buf, size_t size)
{
	uint8_t h[SL_CENTRAL_ID_HASH];

	if (len < 2 || memcmp(client, "k:", 2)) {
		if (len >= size)
			return -ENAMETOOLONG;
		memcpy(buf, client, len);
		buf[len] = 0;
		return len;
	}
	if (size < 3 + 2 * sizeof(h) + 1)
		return -ENAMETOOLONG;
	crypto_generichash(h, sizeof(h), (const unsigned char *)client + 2,
			   len - 2, c->id_keyed ? c->id_key : NULL,
			   c->id_keyed ? sizeof(c->id_key) : 0);
	memcpy(buf, "kh:", 3);
	sodium_bin2hex(buf + 3, size - 3, h, sizeof(h));
	return 3 + 2 * sizeof(h);
}

void sl_central_set_max_reply(struct sl_central *c, size_t bytes)
{
	c->lim.max_reply = bytes;
}

int sl_central_set_auth(struct sl_central *c, const char *user,
			const char *pass)
{
	free(c->user);
	free(c->pass);
	c->user = user && *user ? strdup(user) : NULL;
	c->pass = pass ? strdup(pass) : NULL;
	if ((user && *user && !c->user) || (pass && !c->pass))
		return -ENOMEM;
	return 0;
}

static void drop(struct sl_central *c)
{
	if (c->ctx)
		redisFree(c->ctx);
	c->ctx = NULL;
	atomic_store(&c->up, false);
}

void sl_central_free(struct sl_central *c)
{
	if (!c)
		return;
	drop(c);
	if (c->pass)
		explicit_bzero(c->pass, strlen(c->pass));
	sodium_memzero(c->id_key, sizeof(c->id_key));
	free(c->pass);
	free(c->user);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* The connection failed or cannot be trusted to be in step: drop it and
 * wait before the next try, longer each time.
 */
static void outage(struct sl_central *c, const char *what)
{
	c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : c->interval_ms;
	if (c->backoff_ms > CENTRAL_BACKOFF_MAX_MS)
		c->backoff_ms = CENTRAL_BACKOFF_MAX_MS;
	c->retry_at_ms = sl_now_mono_ms() + c->backoff_ms;
	atomic_fetch_add(&c->errors, 1);
	if (!c->down_logged)
		pr_warn("check: redis at %s:%d: %s; checks decide locally (fail open), retrying in %llu ms",
			c->host, c->port, what, (unsigned long long)c->backoff_ms);
	else
		pr_debug("check: redis at %s:%d: %s", c->host, c->port, what);
	c->down_logged = true;
	drop(c);
}

/* SCRIPT LOAD every script; false (the reason in *why) if one fails. */
static bool load_scripts(struct sl_central *c, char *why, size_t size)
{
	unsigned i;

	for (i = 0; i < NR_SCRIPTS; i++) {
		redisReply *x = sl_redis_commandl(c->ctx, &c->lim, "SCRIPT",
						  "LOAD", script_src[i], NULL);
		bool ok = x && x->type == REDIS_REPLY_STRING && x->len == 40;

		if (ok)
			memcpy(c->sha[i], x->str, 41);
		else if (x && x->type == REDIS_REPLY_ERROR)
			snprintf(why, size, "SCRIPT LOAD: %.*s",
				 (int)(x->len < 120 ? x->len : 120), x->str);
		else
			snprintf(why, size, "SCRIPT LOAD: %s", c->ctx->err ?
				 c->ctx->errstr : "unexpected reply");
		freeReplyObject(x);
		if (!ok)
			return false;
	}
	return true;
}

/* Central checks keep one connection to one server: a Cluster node
 * answers MOVED for the keys of other masters' slots, each an error (and
 * a local decision). Said once, plainly, rather than only per check.
 */
static void warn_cluster(struct sl_central *c)
{
	redisReply *x;

	if (c->cluster_warned)
		return;
	x = sl_redis_commandl(c->ctx, &c->lim, "CLUSTER", "SLOTS", NULL);
	if (x && x->type == REDIS_REPLY_ARRAY && x->elements > 1) {
		pr_warn("check: redis at %s:%d is a Cluster node: central checks use one server, so checks of keys on other masters fail open (MOVED); point sync.url at a standalone Redis or a Cluster proxy (docs/REDIS.md)",
			c->host, c->port);
		c->cluster_warned = true;
	}
	freeReplyObject(x);
}

static int connect_store(struct sl_central *c)
{
	struct timeval tv = {
		.tv_sec = c->lim.timeout_ms / 1000,
		.tv_usec = (c->lim.timeout_ms % 1000) * 1000,
	};
	char why[160];

	if (c->retry_at_ms && sl_now_mono_ms() < c->retry_at_ms)
		return -EAGAIN;
	c->ctx = redisConnectWithTimeout(c->host, c->port, tv);
	if (!c->ctx || c->ctx->err) {
		snprintf(why, sizeof(why), "unreachable: %s",
			 c->ctx ? c->ctx->errstr : "out of memory");
		outage(c, why);
		return -EIO;
	}
	if (redisSetTimeout(c->ctx, tv) != REDIS_OK) {
		outage(c, "cannot set the command timeout");
		return -EIO;
	}
	redisEnableKeepAlive(c->ctx);
	if (sl_redis_auth(c->ctx, &c->lim, c->user, c->pass, why,
			  sizeof(why))) {
		outage(c, why);
		return -EIO;
	}
	if (!load_scripts(c, why, sizeof(why))) {
		outage(c, why);
		return -EIO;
	}
	warn_cluster(c);
	if (c->ever_up)
		atomic_fetch_add(&c->reconnects, 1);
	if (c->down_logged)
		pr_notice("check: redis at %s:%d reachable again: checks are central",
			  c->host, c->port);
	else
		pr_info("check: redis at %s:%d connected: checks are central",
			c->host, c->port);
	c->ever_up = true;
	c->down_logged = false;
	c->backoff_ms = 0;
	c->retry_at_ms = 0;
	atomic_store(&c->up, true);
	return 0;
}

int sl_central_key(char *buf, size_t size, const struct sl_rule *rule,
		   const char *client, size_t len)
{
	int n = snprintf(buf, size, "slc:{%.*s:%.*s}:%s:%u:%u",
			 (int)strnlen(rule->name, sizeof(rule->name)),
			 rule->name, (int)len, client,
			 sl_algorithm_name(rule->algorithm), rule->window_ms,
			 rule->slice_ms);

	/* %.*s stops at a NUL; a client id holds none (service/http.c refuses it) */
	if (n < 0 || (size_t)n >= size || memchr(client, 0, len))
		return -ENAMETOOLONG;
	return n;
}

/* The script's answer: five integers, each in range. */
static bool parse_answer(const redisReply *x, bool *allowed,
			 struct sl_client_view *v)
{
	long long n[5];
	size_t i;

	if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 5)
		return false;
	for (i = 0; i < 5; i++) {
		if (x->element[i]->type != REDIS_REPLY_INTEGER ||
		    x->element[i]->integer < 0)
			return false;
		n[i] = x->element[i]->integer;
	}
	if (n[0] > 1)
		return false;
	*allowed = n[0] == 1;
	v->used = n[1];
	v->remaining = n[2];
	v->retry_after_ms = n[3];
	v->reset_ms = n[4];
	return true;
}

static bool is_error(const redisReply *x, const char *code)
{
	return x && x->type == REDIS_REPLY_ERROR &&
	       !strncmp(x->str, code, strlen(code));
}

/* The words of one EVALSHA, as redisCommandArgv takes them. */
struct eval_args {
	const char *argv[9];
	size_t argvlen[9];
	int argc;
	char num[4][24];	/* the numbers argv points to */
};

/* EVALSHA of `script` on `key` (klen bytes) with the rule's parameters,
 * charging `cost` units (0: only reading).
 */
static void eval_args_build(struct eval_args *e, struct sl_central *c,
			    int script, const struct sl_rule *rule,
			    const char *key, int klen, __u32 cost)
{
	unsigned i;

#define ARG(s, n) \
	(e->argv[e->argc] = (s), e->argvlen[e->argc] = (n), e->argc++)
	ARG("EVALSHA", 7);
	ARG(c->sha[script], 40);
	ARG("1", 1);
	ARG(key, (size_t)klen);
	snprintf(e->num[3], sizeof(e->num[3]), "%u", cost);
	ARG(e->num[3], strlen(e->num[3]));
	if (script == SCRIPT_BUCKET) {
		/* whole µs: at most 0.5 µs off per token */
		unsigned long long t_us = (rule->token_ns + 500) / 1000;

		snprintf(e->num[0], sizeof(e->num[0]), "%llu",
			 (unsigned long long)rule->bucket_capacity);
		snprintf(e->num[1], sizeof(e->num[1]), "%llu",
			 t_us ? t_us : 1);
		ARG(e->num[0], strlen(e->num[0]));
		ARG(e->num[1], strlen(e->num[1]));
	} else {
		const char *alg = sl_algorithm_name(rule->algorithm);

		snprintf(e->num[0], sizeof(e->num[0]), "%llu",
			 (unsigned long long)rule->limit);
		snprintf(e->num[1], sizeof(e->num[1]), "%u", rule->window_ms);
		snprintf(e->num[2], sizeof(e->num[2]), "%u", rule->slice_ms);
		ARG(alg, strlen(alg));
		for (i = 0; i < 3; i++)
			ARG(e->num[i], strlen(e->num[i]));
	}
#undef ARG
}

/* Send the EVALSHA (once more after loading the scripts again, if the
 * store has lost them) and take its answer; 0, -EIO (the connection is
 * dropped) or -EPROTO (a reply that is not the script's).
 */
static int eval_script(struct sl_central *c, int script, struct eval_args *e,
		       bool *allowed, struct sl_client_view *v)
{
	redisReply *x;
	int err = 0;

	x = sl_redis_command(c->ctx, &c->lim, e->argc, e->argv, e->argvlen);
	if (is_error(x, "NOSCRIPT")) {
		/* a restarted or flushed store; refused before it ran, so
		 * sending again counts once
		 */
		char why[160];

		freeReplyObject(x);
		x = NULL;
		if (!load_scripts(c, why, sizeof(why))) {
			outage(c, why);
			return -EIO;
		}
		e->argv[1] = c->sha[script];
		x = sl_redis_command(c->ctx, &c->lim, e->argc, e->argv, e->argvlen);
	}
	if (!x) {
		/* timeout or a broken connection: the script may or may not
		 * have run; the stream is out of step either way
		 */
		outage(c, c->ctx->err ? c->ctx->errstr : "no reply");
		err = -EIO;
	} else if (!parse_answer(x, allowed, v)) {
		/* a whole reply, just not ours (a script error, a proxy's
		 * words): the connection is still in step
		 */
		atomic_fetch_add(&c->errors, 1);
		/* once per run of them (a store still loading answers every
		 * check so), not once per check: the count is in errors
		 */
		if (!c->refusing_logged && x->type == REDIS_REPLY_ERROR)
			pr_warn("check: redis at %s:%d: %.*s", c->host, c->port,
				(int)(x->len < 160 ? x->len : 160), x->str);
		else if (!c->refusing_logged)
			pr_warn("check: redis at %s:%d: unexpected reply (type %d)",
				c->host, c->port, x->type);
		c->refusing_logged = true;
		err = -EPROTO;
	} else if (c->refusing_logged) {
		pr_notice("check: redis at %s:%d answers again", c->host,
			  c->port);
		c->refusing_logged = false;
	}
	freeReplyObject(x);
	return err;
}

int sl_central_check(struct sl_central *c, const struct sl_rule *rule,
		     const char *client, size_t len, __u32 cost,
		     bool *allowed, struct sl_client_view *v)
{
	char key[CENTRAL_KEY_MAX], id[CENTRAL_KEY_MAX];
	struct eval_args e = { .argc = 0 };
	int script, klen, n, err = 0;

	n = sl_central_client_id(c, client, len, id, sizeof(id));
	if (n < 0)
		return n;
	klen = sl_central_key(key, sizeof(key), rule, id, n);
	if (klen < 0)
		return klen;
	script = rule->algorithm == SL_ALGO_TOKEN_BUCKET ? SCRIPT_BUCKET :
		 SCRIPT_SLIDING;

	pthread_mutex_lock(&c->lock);
	if (!c->ctx && (err = connect_store(c)))
		goto out;
	eval_args_build(&e, c, script, rule, key, klen, cost);
	err = eval_script(c, script, &e, allowed, v);
out:
	pthread_mutex_unlock(&c->lock);
	return err;
}

void sl_central_stats(struct sl_central *c, struct sl_central_stats *s)
{
	s->up = atomic_load(&c->up);
	s->errors = atomic_load(&c->errors);
	s->reconnects = atomic_load(&c->reconnects);
}
