/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The one growing array: every list userspace builds up item by item. */
#ifndef SL_UTIL_GROW_H
#define SL_UTIL_GROW_H

#include <stddef.h>

/* Make room for `need` items of `size` bytes at *p, which holds *cap:
 * doubling, so n appends cost O(n) copies in all. 0, or -ENOMEM with *p
 * and *cap as they were (still the caller's to free) when realloc fails
 * or need * size would not fit a size_t.
 */
int sl_grow(void **p, size_t *cap, size_t need, size_t size);

#endif /* SL_UTIL_GROW_H */
