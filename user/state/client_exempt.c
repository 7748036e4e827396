// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include <bpf/bpf.h>
#include "state/client_exempt.h"
#include "state/client_keys.h"
#include "sl_key.h"

bool sl_client_exempt(const struct sl_maps *m, const struct sl_config *cfg,
		      unsigned pos, const struct sl_addr *addr, unsigned bits)
{
	/* the trie holds, at each prefix, the rules of every shorter prefix
	 * that covers it (rules/prefix_tables.c): a lookup at BITS finds the rules
	 * that exempt the whole of ADDR/BITS and no narrower one
	 */
	struct sl_lpm_key k = { .prefixlen = 8 + (bits > 128 ? 128 : bits),
				.gen = cfg->gen & 1 };
	struct sl_bitmap bm;

	if (!cfg->has_exempt || m->exempt_rules < 0 || pos >= SL_MAX_RULES ||
	    sl_client_addr_hashed(addr))
		return false;
	memcpy(k.addr, addr->byte, sizeof(k.addr));
	if (bpf_map_lookup_elem(m->exempt_rules, &k, &bm))
		return false;
	return (bm.word[pos / 64] >> (pos % 64)) & 1;
}

bool sl_client_key_exempt(const struct sl_maps *m, const struct sl_config *cfg,
			  unsigned pos, const struct sl_rule *rule,
			  const struct sl_client_key *key)
{
	unsigned bits = sl_addr_is_ipv4(&key->addr) ?
			96 + rule->key_ipv4_prefix : rule->key_ipv6_prefix;

	return sl_client_exempt(m, cfg, pos, &key->addr, bits);
}

void sl_client_view_exempt(const struct sl_rule *rule, struct sl_client_view *v)
{
	memset(v, 0, sizeof(*v));
	v->remaining = sl_rule_quota(rule);
	v->exempt = true;
}
