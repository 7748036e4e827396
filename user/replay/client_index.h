/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The replay's clients by address: an open-addressing hash of indexes
 * into the run's client list, so that a trace with a million sources (a
 * spoofed flood) finds each request's client in constant time while the
 * list keeps first-seen order, the order the output promises.
 */
#ifndef SL_REPLAY_CLIENT_INDEX_H
#define SL_REPLAY_CLIENT_INDEX_H

#include <stddef.h>
#include "slicelimit.h"

struct sl_client_index {
	size_t *slot;		/* client index + 1; 0: free */
	size_t cap;		/* slots, a power of two; at most half used */
	size_t nr;
};

/* The clients are `items`, `stride` bytes each, each beginning with its
 * struct sl_addr. The index of the one whose address is `a`, or -1.
 */
long sl_client_index_find(const struct sl_client_index *ix,
			  const void *items, size_t stride,
			  const struct sl_addr *a);

/* Add item `i`; 0 or -ENOMEM. */
int sl_client_index_add(struct sl_client_index *ix, const void *items,
			size_t stride, size_t i);

void sl_client_index_free(struct sl_client_index *ix);

#endif /* SL_REPLAY_CLIENT_INDEX_H */
