// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/log.h"
#include "service/sync_watch.h"
#include "sync/health.h"

static __u64 refused_total(const struct sl_sync_status *st)
{
	return st->rejected_forged + st->rejected_malformed +
	       st->rejected_replayed + st->rejected_stale +
	       st->rejected_future + st->rejected_own +
	       st->rejected_unknown_peer + st->rejected_wrong_address;
}

void sl_sync_watch(struct sl_sync_watch *w, const struct sl_maps *m,
		   const char *redis_url, __u64 now_ms)
{
	struct sl_sync_health h;
	__u64 refused, up = 0;
	__u32 i;

	if (sl_sync_health_read(m, now_ms, &h))
		return;		/* no sync runs */
	if (!w->started_ms)
		w->started_ms = now_ms;
	/* until a peer could have been heard, "down" means nothing yet */
	if (now_ms - w->started_ms <
	    (__u64)(SL_PEER_UP_INTERVALS + 1) * h.st.interval_ms)
		return;
	for (i = 0; i < h.nr_peers && i < 64; i++)
		if (h.peer[i].up)
			up |= 1ULL << i;
	refused = refused_total(&h.st);
	for (i = 0; i < h.nr_peers && i < 64; i++) {
		bool now_up = up >> i & 1;

		if (w->seen && now_up == (w->peer_up >> i & 1))
			continue;
		if (!w->seen && now_up)
			continue;	/* up from the start: nothing to say */
		if (now_up)
			pr_notice("sync: peer %u (%s) is up again",
				  h.st.peer[i].node, h.st.peer[i].addr);
		else
			pr_warn("sync: peer %u (%s) is down: not heard for %llu ms; this node counts without it",
				h.st.peer[i].node, h.st.peer[i].addr,
				(unsigned long long)h.peer[i].heard_ago_ms);
	}
	/* a peer never heard has no entry: the count says it */
	if (!redis_url && (w->seen ? h.peers_up != w->peers_up :
			   h.peers_up < h.st.peers_configured)) {
		if (h.peers_up < h.st.peers_configured)
			pr_warn("sync: %u of %u peers up", h.peers_up,
				h.st.peers_configured);
		else
			pr_notice("sync: all %u peers up", h.peers_up);
	}
	/* the store's down and up are logged by the sync engine, once per
	 * change, with the reason (sync/redis_link.c): a second line here
	 * would double every flap
	 */
	if (w->seen && refused > w->refused && !w->refusing)
		pr_warn("sync: refusing datagrams: %llu from unknown peers, %llu from a wrong address, %llu forged, %llu malformed, %llu replayed, %llu stale, %llu from the future so far",
			(unsigned long long)h.st.rejected_unknown_peer,
			(unsigned long long)h.st.rejected_wrong_address,
			(unsigned long long)h.st.rejected_forged,
			(unsigned long long)h.st.rejected_malformed,
			(unsigned long long)h.st.rejected_replayed,
			(unsigned long long)h.st.rejected_stale,
			(unsigned long long)h.st.rejected_future);
	else if (w->seen && refused == w->refused && w->refusing)
		pr_notice("sync: no datagram refused in the last second (%llu in all)",
			  (unsigned long long)refused);
	w->refusing = w->seen && refused > w->refused;
	w->refused = refused;
	w->peer_up = up;
	w->peers_up = h.peers_up;
	w->backend_up = h.st.backend_up;
	w->seen = true;
}
