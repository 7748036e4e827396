// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <bpf/bpf.h>
#include "util/clock.h"
#include "rules/rules.h"
#include "service/healthz.h"
#include "service/state.h"
#include "sync/health.h"

bool sl_healthz(const struct sl_maps *m, char *reason, size_t len)
{
	struct sl_sync_health sync;
	struct sl_service_state st;
	struct sl_config cfg;
	__u32 key;

	if (bpf_map_get_next_key(m->devices, NULL, &key)) {
		snprintf(reason, len, "no device attached: nothing is limited");
		return false;
	}
	if (sl_rules_read_config(m, &cfg)) {
		snprintf(reason, len, "cannot read the running rules");
		return false;
	}
	if (!cfg.nr_rules) {
		snprintf(reason, len, "no rules: every packet passes");
		return false;
	}
	/* a config that asks for sync and a sync that does not run: each
	 * node of the fleet enforces the whole limit on its own
	 */
	if (!sl_service_state_read(&st) && st.pid && st.sync_wanted &&
	    st.sync_down[0]) {
		snprintf(reason, len, "sync is down: %.*s",
			 (int)sizeof(st.sync_down), st.sync_down);
		return false;
	}
	/* a service that syncs publishes a round every interval: one that
	 * has stopped decides on counts that no longer include the peers'
	 */
	if (!sl_sync_health_read(m, sl_now_tai_ms(), &sync) &&
	    sync.last_round_ago_ms >
	    (__u64)SL_PEER_UP_INTERVALS * sync.st.interval_ms) {
		snprintf(reason, len, "sync is stale: last round %llu ms ago",
			 (unsigned long long)sync.last_round_ago_ms);
		return false;
	}
	return true;
}
