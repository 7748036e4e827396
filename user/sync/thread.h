/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The service's sync thread (user/sync/thread.c). */
#ifndef SL_SYNC_THREAD_H
#define SL_SYNC_THREAD_H

#include "sync/config.h"
#include "sync/engine.h"

struct sl_sync_service;

/* Start syncing the instance whose maps are `m` (kept open by the caller
 * until sl_sync_service_stop). NULL, with a message, on failure, and WHY
 * says in a few words what failed (for status and /healthz).
 */
struct sl_sync_service *sl_sync_service_start(const struct sl_sync_config *c,
					      const struct sl_maps *m,
					      char *why, size_t why_len);
void sl_sync_service_stop(struct sl_sync_service *svc);

#endif /* SL_SYNC_THREAD_H */
