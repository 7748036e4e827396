/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Rule classification by bitmaps (see SL_MAX_RULES in slicelimit.h): one
 * array lookup for the port class, an LPM lookup per address that some rule
 * matches on, an AND of SL_RULE_WORDS words and a find-first-set. The cost
 * does not depend on how many rules are loaded.
 */
#ifndef SL_BPF_CLASSIFY_H
#define SL_BPF_CLASSIFY_H

#include "maps.h"
#include "parse.h"

/* Index of the lowest set bit of a non-zero word (BPF has no ctz). */
static __always_inline __u32 sl_ctz64(__u64 x)
{
	__u32 n = 0;

	if (!(x & 0xffffffffULL)) { n += 32; x >>= 32; }
	if (!(x & 0xffffULL)) { n += 16; x >>= 16; }
	if (!(x & 0xffULL)) { n += 8; x >>= 8; }
	if (!(x & 0xfULL)) { n += 4; x >>= 4; }
	if (!(x & 0x3ULL)) { n += 2; x >>= 2; }
	if (!(x & 0x1ULL)) n += 1;
	return n;
}

static __always_inline const struct sl_bitmap *
sl_lpm_rules(void *map, __u32 gen, const struct sl_addr *addr)
{
	struct sl_lpm_key key = {
		.prefixlen = 8 + 128,
		.gen = gen,
	};

	__builtin_memcpy(key.addr, addr->byte, 16);
	return bpf_map_lookup_elem(map, &key);
}

/* Priority position of the first rule at or after `start` among `ports`
 * (the rules whose protocol and ports match) that the packet's addresses
 * match, or -1.
 */
static __always_inline int sl_rule_position_of(const struct sl_config *cfg,
					       const struct sl_packet *pkt,
					       __u32 start,
					       const struct sl_bitmap *ports)
{
	const struct sl_bitmap *src, *dst;
	__u32 gen = cfg->gen & 1;
	int w;

	/* Without source (destination) prefixes in the rule set, every rule
	 * matches any source (destination): skip the LPM lookup.
	 */
	src = cfg->has_src ? sl_lpm_rules(&sl_src_rules, gen, &pkt->src) :
			     &cfg->all_rules;
	dst = cfg->has_dst ? sl_lpm_rules(&sl_dst_rules, gen, &pkt->dst) :
			     &cfg->all_rules;
	if (!src || !dst)
		return -1;

#pragma unroll
	for (w = 0; w < SL_RULE_WORDS; w++) {
		__u64 m = ports->word[w] & src->word[w] & dst->word[w];

		/* rules before `start` were applied already */
		if ((__u32)(w + 1) * 64 <= start)
			continue;
		if ((__u32)w * 64 < start)
			m &= ~0ULL << (start % 64);
		if (m)
			return w * 64 + sl_ctz64(m);
	}
	return -1;
}

/* The class of a port slot (SL_SLOT_* plus the port): 0 when no rule's
 * protocol and ports match it. The no-rule path ends here, on one
 * inlined array lookup, before any call.
 */
static __always_inline __u32 sl_port_class(const struct sl_config *cfg,
					   __u32 slot)
{
	__u32 key, *class;

	key = (cfg->gen & 1) * SL_PORT_SLOTS +
	      (slot < SL_PORT_SLOTS ? slot : 0);
	class = bpf_map_lookup_elem(&sl_port_classes, &key);
	return class ? *class : 0;
}

/* The rules whose protocol and ports are those of a class, or NULL. */
static __always_inline const struct sl_bitmap *
sl_class_rules_of(const struct sl_config *cfg, __u32 class)
{
	__u32 key = (cfg->gen & 1) * SL_MAX_CLASSES +
		    (class < SL_MAX_CLASSES ? class : 0);

	return bpf_map_lookup_elem(&sl_class_rules, &key);
}

/* Priority position of the first rule at or after `start` among `ports`
 * (sl_class_rules_of, or for a packet whose ports the program cannot see,
 * the rules of its protocol) that the packet's addresses match, or -1. A
 * global function: the verifier checks it once, on its own.
 */
__noinline int sl_rule_position(const struct sl_config *cfg,
				const struct sl_packet *pkt, __u32 start,
				const struct sl_bitmap *ports)
{
	if (!cfg || !pkt || !ports)
		return -1;
	return sl_rule_position_of(cfg, pkt, start, ports);
}

