/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The state keys one client has under one rule: one key, or under a rule
 * that keys by port and no port named, one per destination port the
 * client has state for. What query lists and reset forgets.
 */
#ifndef SL_STATE_CLIENT_KEYS_H
#define SL_STATE_CLIENT_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include "instance/instance_maps.h"
#include "slicelimit.h"

/* Is ADDR in 100::/64, the discard prefix (RFC 6666) into which the check
 * API hashes a key that is not an address (sl_check_key_addr,
 * service/check_local.c)? Such a client is keyed by the whole hashed
 * address, unmasked, port 0, and no exempt list applies to it.
 */
bool sl_client_addr_hashed(const struct sl_addr *addr);

/* The state key of the client ADDR names under RULE (dport: network
 * order), as the kernel keys it: a hashed API key as it is, an address
 * masked to the rule's prefix.
 */
void sl_client_key_of(struct sl_client_key *key, const struct sl_rule *rule,
		      const struct sl_addr *addr, __u16 dport);

/* Can RULE ever read KEY again? Only a key it makes itself (masked to its
 * prefix, a port only when it keys by port) or a hashed API key; a state
 * keyed under the rule's former prefix is never read.
 */
bool sl_client_key_reachable(const struct sl_rule *rule,
			     const struct sl_client_key *key);

/* Does a state that rule LIVE keyed count the same client under NEXT, the
 * same rule as an apply changes it? A hashed API key always does; an
 * address key when its family's prefix and the keying by port are
 * unchanged. Otherwise NEXT never makes that key again, or makes it for
 * fewer addresses than LIVE counted in it (a /24's count read as its
 * first address's): either way the count is no client's.
 */
bool sl_client_key_survives(const struct sl_rule *next,
			    const struct sl_rule *live,
			    const struct sl_client_key *key);

/* Is KEY on probation (sl_newcomers, include/sl_newcomer.h): its first
 * accept held there before it has a state? FORGET: free its way too.
 * 1 when it was, 0 when not, or -errno.
 */
int sl_client_probation(const struct sl_maps *m,
			const struct sl_client_key *key, bool forget);

/* ADDR (not masked yet) under RULE; PORT (network order) when HAS_PORT.
 * The keys that hold state go to *keys (the caller frees it), *nr of
 * them; a rule that does not key by port, or a hashed API key, gives its
 * one key if it holds state (or is on probation). 0 or -errno.
 */
int sl_client_keys(const struct sl_maps *m, const struct sl_rule *rule,
		   const struct sl_addr *addr, bool has_port, __u16 port,
		   struct sl_client_key **keys, size_t *nr);

#endif /* SL_STATE_CLIENT_KEYS_H */
