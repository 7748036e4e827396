/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Whether a rule exempts a client, read from the exempt table the kernel
 * reads (sl_exempt_rules, bpf/classify.h sl_exempt): what every command
 * and the check API ask before they show a client's count, so that an
 * address the kernel never counts is never shown as limited.
 */
#ifndef SL_STATE_CLIENT_EXEMPT_H
#define SL_STATE_CLIENT_EXEMPT_H

#include <stdbool.h>
#include "state/client_view.h"
#include "instance/instance_maps.h"
#include "slicelimit.h"

/* Does the rule at position POS of the generation CFG describes exempt
 * every address of ADDR/BITS (BITS over the 16-byte address: 128 for one
 * address, 96 + n for an IPv4 /n)? A hashed API key never is: the check
 * program applies no exempt list to it. A table that cannot be read
 * exempts no one (the count is shown, as before).
 */
bool sl_client_exempt(const struct sl_maps *m, const struct sl_config *cfg,
		      unsigned pos, const struct sl_addr *addr, unsigned bits);

/* The same for a state key of the rule at POS: all of its prefix. */
bool sl_client_key_exempt(const struct sl_maps *m, const struct sl_config *cfg,
			  unsigned pos, const struct sl_rule *rule,
			  const struct sl_client_key *key);

/* The view of an exempt client: nothing counted, the whole quota left,
 * never a Retry-After.
 */
void sl_client_view_exempt(const struct sl_rule *rule, struct sl_client_view *v);

#endif /* SL_STATE_CLIENT_EXEMPT_H */
