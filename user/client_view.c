// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include "client_view.h"
#include "sl_algo.h"
#include "sl_key.h"

void sl_client_view_compute(const struct sl_maps *m, const struct sl_rule *rule,
			    const void *cpus, __u64 now_ms,
			    struct sl_client_view *v)
{
	struct sl_params p;
	struct sl_tally t;
	__u64 at;

	sl_params_from_rule(&p, rule);
	sl_tally_cpus(&t, cpus, m->nr_cpus, &p, now_ms);
	v->used = t.used;
	v->remaining = sl_remaining(&t, &p);
	at = sl_accept_at_ms(cpus, m->nr_cpus, &p, now_ms, 1);
	v->retry_after_ms = at == SL_NEVER ? p.window_ms : at - now_ms;
	v->reset_ms = t.next_expiry_ms == SL_NEVER || t.next_expiry_ms < now_ms ?
		      0 : t.next_expiry_ms - now_ms;
}

int sl_client_view_read(const struct sl_maps *m, const struct sl_rule *rule,
			const struct sl_client_key *key, __u64 now_ms,
			struct sl_client_view *v)
{
	size_t stride = (sl_state_size(rule->algorithm) + 7) & ~7ul;
	void *cpus = calloc(m->nr_cpus, stride);

	if (!cpus)
		return -ENOMEM;
	/* no entry: a client never seen, or evicted; both start fresh */
	bpf_map_lookup_elem(sl_state_fd(m, rule->algorithm), key, cpus);
	sl_client_view_compute(m, rule, cpus, now_ms, v);
	free(cpus);
	return 0;
}
