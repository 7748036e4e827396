/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The clocks userspace reads. */
#ifndef SL_UTIL_CLOCK_H
#define SL_UTIL_CLOCK_H

#include <stdint.h>

/* TAI milliseconds: the clock the kernel program uses. */
uint64_t sl_now_tai_ms(void);
/* Unix time in milliseconds: for people and logs, never for intervals. */
uint64_t sl_now_real_ms(void);
/* CLOCK_MONOTONIC: deadlines, intervals and how long something took. */
uint64_t sl_now_mono_ms(void);
uint64_t sl_now_mono_ns(void);

#endif /* SL_UTIL_CLOCK_H */
