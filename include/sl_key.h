/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The client key of a packet under a rule: the source masked to the rule's
 * prefix (IPv4 and IPv6 each with their own length), plus the destination
 * port when the rule counts per port. Shared so that `query ADDR` reads the
 * very state the kernel wrote.
 */
#ifndef SL_KEY_H
#define SL_KEY_H

#include <linux/types.h>
#include "slicelimit.h"
#include "sl_algo.h"

/* The ::ffff: prefix of an IPv4-mapped address: ten zero bytes, two of
 * 0xff; compared as three words, not twelve bytes.
 */
SL_INLINE int sl_addr_is_ipv4(const struct sl_addr *a)
{
	__u32 w[3];

	__builtin_memcpy(w, a->byte, sizeof(w));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return !w[0] && !w[1] && w[2] == 0xffff0000u;
#else
	return !w[0] && !w[1] && w[2] == 0x0000ffffu;
#endif
}

/* A mask of the first `bits` (0..64) bits of a big-endian 64-bit word. */
SL_INLINE __u64 sl_mask64(__u32 bits)
{
	__u64 m = bits ? ~0ULL << (64 - (bits > 64 ? 64 : bits)) : 0;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	m = __builtin_bswap64(m);
#endif
	return m;
}

/* Keep the first `bits` (0..128) bits of the address. Branch-free over two
 * words: the verifier sees one path, not one per byte.
 */
SL_INLINE void sl_addr_mask(struct sl_addr *a, __u32 bits)
{
	__u64 w[2];

	__builtin_memcpy(w, a->byte, 16);
	w[0] &= sl_mask64(bits > 64 ? 64 : bits);
	w[1] &= sl_mask64(bits > 64 ? bits - 64 : 0);
	__builtin_memcpy(a->byte, w, 16);
}

/* dport in network byte order. */
SL_INLINE void sl_client_key_make(struct sl_client_key *key,
				  const struct sl_rule *rule,
				  const struct sl_addr *src, __u16 dport)
{
	key->addr = *src;
	/* an IPv4-mapped address keeps its 96-bit ::ffff: prefix */
	sl_addr_mask(&key->addr, sl_addr_is_ipv4(src) ?
		     96 + rule->key_ipv4_prefix : rule->key_ipv6_prefix);
	key->rule_id = rule->id;
	key->dport = rule->key_by_port ? dport : 0;
}

#endif /* SL_KEY_H */
