// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include "util/clock.h"
#include "instance/pinned_record.h"
#include "instance/stats_reset.h"

static int zero_percpu(const struct sl_maps *m, int fd, __u32 key, size_t size)
{
	void *zeros = calloc(m->nr_cpus, size);
	int err = 0;

	if (!zeros)
		return -ENOMEM;
	if (bpf_map_update_elem(fd, &key, zeros, BPF_EXIST))
		err = -errno;
	free(zeros);
	return err;
}

int sl_stats_reset(const struct sl_maps *m, __u64 *at_ms)
{
	__u32 id;
	int err;

	/* every id, not only the live rules': a rule applied later must not
	 * bring back counts from before the reset
	 */
	for (id = 0; id < SL_MAX_RULES; id++) {
		err = zero_percpu(m, m->rule_stats, id, sizeof(struct sl_rule_stats));
		if (err)
			return err;
	}
	err = zero_percpu(m, m->global_stats, 0, sizeof(struct sl_global_stats));
	if (!err)
		err = zero_percpu(m, m->list_stats, 0, sizeof(struct sl_list_stats));
	if (err)
		return err;
	*at_ms = sl_now_tai_ms();
	return sl_pinned_record_write(SL_STATS_RESET_PIN, "sl_stats_reset",
				      at_ms, sizeof(*at_ms));
}

__u64 sl_stats_reset_at(void)
{
	__u64 at;

	return sl_pinned_record_read(SL_STATS_RESET_PIN, &at, sizeof(at)) ? 0 : at;
}
