/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sync health as `status` and `stats` show it, read from the pinned
 * sl_sync_status that the running service writes every round.
 */
#ifndef SL_SYNC_STATUS_H
#define SL_SYNC_STATUS_H

#include <json-c/json.h>
#include <stdbool.h>
#include "core/instance_maps.h"
#include "slicelimit.h"

/* A peer is up while heard within this many intervals. */
#define SL_PEER_UP_INTERVALS	3

/* Since the peer's last accepted message (0 if the clock stepped back). */
static inline __u64 sl_peer_heard_ago(const struct sl_sync_peer *p,
				      __u64 now_ms)
{
	return now_ms > p->last_heard_ms ? now_ms - p->last_heard_ms : 0;
}

static inline bool sl_peer_up(const struct sl_sync_peer *p,
			      const struct sl_sync_status *st, __u64 now_ms)
{
	return sl_peer_heard_ago(p, now_ms) <
	       (__u64)SL_PEER_UP_INTERVALS * st->interval_ms;
}

/* The "sync" object, or NULL when no service syncs this instance. */
json_object *sl_sync_status_json(const struct sl_maps *m, __u64 now_ms);

/* The same, for people. */
void sl_sync_status_print(json_object *sync);

#endif /* SL_SYNC_STATUS_H */
