/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * GET /healthz, for load balancers and Kubernetes probes: is this node
 * limiting? It is when a device runs the program, rules are in place and,
 * if its config asks for sync, the sync runs and its rounds are not stale.
 */
#ifndef SL_SERVICE_HEALTHZ_H
#define SL_SERVICE_HEALTHZ_H

#include <stdbool.h>
#include <stddef.h>
#include "instance/instance_maps.h"

/* true when healthy; else false and why in REASON. */
bool sl_healthz(const struct sl_maps *m, char *reason, size_t len);

#endif /* SL_SERVICE_HEALTHZ_H */
