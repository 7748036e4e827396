/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Two locks keep the pinned instance to one writer at a time, as libxdp
 * does around its dispatcher. Both are flock(2) on directories, so a
 * process that dies, even by kill -9, lets go of them with its last
 * descriptor. Both directories must be root's and writable by root only:
 * one another user made or may write, that user could hold or swap.
 *
 * - The writers' lock, on SL_WRITER_LOCK_DIR (root's, 0700, in the
 *   runtime directory; never removed), not on the bpffs, where a mount
 *   without mode=0700 lets every user hold a lock: every command that
 *   changes the pinned instance (attach,
 *   detach, rules apply, reload, reset, and the service's start, reload
 *   and stop) holds it while it writes, so two writers never build the
 *   same idle rule generation or publish the same epoch.
 * - The service's lock, on SL_PIN_DIR itself, held for the life of
 *   `slicelimit run`: a second service on the same pins is refused at
 *   once, and the other commands know that a service owns the instance.
 *   It is taken under the writers' lock, and the directory is only
 *   removed under it, so the lock is always on the directory in place.
 */
#ifndef SL_INSTANCE_PIN_LOCK_H
#define SL_INSTANCE_PIN_LOCK_H

#include <stdbool.h>

/* The runtime directory (the service's user owns it: its API socket is
 * made there after the drop) and, in it, root's lock directory.
 */
#define SL_RUN_DIR		"/run/slicelimit"
#define SL_WRITER_LOCK_DIR	SL_RUN_DIR "/lock"

/* Take the writers' lock, waiting a bounded time for another writer.
 * Taken again by the same process it only counts. 0 or -errno (reported).
 */
int sl_writer_lock(void);
void sl_writer_unlock(void);
/* After fork: the other process holds the lock, taken before the fork,
 * and lets go of it; this one forgets it held it, keeping the descriptor
 * to take it again later.
 */
void sl_writer_forget(void);

/* SL_PIN_DIR is root's and only root may write it: 0, or -EPERM
 * (reported, with the fix).
 */
int sl_pin_dir_check(void);

/* Take the service's lock, creating SL_PIN_DIR if needed; call under the
 * writers' lock. 0, -EBUSY when another service holds it (not reported:
 * the caller names that service), or -errno (reported).
 */
int sl_service_lock(void);
/* Let go of it, and remove SL_PIN_DIR if this run made it and it is empty. */
void sl_service_unlock(void);
/* Does another process's service hold the pins? */
bool sl_service_holds_pins(void);

#endif /* SL_INSTANCE_PIN_LOCK_H */