/* The number of set bits of a word, without a branch: the verifier sees
 * one path through it, not one per bit (as through sl_ctz64), and no
 * value it must follow as a constant on the paths after.
 */
static __always_inline __u64 sl_popcount64(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (x * 0x0101010101010101ULL) >> 56;
}

/* The position of the first rule of `ports` that the packet's addresses
 * match, or -1. Without source or destination prefixes in the rule set
 * every rule matches any address: when one of the first 64 rules is
 * among `ports`, the first is the lowest bit of that word, found inline
 * with no call and no LPM lookup; sl_rule_position finds any other.
 */
static __always_inline int sl_first_rule(const struct sl_config *cfg,
					 const struct sl_packet *pkt,
					 const struct sl_bitmap *ports)
{
	__u64 m;

	if (cfg->has_src || cfg->has_dst)
		return sl_rule_position(cfg, pkt, 0, ports);
	m = ports->word[0] & cfg->all_rules.word[0];
	if (!m)
		return sl_rule_position(cfg, pkt, 64, ports);
	/* the bits below the lowest set one, counted */
	return sl_popcount64((m & -m) - 1);
}

/* Mark the rule at one position in the protocol bitmaps: a bpf_loop body
 * over the live rule set, run by a CPU once per apply.
 */
struct sl_proto_walk {
	struct sl_proto_rules *pr;
	__u32 gen;
};

static long sl_proto_rule_mark(__u32 i, void *data)
{
	struct sl_proto_walk *pw = data;
	const struct sl_rule *rule;
	__u32 pos = i & (SL_MAX_RULES - 1);
	__u32 idx = pw->gen * SL_MAX_RULES + pos;
	__u64 bit = 1ULL << (pos & 63);

	rule = bpf_map_lookup_elem(&sl_rules, &idx);
	if (!rule)
		return 1;
	if (rule->protocol == SL_PROTO_ANY || rule->protocol == SL_PROTO_TCP)
		pw->pr->tcp.word[pos >> 6] |= bit;
	if (rule->protocol == SL_PROTO_ANY || rule->protocol == SL_PROTO_UDP)
		pw->pr->udp.word[pos >> 6] |= bit;
	return 0;
}

/* This CPU's rules by protocol for the live rule set, rebuilt if the set
 * changed since; NULL only if the map is missing its entry.
 */
static __always_inline const struct sl_proto_rules *
sl_proto_rules_of(const struct sl_config *cfg)
{
	struct sl_proto_rules *pr;
	struct sl_proto_walk pw;
	__u32 zero = 0;

	pr = bpf_map_lookup_elem(&sl_proto_rules, &zero);
	if (!pr)
		return NULL;
	if (pr->valid && pr->rules_epoch == cfg->rules_epoch &&
	    pr->gen == cfg->gen && pr->nr_rules == cfg->nr_rules)
		return pr;
	__builtin_memset(&pr->tcp, 0, sizeof(pr->tcp));
	__builtin_memset(&pr->udp, 0, sizeof(pr->udp));
	pw.pr = pr;
	pw.gen = cfg->gen & 1;
	bpf_loop(cfg->nr_rules < SL_MAX_RULES ? cfg->nr_rules : SL_MAX_RULES,
		 sl_proto_rule_mark, &pw, 0);
	pr->rules_epoch = cfg->rules_epoch;
	pr->gen = cfg->gen;
	pr->nr_rules = cfg->nr_rules;
	pr->valid = 1;
	return pr;
}

/* Is the packet's source on the exempt list of the rule at `pos`? */
static __always_inline int sl_exempt(const struct sl_config *cfg,
				     const struct sl_packet *pkt, __u32 pos)
{
	const struct sl_bitmap *ex;
	__u32 bit = pos;

	/* the mask bounds the word index for the verifier; the barrier keeps
	 * the compiler from dropping it where it knows pos is in range
	 */
	__asm__ volatile("" : "+r"(bit));
	bit &= SL_MAX_RULES - 1;

	if (!cfg->has_exempt)
		return 0;
	ex = sl_lpm_rules(&sl_exempt_rules, cfg->gen & 1, &pkt->src);
	return ex && ((ex->word[bit >> 6] >> (bit & 63)) & 1);
}

#endif /* SL_BPF_CLASSIFY_H */
