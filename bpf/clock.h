/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The clocks of the data path.
 *
 * Decisions use TAI milliseconds (bpf_ktime_get_tai_ns): slice numbers must
 * mean the same on every node. Tests use a model clock instead: the harness
 * loads its own unpinned copy with sl_use_model_clock set and writes
 * sl_model_now_ms. Off in production, where the verifier removes the branch.
 *
 * The over-limit cache has a clock of its own, because reading TAI is the
 * largest cost left on that path (measured: about half of an over-limit
 * packet, bench/RESULTS-micro.txt): the coarse monotonic clock, the time of
 * the last tick, which is a load instead of a clocksource read, in ns (a
 * 64-bit division per packet costs as much as the read). It lags the exact
 * clock by at most one tick, so a cached block is written in exact
 * monotonic time and honoured while the coarse clock plus a tick is before
 * it: the cache never holds a block past its end, and for the last tick of
 * a block the exact path decides. Under the model clock the cache's clock
 * is the model's ms.
 */
#ifndef SL_CLOCK_H
#define SL_CLOCK_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "sl_algo.h"

const volatile __u8 sl_use_model_clock = 0;
__u64 sl_model_now_ms = 0;

/* A tick at HZ=100, the slowest Linux runs at. */
#define SL_COARSE_LAG_NS	10000000ULL

static __always_inline __u64 sl_now_ms(void)
{
	if (sl_use_model_clock)
		return sl_model_now_ms;
	/* TAI, not boot time: slice numbers must agree across hosts */
	return bpf_ktime_get_tai_ns() / 1000000;
}

/* The over-limit cache's "now": never before the exact time. */
static __always_inline __u64 sl_cache_now(void)
{
	if (sl_use_model_clock)
		return sl_model_now_ms;
	return bpf_ktime_get_coarse_ns() + SL_COARSE_LAG_NS;
}

/* The cache's end for a block that ends at `until_ms` on the decision's
 * clock, seen at `now_ms` on it (now_ms <= until_ms).
 */
static __always_inline __u64 sl_cache_until(__u64 now_ms, __u64 until_ms)
{
	if (sl_use_model_clock || until_ms == SL_NEVER)
		return until_ms;
	return bpf_ktime_get_ns() + (until_ms - now_ms) * 1000000;
}

#endif /* SL_CLOCK_H */
