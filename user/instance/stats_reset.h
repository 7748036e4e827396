/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Zeroing the counters (`stats --reset`), and when it was last done: a
 * pinned record beside the maps (SL_STATS_RESET_PIN), so `stats` can say
 * what its numbers count from. It goes with the other pins.
 */
#ifndef SL_INSTANCE_STATS_RESET_H
#define SL_INSTANCE_STATS_RESET_H

#include <linux/types.h>
#include "instance/instance_maps.h"
#include "slicelimit.h"

#define SL_STATS_RESET_PIN	SL_PIN_DIR "/sl_stats_reset"

/* Zero every rule's counters and the global ones, and record the time
 * (TAI ms) in *at_ms. 0 or -errno.
 */
int sl_stats_reset(const struct sl_maps *m, __u64 *at_ms);
/* When the counters were last reset (TAI ms), 0: never. */
__u64 sl_stats_reset_at(void);

#endif /* SL_INSTANCE_STATS_RESET_H */
