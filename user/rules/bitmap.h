/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A set of rules by position or id (struct sl_bitmap, include/slicelimit.h),
 * as the tables an apply writes hold them.
 */
#ifndef SL_RULES_BITMAP_H
#define SL_RULES_BITMAP_H

#include <stdbool.h>
#include "slicelimit.h"

static inline void sl_bitmap_set(struct sl_bitmap *b, unsigned pos)
{
	b->word[pos / 64] |= 1ULL << (pos % 64);
}

static inline void sl_bitmap_clear(struct sl_bitmap *b, unsigned pos)
{
	b->word[pos / 64] &= ~(1ULL << (pos % 64));
}

static inline bool sl_bitmap_test(const struct sl_bitmap *b, unsigned pos)
{
	return (b->word[pos / 64] >> (pos % 64)) & 1;
}

static inline bool sl_bitmap_empty(const struct sl_bitmap *b)
{
	unsigned w;

	for (w = 0; w < SL_RULE_WORDS; w++)
		if (b->word[w])
			return false;
	return true;
}

#endif /* SL_RULES_BITMAP_H */
