// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <time.h>
#include "core/clock.h"

uint64_t sl_now_tai_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_TAI, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
