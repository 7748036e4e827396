// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "replay/client_index.h"
#include "sl_newcomer.h"

/* Item i's address. */
static const struct sl_addr *addr_of(const void *items, size_t stride,
				     size_t i)
{
	return (const struct sl_addr *)((const char *)items + i * stride);
}

static size_t addr_hash(const struct sl_addr *a)
{
	__u64 lo, hi;

	memcpy(&lo, a->byte, 8);
	memcpy(&hi, a->byte + 8, 8);
	return sl_mix64(sl_mix64(lo) ^ hi);
}

long sl_client_index_find(const struct sl_client_index *ix,
			  const void *items, size_t stride,
			  const struct sl_addr *a)
{
	size_t mask = ix->cap - 1, h;

	if (!ix->cap)
		return -1;
	/* linear probing ends at a free slot: at most half are used */
	for (h = addr_hash(a) & mask; ix->slot[h]; h = (h + 1) & mask)
		if (!memcmp(addr_of(items, stride, ix->slot[h] - 1), a,
			    sizeof(*a)))
			return (long)(ix->slot[h] - 1);
	return -1;
}

static void put(struct sl_client_index *ix, const void *items,
		size_t stride, size_t i)
{
	size_t mask = ix->cap - 1, h;

	for (h = addr_hash(addr_of(items, stride, i)) & mask; ix->slot[h];
	     h = (h + 1) & mask)
		;
	ix->slot[h] = i + 1;
}

int sl_client_index_add(struct sl_client_index *ix, const void *items,
			size_t stride, size_t i)
{
	if (2 * (ix->nr + 1) > ix->cap) {
		size_t cap = ix->cap ? 2 * ix->cap : 1024, k;
		struct sl_client_index bigger = { calloc(cap, sizeof(size_t)),
						  cap, ix->nr };

		if (!bigger.slot)
			return -ENOMEM;
		for (k = 0; k < ix->cap; k++)
			if (ix->slot[k])
				put(&bigger, items, stride, ix->slot[k] - 1);
		free(ix->slot);
		*ix = bigger;
	}
	put(ix, items, stride, i);
	ix->nr++;
	return 0;
}

void sl_client_index_free(struct sl_client_index *ix)
{
	free(ix->slot);
	memset(ix, 0, sizeof(*ix));
}
