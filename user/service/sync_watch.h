/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sync trouble in the service's log: a peer gone or back, the Redis
 * store down or up, refused datagrams (forged, malformed, replayed, stale,
 * from the future) starting or stopping. Said once per change of state,
 * from the health the sync thread publishes (sl_sync_status), so a
 * partition is one line, not one a round, and not only a counter.
 */
#ifndef SL_SERVICE_SYNC_WATCH_H
#define SL_SERVICE_SYNC_WATCH_H

#include <stdbool.h>
#include <linux/types.h>
#include "instance/instance_maps.h"
#include "slicelimit.h"

struct sl_sync_watch {
	bool seen;		/* a first look taken: changes count from it */
	__u64 started_ms;	/* TAI: peers get time to be heard first */
	__u64 peer_up;		/* bit i: st.peer[i] was up */
	__u32 peers_up;
	__u32 backend_up;
	__u64 refused;		/* datagrams refused, all reasons */
	bool refusing;		/* the count grew at the last look */
};

/* One look (the service calls it about every second); REDIS_URL: the
 * store's, or NULL for a UDP mesh.
 */
void sl_sync_watch(struct sl_sync_watch *w, const struct sl_maps *m,
		   const char *redis_url, __u64 now_ms);

#endif /* SL_SERVICE_SYNC_WATCH_H */
