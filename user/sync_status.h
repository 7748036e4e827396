/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sync health as `status` and `stats` show it, read from the pinned
 * sl_sync_status that the running service writes every round.
 */
#ifndef SL_SYNC_STATUS_H
#define SL_SYNC_STATUS_H

#include <json-c/json.h>
#include "maps.h"

/* A peer is up while heard within this many intervals. */
#define SL_PEER_UP_INTERVALS	3

/* The "sync" object, or NULL when no service syncs this instance. */
json_object *sl_sync_status_json(const struct sl_maps *m, __u64 now_ms);

/* The same, for people. */
void sl_sync_status_print(json_object *sync);

#endif /* SL_SYNC_STATUS_H */
