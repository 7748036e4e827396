/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sync health as `status` and `stats` show it, read from the pinned
 * sl_sync_status that the running service writes every round.
 */
#ifndef SL_SYNC_HEALTH_H
#define SL_SYNC_HEALTH_H

#include <json-c/json.h>
#include <stdbool.h>
#include "instance/instance_maps.h"
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

/* What `status` and `stats` show of the sync: the pinned record, and the
 * ages and liveness derived from it at one instant, so that the JSON and
 * the text say the same.
 */
struct sl_sync_health {
	struct sl_sync_status st;
	__u64 now_ms;			/* TAI ms the ages count to */
	__u64 last_round_ago_ms;
	__u32 nr_peers;			/* st.nr_peers, at most SL_MAX_PEERS */
	__u32 peers_up;
	struct {
		__u64 heard_ago_ms;
		bool up;
	} peer[SL_MAX_PEERS];
};

/* 0, or -ENOENT when no service syncs this instance, or -errno. */
int sl_sync_health_read(const struct sl_maps *m, __u64 now_ms,
			struct sl_sync_health *h);
/* The "sync" object of `status --json` and `stats --json`. */
json_object *sl_sync_health_to_json(const struct sl_sync_health *h);
/* The same, for people. */
void sl_sync_health_print(const struct sl_sync_health *h);

#endif /* SL_SYNC_HEALTH_H */
