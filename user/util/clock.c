// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <time.h>
#include "util/clock.h"

static uint64_t ns_of(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t sl_now_tai_ms(void)
{
	return ns_of(CLOCK_TAI) / 1000000;
}

uint64_t sl_now_real_ms(void)
{
	return ns_of(CLOCK_REALTIME) / 1000000;
}

uint64_t sl_now_mono_ms(void)
{
	return ns_of(CLOCK_MONOTONIC) / 1000000;
}

uint64_t sl_now_mono_ns(void)
{
	return ns_of(CLOCK_MONOTONIC);
}
