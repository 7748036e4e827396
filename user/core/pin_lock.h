/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Two locks keep the pinned instance to one writer at a time, as libxdp
 * does around its dispatcher. Both are flock(2) on directories of the
 * bpffs (it holds no regular files), so a process that dies, even by
 * kill -9, lets go of them with its last descriptor.
 *
 * - The writers' lock, on the directory that holds SL_PIN_DIR (never
 *   removed): every command that changes the pinned instance (attach,
 *   detach, rules apply, reload, reset, and the service's start, reload
 *   and stop) holds it while it writes, so two writers never build the
 *   same idle rule generation or publish the same epoch.
 * - The service's lock, on SL_PIN_DIR itself, held for the life of
 *   `slicelimit run`: a second service on the same pins is refused at
 *   once, and the other commands know that a service owns the instance.
 *   It is taken under the writers' lock, and the directory is only
 *   removed under it, so the lock is always on the directory in place.
 */
#ifndef SL_PIN_LOCK_H
#define SL_PIN_LOCK_H

#include <stdbool.h>

/* Take the writers' lock, waiting a bounded time for another writer.
 * Taken again by the same process it only counts. 0 or -errno (reported).
 */
int sl_writer_lock(void);
void sl_writer_unlock(void);

/* Take the service's lock, creating SL_PIN_DIR if needed; call under the
 * writers' lock. 0, -EBUSY when another service holds it (not reported:
 * the caller names that service), or -errno (reported).
 */
int sl_service_lock(void);
/* Let go of it, and remove SL_PIN_DIR if this run made it and it is empty. */
void sl_service_unlock(void);
/* Does another process's service hold the pins? */
bool sl_service_holds_pins(void);

#endif /* SL_PIN_LOCK_H */
