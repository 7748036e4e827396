// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "util/grow.h"

#define SL_GROW_FIRST	16	/* items of a first allocation */

int sl_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : SL_GROW_FIRST;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n = n > SIZE_MAX / 2 ? need : n * 2;
	if (!size || n > SIZE_MAX / size)
		return -ENOMEM;
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}
