/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The rule tables and the config a packet reads them through (bpf/maps.h),
 * and what a fragment's first part was decided.
 */
#ifndef SL_TYPES_RULES_H
#define SL_TYPES_RULES_H

#include "types/common.h"

struct sl_bitmap {
	__u64 word[SL_RULE_WORDS];
};

/* Addresses everywhere are 16 bytes in network byte order; IPv4 is stored
 * IPv4-mapped (::ffff:a.b.c.d) so one key type covers both families and an
 * IPv4 /24 is an IPv6 /120. Four-aligned (every struct holds it at a
 * multiple of four, so no layout moves): copies and masks of it are then
 * four or two words, not sixteen bytes one by one, which BPF code pays
 * for on every packet's key.
 */
struct sl_addr {
	__u8 byte[16];
} __attribute__((aligned(4)));

/* LPM trie key of the source, destination and exempt tables. The generation
 * is the first byte of the data, so prefixlen = 8 + address bits.
 */
struct sl_lpm_key {
	__u32 prefixlen;	/* host byte order */
	__u8 gen;
	__u8 addr[16];		/* network byte order */
	__u8 pad[3];
};

/* One rule, as the kernel reads it: array sl_rules, index
 * gen * SL_MAX_RULES + priority position. The match fields are compiled
 * into the bitmap tables; they are kept here so that `rules list` and a
 * bpftool dump describe the running rule in full.
 */
struct sl_rule {
	char name[32];
	__u64 limit;		/* units per window */
	__u32 window_ms;
	__u32 slice_ms;		/* window / slices */
	__u16 id;		/* stable across applies: stats index, client key */
	__u8 algorithm;		/* enum sl_algorithm */
	__u8 action;		/* enum sl_action */
	__u8 unit;		/* enum sl_unit */
	__u8 key_ipv4_prefix;	/* source bits kept in the client key */
	__u8 key_ipv6_prefix;
	__u8 key_by_port;	/* destination port is part of the client key */
	__u8 protocol;		/* enum sl_protocol */
	__u8 src_prefixlen;	/* 0..128 over src, 0 = any */
	__u8 dst_prefixlen;
	__u8 nr_exempt;
	__u16 port_min;		/* host byte order; 0..65535 = any */
	__u16 port_max;
	__u32 priority;
	__u8 continues;		/* after this rule passes a packet, apply the
				 * next rule that matches it too (stacking a
				 * per-prefix rule on a per-address one) */
	__u8 api_key_is_address;	/* userspace only: a check API key that
				 * parses as an address charges that
				 * address's packet state; else it is
				 * hashed like any other key */
	__u8 pad[2];
	__u64 bucket_capacity;	/* token-bucket: burst, in units */
	__u64 token_ns;		/* token-bucket: refill interval per unit */
	struct sl_addr src;
	struct sl_addr dst;
};

/* Array sl_config, one entry per generation, written by userspace only.
 * The live generation is the single word in sl_active: a packet reads it
 * once, then sees only that generation's config and tables.
 */
struct sl_config {
	__u32 gen;		/* this entry's own generation */
	__u32 rules_epoch;	/* bumped by every apply; invalidates caches */
	__u32 nr_rules;		/* rules in the live generation */
	__u8 has_src;		/* any live rule matches on source prefix */
	__u8 has_dst;
	__u8 has_exempt;
	__u8 pad;		/* SL_LISTS_*, read and written through
				 * sl_config_lists(): which of the block and
				 * allow lists hold an entry. Named as before
				 * it held them: an upgrade keeps a pinned map
				 * whose value type is the same, member names
				 * included, and this one holds the rules */
	struct sl_bitmap all_rules;	/* every live rule: the bitmap of an
					 * address no rule restricts */
};

/* LRU hash sl_frags: what a datagram's first fragment was decided, for
 * its later fragments, which carry no ports.
 */
struct sl_frag_key {
	struct sl_addr src;	/* network byte order, IPv4-mapped for v4 */
	struct sl_addr dst;
	__u32 id;		/* IP identification, network byte order */
	__u8 proto;		/* IPv6: the fragment header's next header */
	__u8 family;		/* 4 or 6 */
	__u16 pad;
};

struct sl_frag {
	__u32 slot;		/* the first fragment's SL_SLOT_* + port */
	__u16 dport;		/* network byte order */
	__u8 dropped;		/* the datagram was dropped */
	__u8 pad;
};

/* Per-CPU array sl_proto_rules, one entry: the rules a packet of a
 * protocol can meet whatever its port (those of the protocol and of
 * `any`), for fragments that carry no ports. Rebuilt by the program
 * itself when the rule set changes (bpf/classify.h).
 */
struct sl_proto_rules {
	__u32 rules_epoch;	/* of the rule set the bitmaps are of */
	__u32 gen;
	__u32 nr_rules;
	__u32 valid;
	struct sl_bitmap tcp;
	struct sl_bitmap udp;
};

#endif /* SL_TYPES_RULES_H */
