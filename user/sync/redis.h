/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Redis as the fleet's shared counter store (sync.backend: redis): each
 * round a node pushes the units it accepted since the last round and
 * reads back the other nodes' totals, in one atomic Lua script per batch
 * (EVALSHA, loaded at connect). An unreachable store is a peer outage:
 * the round is skipped, counted, and retried with backoff; the data path
 * never waits for it (NFR-3). A Redis Cluster, when configured so, is
 * routed here (slot map, a connection per master, MOVED/ASK followed to
 * the configured nodes only); AUTH is sent on every connection, and
 * only to a configured node. Every command has one deadline and a cap
 * on its reply (sl_redis_command). The layout in the store (sync/redis_keys.c), its expiry
 * (redis_expiry.c), the Cluster routing (redis_cluster.c) and the bounds
 * on a round (redis_round.c, redis_link.c): the files
 * sync/redis_internal.h lists; running it: docs/REDIS.md.
 */
#ifndef SL_SYNC_REDIS_H
#define SL_SYNC_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hiredis/hiredis.h>
#include "sync/engine.h"

struct sl_redis;

/* What one command may take: its whole round trip (not each read) and
 * the bytes of its reply.
 */
struct sl_redis_limits {
	unsigned timeout_ms;
	size_t max_reply;
};

#define SL_REDIS_MAX_REPLY_DEFAULT	(4u << 20)

/* Send one command on the blocking context c and read its reply within
 * lim: the reply, or NULL with c->err and c->errstr set (no whole reply
 * before the deadline, a reply over max_reply, a broken connection); c
 * is then out of step and only fit to be freed.
 */
redisReply *sl_redis_command(redisContext *c, const struct sl_redis_limits *lim,
			     int argc, const char **argv, const size_t *argvlen);
/* The same, its words as NUL-terminated strings ending with NULL (8 at
 * most).
 */
redisReply *sl_redis_commandl(redisContext *c, const struct sl_redis_limits *lim,
			      ...);

/* Parses redis://HOST:PORT (a standalone server, a proxy, or any node of
 * a Cluster); does not need the server to be up. NULL with
 * a message if the URL is not valid.
 */
struct sl_redis *sl_redis_new(const char *url, unsigned node,
			      unsigned interval_ms);
void sl_redis_free(struct sl_redis *r);

/* redis://HOST[:PORT][/] (HOST may be [IPv6]; port 6379 by default) into
 * host (NUL-terminated) and port: 0, or -EINVAL if it is not one. The
 * check API's central mode (service/check_central.c) reads the same URL.
 */
int sl_redis_url_parse(const char *url, char *host, size_t host_size,
		       int *port);

/* AUTH on every (re)connect: `user` (NULL or "": the default user) and
 * `pass` (NULL: no AUTH). Copied; set before the first round.
 */
int sl_redis_set_auth(struct sl_redis *r, const char *user, const char *pass);

/* Send AUTH [user] pass on a fresh connection (the sync engine's and the
 * central checks'), within lim: 0, or -EACCES with the server's words
 * (WRONGPASS, ...) or the connection's error in why.
 */
int sl_redis_auth(redisContext *c, const struct sl_redis_limits *lim,
		  const char *user, const char *pass, char *why, size_t size);

/* Redis Cluster (sync.cluster): off by default, and then the URL's
 * server serves every slot whatever it answers. On: its slot map is
 * read at connect, and its masters and MOVED/ASK redirects are followed,
 * but only to the URL's node or one added with sl_redis_allow_node
 * (HOST as the Cluster names it: its announced address). Any other is
 * refused: counted (sl_redis_refused), logged once, and the command
 * fails like an unreachable store. Set before the first round.
 */
void sl_redis_set_cluster(struct sl_redis *r, bool on);
int sl_redis_allow_node(struct sl_redis *r, const char *host, int port);
unsigned long long sl_redis_refused(const struct sl_redis *r);

/* The largest reply a command may take (default
 * SL_REDIS_MAX_REPLY_DEFAULT): larger is a store failure.
 */
void sl_redis_set_max_reply(struct sl_redis *r, size_t bytes);

/* One sync round at now_ms (TAI): collect this node's entries from `s`,
 * push them, read back the others' totals and merge them into the peer
 * view through `s`, then report the store's state to s's status
 * (backend_up, backend_errors, backend_reconnects). Returns within about one interval whatever the
 * server does: work left at the interval waits for the next round, and
 * a command waits at most half an interval (name resolution aside).
 * Backoff is timed by now_ms, so a model clock drives it too.
 */
void sl_redis_round(struct sl_redis *r, struct sl_sync_engine *s,
		    uint64_t now_ms);

#endif /* SL_SYNC_REDIS_H */
