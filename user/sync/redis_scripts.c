// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The scripts of a round, loaded on every connection (SCRIPT LOAD): Redis
 * answers each one's SHA1, which EVALSHA then names. Their text is the
 * file's, byte for byte (the Makefile embeds user/sync/lua/NAME.lua as
 * sl_lua_NAME).
 *
 * sync_round.lua. KEYS: client hashes. ARGV: node, slices to keep, then
 * for each key: expiry (ms), n, and n pairs (slice start, units) to add.
 * Returns for each key the other nodes' units per slice start, flat:
 * {s, u, s, u}. A key with n = 0 is only read: its expiry is left alone.
 *
 * sync_index.lua. KEYS: the index and its clock. ARGV: from (score),
 * offset, limit (0: read nothing), keep (µs; 0: no trim), then client ids
 * to add. Reads before adding, so a node does not read back what it adds.
 * Returns {now, {id, score, id, score, ...}} with now the score of this
 * call, strictly above every earlier call's (the store's clock may step
 * back).
 */
#include "lua/sync_index.lua.h"
#include "lua/sync_round.lua.h"
#include "sync/redis_internal.h"

static int load_script(struct sl_redis *r, const char *src, char sha[41])
{
	redisReply *x;
	int err = -EPROTO;

	x = redisCommand(r->c, "SCRIPT LOAD %s", src);
	if (x && x->type == REDIS_REPLY_STRING && x->len == 40 &&
	    strspn(x->str, "0123456789abcdef") == 40) {
		err = 0;
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

int redis_load_scripts(struct sl_redis *r)
{
	int err = load_script(r, sl_lua_sync_round, r->sha_round);

	return err ? err : load_script(r, sl_lua_sync_index, r->sha_index);
}
