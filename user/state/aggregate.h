/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Walking client states: every client of the three state tables, read with
 * batched lookups (one syscall per batch of clients), or only the clients
 * the kernel reported changed (sl_changed). What top, metrics and a peer
 * sync build on.
 */
#ifndef SL_STATE_AGGREGATE_H
#define SL_STATE_AGGREGATE_H

#include "instance/instance_maps.h"
#include "slicelimit.h"

/* Called per client with its state (one value of its table) and the
 * table's value size. A non-zero return stops the walk and is returned.
 */
typedef int (*sl_client_fn)(void *ctx, const struct sl_client_key *key,
			    const void *state, __u32 value_size);

int sl_for_each_client(const struct sl_maps *m, sl_client_fn fn, void *ctx);

/* One table only: fd, and its value size. */
int sl_for_each_client_in(const struct sl_maps *m, int fd, __u32 value_size,
			  sl_client_fn fn, void *ctx);

/* A reader of sl_changed, the keys of the clients the kernel saw accepted
 * since the last read (kept across sync rounds). NULL with errno set.
 */
struct sl_changed;
struct sl_changed *sl_changed_open(const struct sl_maps *m);
void sl_changed_close(struct sl_changed *k);

/* The clients whose keys the kernel put in sl_changed since the last call
 * (each once, in the table `table_of` picks for the key, or skipped when
 * it returns -1), then the ring is empty; with fn NULL, only empties it
 * (a caller about to walk every client). -ENOBUFS, after calling fn for
 * what it held, when the kernel lost keys for want of room: the caller must
 * walk every client to see them all.
 */
typedef int (*sl_table_of_fn)(void *ctx, const struct sl_client_key *key,
			      __u32 *value_size);
int sl_for_each_changed_client(struct sl_changed *k, const struct sl_maps *m,
			       sl_table_of_fn table_of, sl_client_fn fn,
			       void *ctx);

#endif /* SL_STATE_AGGREGATE_H */
