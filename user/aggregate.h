/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Walking every client state: the three state tables, read with batched
 * lookups (one syscall per batch of clients, all CPUs' values at once).
 * What top, metrics and a peer sync build on.
 */
#ifndef SL_AGGREGATE_H
#define SL_AGGREGATE_H

#include "maps.h"
#include "slicelimit.h"

/* Called per client with its per-CPU values (m->nr_cpus of them, each
 * rounded up to 8 bytes, as a per-CPU lookup returns them) and the table's
 * value size. A non-zero return stops the walk and is returned.
 */
typedef int (*sl_client_fn)(void *ctx, const struct sl_client_key *key,
			    const void *cpus, __u32 value_size);

int sl_for_each_client(const struct sl_maps *m, sl_client_fn fn, void *ctx);

/* One table only: fd, and its value size. */
int sl_for_each_client_in(const struct sl_maps *m, int fd, __u32 value_size,
			  sl_client_fn fn, void *ctx);

#endif /* SL_AGGREGATE_H */
