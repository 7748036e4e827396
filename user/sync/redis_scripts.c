// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The scripts of a round, loaded on every connection (SCRIPT LOAD): Redis
 * answers each one's SHA1, which EVALSHA then names. The Makefile embeds
 * user/sync/lua/NAME.lua as the C string sl_lua_NAME; what each script
 * takes and returns is written at its top.
 */
#include "lua/sync_index.lua.h"
#include "lua/sync_round.lua.h"
#include "sync/redis_internal.h"

static int load_script(struct sl_redis *r, const char *src, char sha[41])
{
	redisReply *x;
	int err = -EPROTO;

	x = sl_redis_commandl(r->c, &r->lim, "SCRIPT", "LOAD", src, NULL);
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
