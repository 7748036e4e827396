/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The check API's central mode (sync: { backend: redis, layout: central }):
 * each /v1/check is decided in Redis by one atomic Lua script (EVALSHA,
 * user/service/lua/check_*.lua), so every node answers from one count per client
 * and the fleet allows exactly what one node would. Packets keep deciding
 * in the kernel (delayed sync over the Redis backend).
 *
 * An unreachable store, a timeout or a reply that is not the script's
 * answer is an error, never a decision: the caller decides locally (fail
 * open, NFR-3). Each command has one deadline for its whole round trip
 * (a store that trickles its answer cannot hold a check past it) and a
 * cap on its reply (sl_redis_command). A failure opens the circuit: the
 * connection is dropped and, for a backoff from one sync interval
 * doubling up to 5 s, checks skip the store at once (decided locally);
 * then one check probes it with a fresh connection.
 */
#ifndef SL_SERVICE_CHECK_CENTRAL_H
#define SL_SERVICE_CHECK_CENTRAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "state/client_view.h"
#include "slicelimit.h"

struct sl_central;

/* redis://HOST:PORT; no connection yet. Every command waits at most
 * interval / 2 (at least 50 ms) in all. NULL with a message if the URL
 * is bad.
 */
struct sl_central *sl_central_new(const char *url, unsigned interval_ms);
void sl_central_free(struct sl_central *c);

/* AUTH [user] pass on every (re)connect (sl_redis_auth); pass NULL: none.
 * A refused login is an outage like any other: counted, checks fail open.
 */
int sl_central_set_auth(struct sl_central *c, const char *user,
			const char *pass);

/* Decide a request of `cost` units (>= 1) of `client` (bytes, any
 * content) under `rule` in the store, or only read (cost 0); the view's
 * retry is until `cost` units fit (one for a read). 0 with *allowed and
 * *v set;
 * -EAGAIN: backing off after an outage; -EIO: the store is unreachable or
 * timed out (the connection was dropped); -EPROTO: the store answered
 * something other than the script's reply (counted). Thread-safe: one
 * command at a time on one connection.
 */
int sl_central_check(struct sl_central *c, const struct sl_rule *rule,
		     const char *client, size_t len, __u32 cost,
		     bool *allowed, struct sl_client_view *v);

#define SL_CENTRAL_SECRET	32	/* bytes of sync.key_file's key */
#define SL_CENTRAL_ID_HASH	16	/* bytes of an API key's hash */

/* The secret (sync.key_file's) that keys the hashes API keys are stored
 * under: the same on every node of a fleet, or they count apart. Unset,
 * the hash is unkeyed (not the key in clear, but a guessable key can be
 * found by trying). Set before the first check.
 */
void sl_central_set_id_key(struct sl_central *c,
			   const uint8_t secret[SL_CENTRAL_SECRET]);

/* The client id the store holds for `client` (sl_check_central_id's
 * "k:KEY" or "ip:ADDR[/BITS]"): "kh:" and the hex of BLAKE2b-128 of KEY
 * keyed with BLAKE2b-256("slicelimit central client ids", secret) for an
 * API key, an address's id as it is. NUL-terminated; its length, or
 * -ENAMETOOLONG.
 */
int sl_central_client_id(const struct sl_central *c, const char *client,
			 size_t len, char *buf, size_t size);

/* The largest reply a command may take (sync.max_reply). */
void sl_central_set_max_reply(struct sl_central *c, size_t bytes);

struct sl_central_stats {
	bool up;			/* connected, last command answered */
	unsigned long long errors;	/* failed commands and bad replies */
	unsigned long long reconnects;	/* connections after the first */
};

void sl_central_stats(struct sl_central *c, struct sl_central_stats *s);

/* The store's key of a client's state: "slc:{RULE:ID}:ALG", ID as given
 * (sl_central_check gives sl_central_client_id's).
 * The braces are the Cluster hash tag: one client's keys share a slot.
 * Length written (without NUL), or -ENAMETOOLONG.
 */
int sl_central_key(char *buf, size_t size, const struct sl_rule *rule,
		   const char *client, size_t len);

#endif /* SL_SERVICE_CHECK_CENTRAL_H */
