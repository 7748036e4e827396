// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* PLACEHOLDER being replaced by the Redis backend: refuses to start. */
#include <stdlib.h>
#include "common.h"
#include "sync_redis.h"

struct sl_redis *sl_redis_new(const char *url, unsigned node,
			      unsigned interval_ms)
{
	(void)url; (void)node; (void)interval_ms;
	pr_error("sync.backend redis: not built yet");
	return NULL;
}

void sl_redis_free(struct sl_redis *r)
{
	free(r);
}

void sl_redis_round(struct sl_redis *r, struct sl_sync *s, uint64_t now_ms)
{
	(void)r; (void)s; (void)now_ms;
}
