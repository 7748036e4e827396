// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What the running service looks at once a second, between signals:
 * what another command changed under it, the sync's rounds and its
 * store, and the list entries that ended.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "util/clock.h"
#include "instance/lists.h"
#include "instance/loader.h"
#include "util/log.h"
#include "service/service_run.h"
#include "sync/health.h"

/* Ended list entries are no entries to the data path already; the
 * sweep only gives their room back, so a few seconds late is fine.
 */
#define SL_LIST_SWEEP_MS	10000

/* Remove the list entries that ended (bpf/lists.h), so that the tries do
 * not fill with them. A prefix blocked again between the sweep's look
 * and its delete loses its new entry: the sweep looks again just before
 * it deletes, which leaves that to a few microseconds.
 */
static void sweep_lists(struct sl_run *r)
{
	static __u64 last_ms;
	__u64 now = sl_now_tai_ms();
	unsigned removed;
	int err;

	if (now - last_ms < SL_LIST_SWEEP_MS)
		return;
	last_ms = now;
	err = sl_list_sweep(&r->m, now, &removed);
	if (err)
		pr_warn("cannot sweep the block and allow lists: %s", strerror(-err));
	else if (removed)
		pr_info("lists: %u ended entr%s removed", removed,
			removed == 1 ? "y" : "ies");
}

/* A sync whose rounds stopped (its thread stuck) is down as one that
 * never started: status and /metrics say so with /healthz, and it is
 * up again when the rounds resume. Said in the log once per change.
 */
static void watch_sync_rounds(struct sl_run *r)
{
	struct sl_sync_health h;
	char why[sizeof(r->st.sync_down)] = "";

	if (!r->sync)
		return;
	if (!sl_sync_health_read(&r->m, sl_now_tai_ms(), &h) &&
	    h.last_round_ago_ms > (__u64)SL_PEER_UP_INTERVALS * h.st.interval_ms)
		snprintf(why, sizeof(why), "its rounds stopped (none for over %llu ms)",
			 (unsigned long long)SL_PEER_UP_INTERVALS * h.st.interval_ms);
	if (!strncmp(why, r->st.sync_down, sizeof(why)))
		return;
	if (why[0])
		pr_warn("sync: %s; this node decides on its own counts", why);
	else
		pr_notice("sync: rounds again");
	memcpy(r->st.sync_down, why, sizeof(why));
	sl_service_state_publish_or_warn(&r->st);
}

/* What the service manages, changed by another command (--force): said
 * once per change, in the log and in status, until a reload puts its
 * config back.
 */
static void changed_under(struct sl_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void changed_under(struct sl_run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->st.changed, sizeof(r->st.changed), fmt, ap);
	va_end(ap);
	r->st.changed_ms = sl_now_tai_ms();
	pr_warn("changed under the service: %s; 'slicelimit reload' puts %s back",
		r->st.changed, r->st.config);
	sl_service_state_publish_or_warn(&r->st);
}

static void watch_ownership(struct sl_run *r)
{
	__u32 epoch = sl_run_applied_epoch(&r->m), i;

	if (epoch && epoch != r->epoch) {
		changed_under(r, "the rules were replaced (epoch %u, the service applied %u)",
			      epoch, r->epoch);
		r->epoch = epoch;
	}
	/* the device records, in the map this run opened: a detach
	 * removes its record there, and this reads it without the pins'
	 * directory (root's, and out of reach once the service dropped it)
	 */
	for (i = 0; i < r->st.nr_devices && i < SL_MAX_DEVICES; i++) {
		bool gone = !sl_maps_has_device(&r->m, r->st.dev[i].name);

		if (gone && !(r->missing & (1ULL << i)))
			changed_under(r, "%s was detached", r->st.dev[i].name);
		r->missing = gone ? r->missing | (1ULL << i) :
				    r->missing & ~(1ULL << i);
	}
}

void sl_run_watch(struct sl_run *r)
{
	watch_ownership(r);
	if (r->sync)
		sl_sync_watch(&r->sync_watch, &r->m,
			      r->st.sync_url[0] ? r->st.sync_url : NULL,
			      sl_now_tai_ms());
	watch_sync_rounds(r);
	sweep_lists(r);
}
