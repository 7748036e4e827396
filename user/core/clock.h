/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The clocks userspace reads. */
#ifndef SL_CLOCK_H
#define SL_CLOCK_H

#include <stdint.h>

/* TAI milliseconds: the clock the kernel program uses. */
uint64_t sl_now_tai_ms(void);

#endif /* SL_CLOCK_H */
