/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Redis as the fleet's shared counter store (sync.backend: redis): each
 * round a node pushes the units it accepted since the last round and
 * reads back the other nodes' totals, in one atomic Lua script per batch
 * (EVALSHA, loaded at connect). An unreachable store is a peer outage:
 * the round is skipped, counted, and retried with backoff; the data path
 * never waits for it (NFR-3). A Redis Cluster is routed here (slot map,
 * a connection per master, MOVED/ASK followed); AUTH is sent on every
 * connection. The layout in the store (sync/redis_keys.c), its expiry
 * (redis_expiry.c), the Cluster routing (redis_cluster.c) and the bounds
 * on a round (redis_round.c, redis_link.c): the files
 * sync/redis_internal.h lists; running it: docs/REDIS.md.
 */
#ifndef SL_SYNC_REDIS_H
#define SL_SYNC_REDIS_H

#include <stdint.h>
#include <hiredis/hiredis.h>
#include "sync/engine.h"

struct sl_redis;

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
 * central checks'): 0, or -EACCES with the server's words (WRONGPASS,
 * ...) or the connection's error in why.
 */
int sl_redis_auth(redisContext *c, const char *user, const char *pass,
		  char *why, size_t size);

/* One sync round at now_ms (TAI): collect this node's entries from `s`,
 * push them, read back the others' totals and merge them into the peer
 * view through `s`, then report the store's state to s's status
 * (backend_up, backend_errors, backend_reconnects). Returns within about one interval whatever the
 * server does: work left at the interval waits for the next round, and
 * a command waits at most half an interval (name resolution aside).
 * Backoff is timed by now_ms, so a model clock drives it too.
 */
void sl_redis_round(struct sl_redis *r, struct sl_sync *s, uint64_t now_ms);

#endif /* SL_SYNC_REDIS_H */
