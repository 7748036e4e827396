/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A client's standing under a rule, computed from its state (and its
 * peers') by the same include/ code the kernel decides with.
 */
#ifndef SL_STATE_CLIENT_VIEW_H
#define SL_STATE_CLIENT_VIEW_H

#include <stdbool.h>
#include "instance/instance_maps.h"
#include "slicelimit.h"

struct sl_client_view {
	__u64 used;
	__u64 remaining;
	__u64 retry_after_ms;	/* 0: a request of the units asked about
				 * (one for a read) would pass now */
	__u64 reset_ms;		/* until the count next falls (0: nothing
				 * counted) */
	bool exempt;		/* the rule exempts the client: the kernel
				 * counts nothing for it (state/client_exempt.h) */
};

/* Read the client's state (none yet: a fresh client) and, when the
 * instance syncs, its peers' part and the layout's limit, and compute.
 */
int sl_client_view_read(const struct sl_maps *m, const struct sl_rule *rule,
			const struct sl_client_key *key, __u64 now_ms,
			struct sl_client_view *v);

/* The layout the instance syncs with: false when it does not (local). */
bool sl_client_view_sync_conf(const struct sl_maps *m, struct sl_sync_conf *sc);

/* The same as sl_client_view_read with the layout already read (SC NULL:
 * the instance does not sync), for a caller that keeps it; the retry is
 * until a request of UNITS (>= 1) fits whole.
 */
int sl_client_view_compute(const struct sl_maps *m, const struct sl_rule *rule,
			   const struct sl_client_key *key, __u64 now_ms,
			   const struct sl_sync_conf *sc, __u32 units,
			   struct sl_client_view *v);

/* The view from copies already in hand: STATE the client's (of the
 * rule's algorithm's size; a zero one for a client without), PV its peer
 * view and SC the layout (both NULL: the instance does not sync).
 */
void sl_client_view_of(const struct sl_rule *rule, const void *state,
		       const struct sl_peer_view *pv,
		       const struct sl_sync_conf *sc, __u64 now_ms,
		       __u32 units, struct sl_client_view *v);

#endif /* SL_STATE_CLIENT_VIEW_H */
