/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The state keys one client has under one rule: one key, or under a rule
 * that keys by port and no port named, one per destination port the
 * client has state for. What query lists and reset forgets.
 */
#ifndef SL_CLIENT_KEYS_H
#define SL_CLIENT_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include "core/instance_maps.h"
#include "slicelimit.h"

/* ADDR (not masked yet) under RULE; PORT (network order) when HAS_PORT.
 * The keys that hold state go to *keys (the caller frees it), *nr of
 * them; a rule that does not key by port gives its one key if it holds
 * state. 0 or -errno.
 */
int sl_client_keys(const struct sl_maps *m, const struct sl_rule *rule,
		   const struct sl_addr *addr, bool has_port, __u16 port,
		   struct sl_client_key **keys, size_t *nr);

#endif /* SL_CLIENT_KEYS_H */
