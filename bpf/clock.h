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
 * largest cost left on that path (docs/MEASUREMENTS.md): the coarse
 * monotonic clock, the time of the last tick, which is a load instead of a
 * clocksource read, in ns (a
 * 64-bit division per packet costs as much as the read). It lags the exact
 * clock by at most one tick, so a cached block is written in exact
 * monotonic time and honoured while the coarse clock plus a tick is before
 * it: the cache never holds a block past its end, and for the last tick of
 * a block the exact path decides. Under the model clock the cache's clock
 * is the model's monotonic ms (sl_model_mono_ms): it follows the model
 * clock forward and stands still when it steps back, as the monotonic
 * clock does when TAI is stepped, so a cached block never outlasts the
 * state's own under a model step either.
 */
#ifndef SL_BPF_CLOCK_H
#define SL_BPF_CLOCK_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "sl_algo.h"

const volatile __u8 sl_use_model_clock = 0;
__u64 sl_model_now_ms = 0;
__u64 sl_model_mono_ms = 0;	/* user/instance/instance.c moves it */

/* A tick at HZ=100, the slowest Linux runs at. */
#define SL_COARSE_LAG_NS	10000000ULL

static __always_inline __u64 sl_now_ms(void)
{
	if (sl_use_model_clock)
		return sl_model_now_ms;
	/* TAI, not boot time: slice numbers must agree across hosts */
	return bpf_ktime_get_tai_ns() / 1000000;
}

/* The cache keeps a block's end as SL_CACHE_END_BITS bits (beside a
 * check of the block tag that computed it, in one word: bpf/block.h; the
 * front cache keeps the same bits), compared by wrapping difference: in
 * units of 2^SL_CACHE_SHIFT ns (about a ms) of the monotonic clock, or
 * model ms. The compare is exact while the end is within 2^39 units of
 * now, about 17 years: a block is cached for at most SL_MAX_WINDOW_MS (a
 * longer one is decided again then), and an end left in a state whose
 * client went away reads as past until the clock has moved 2^39 units
 * on, which no host's monotonic clock does (the model clock of a test
 * must not either, for one client).
 */
#define SL_CACHE_SHIFT		20
#define SL_CACHE_END_BITS	40
#define SL_CACHE_END_MASK	((1ULL << SL_CACHE_END_BITS) - 1)

/* The over-limit cache's "now": never before the exact time. */
static __always_inline __u64 sl_cache_now(void)
{
	if (sl_use_model_clock)
		return sl_model_mono_ms;
	return (bpf_ktime_get_coarse_ns() + SL_COARSE_LAG_NS) >> SL_CACHE_SHIFT;
}

/* The cache's end for a block that ends at `until_ms` on the decision's
 * clock, seen at `now_ms` on it. Rounded down, so the cache never holds a
 * block past its end (the exact path decides its last unit of time).
 */
static __always_inline __u64 sl_cache_until(__u64 now_ms, __u64 until_ms)
{
	__u64 len = until_ms > now_ms ? until_ms - now_ms : 0;

	if (len > SL_MAX_WINDOW_MS)
		len = SL_MAX_WINDOW_MS;
	if (sl_use_model_clock)
		return (sl_model_mono_ms + len) & SL_CACHE_END_MASK;
	return ((bpf_ktime_get_ns() + len * 1000000) >> SL_CACHE_SHIFT) &
	       SL_CACHE_END_MASK;
}

/* Whether the cache's clock is still before a cached end: the low
 * SL_CACHE_END_BITS of `end` (what is above them is not looked at).
 */
static __always_inline int sl_cache_before(__u64 end)
{
	return (__s64)((end - sl_cache_now()) << (64 - SL_CACHE_END_BITS)) > 0;
}

#endif /* SL_BPF_CLOCK_H */
