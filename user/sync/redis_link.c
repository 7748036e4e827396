// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One connection to the store (opened with its timeouts, logged in), and
 * the outage when anything fails. It knows nothing of Cluster: finding
 * the masters and connecting through them is redis_cluster.c's, which
 * builds on this file (one direction).
 *
 * An unreachable or misbehaving store is a peer outage: the round stops at
 * the first error, the context is dropped, and reconnects are tried with a
 * backoff from one interval, doubling up to SL_REDIS_BACKOFF_MAX_MS. Until
 * then rounds return at once and do not collect, so what the node accepts
 * meanwhile stays in its counters and is pushed on reconnect (while still
 * in the window). Deltas collected but not yet sent when a round stops are
 * kept for the next push (up to SL_REDIS_MAX_ENTRIES); only the batch in
 * flight is given up. Every command has a deadline of half an interval (at
 * least 50 ms) for its whole round trip (redis_bounded.c), and a round that runs past its interval leaves the rest of
 * its pushes and reads to the next, so the sync thread is back within
 * about an interval. The data path never waits for any of it.
 */
#include <sys/time.h>
#include "sync/redis_internal.h"

/* A node the config names: the URL's, or one of sync.cluster_nodes.
 * Any other is refused: counted, and said once (`who` is what named it).
 */
bool redis_node_allowed(struct sl_redis *r, const char *host, int port,
			const char *who)
{
	unsigned i;

	if (port == r->port && !strcmp(host, r->host))
		return true;
	for (i = 0; i < r->nr_allowed; i++)
		if (redis_addr_eq(&r->allowed[i], host, port))
			return true;
	r->refused++;
	snprintf(r->why, sizeof(r->why),
		 "%s names %.*s:%d, not a configured node (sync.url, sync.cluster_nodes)",
		 who, 64, host, port);
	if (r->refused == 1)
		pr_warn("sync: redis at %s: %s: refused", r->where, r->why);
	else
		pr_debug("sync: redis at %s: %s: refused", r->where, r->why);
	return false;
}

/* Every connection: after any failure the map is read again. */
void redis_drop_all(struct sl_redis *r)
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
void redis_went_down(struct sl_redis *r, uint64_t now_ms, const char *what,
		     const char *reason)
{
	char why[sizeof(r->why)];

	/* the reason may live in the context about to go */
	snprintf(why, sizeof(why), "%s", reason);
	redis_drop_all(r);
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

static const char *context_error(const struct sl_redis *r)
{
	if (r->c && r->c->err)
		return r->c->errstr;
	return r->why[0] ? r->why : "unexpected reply";
}

/* A connection to host:port with the command timeout, logged in; NULL
 * with the reason in r->why.
 */
redisContext *redis_open_ctx(struct sl_redis *r, const char *host, int port)
{
	struct timeval tv = {
		.tv_sec = r->lim.timeout_ms / 1000,
		.tv_usec = (r->lim.timeout_ms % 1000) * 1000,
	};
	redisContext *c = NULL;

	/* the one place a connection (and with it AUTH) starts: never to
	 * a node the config does not name
	 */
	if (!redis_node_allowed(r, host, port, "a connection"))
		goto fail;

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
	if (sl_redis_auth(c, &r->lim, r->user, r->pass, r->why, sizeof(r->why)))
		goto fail;
	return c;
fail:
	if (c)
		redisFree(c);
	return NULL;
}

int sl_redis_auth(redisContext *c, const struct sl_redis_limits *lim,
		  const char *user, const char *pass, char *why, size_t size)
{
	redisReply *x;
	int err = 0;

	if (!pass)
		return 0;
	/* as arguments, never formatted into the command: a password may
	 * hold any byte but NUL
	 */
	if (user && *user)
		x = sl_redis_commandl(c, lim, "AUTH", user, pass, NULL);
	else
		x = sl_redis_commandl(c, lim, "AUTH", pass, NULL);
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

/* A reply that is neither the answer nor a reason: the connection state
 * or the server's error, for the log.
 */
void redis_reply_failed(struct sl_redis *r, uint64_t now_ms,
			const redisReply *x)
{
	char why[160];

	if (!x || (r->c && r->c->err)) {
		redis_went_down(r, now_ms, "unreachable", context_error(r));
		return;
	}
	if (x->type == REDIS_REPLY_ERROR)
		snprintf(why, sizeof(why), "%.*s", (int)(x->len < 120 ? x->len :
							 120), x->str);
	else
		snprintf(why, sizeof(why), "a reply of an unexpected form "
			 "(type %d)", x->type);
	redis_went_down(r, now_ms, "failed", why);
}
