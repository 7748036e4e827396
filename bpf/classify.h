/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Rule classification by bitmaps (see SL_MAX_RULES in slicelimit.h): one
 * array lookup for the port class, an LPM lookup per address that some rule
 * matches on, an AND of SL_RULE_WORDS words and a find-first-set. The cost
 * does not depend on how many rules are loaded.
 */
#ifndef SL_CLASSIFY_H
#define SL_CLASSIFY_H

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

/* Priority position of the first rule at or after `start` that matches
 * the packet, or -1. A global function: the verifier checks it once, on
 * its own.
 */
__noinline int sl_rule_position(const struct sl_config *cfg,
				const struct sl_packet *pkt, __u32 start)
{
	const struct sl_bitmap *ports;
	__u32 gen, key, *class;

	if (!cfg || !pkt)
		return -1;
	gen = cfg->gen & 1;
	key = gen * SL_PORT_SLOTS + (pkt->slot < SL_PORT_SLOTS ? pkt->slot : 0);
	class = bpf_map_lookup_elem(&sl_port_classes, &key);
	if (!class || !*class)
		return -1;	/* the no-rule path: one array lookup */
	key = gen * SL_MAX_CLASSES + (*class < SL_MAX_CLASSES ? *class : 0);
	ports = bpf_map_lookup_elem(&sl_class_rules, &key);
	if (!ports)
		return -1;
	return sl_rule_position_of(cfg, pkt, start, ports);
}

/* The same among the rules of `ports`, whatever the packet's port: for
 * packets whose ports the program cannot see.
 */
__noinline int sl_rule_position_any_port(const struct sl_config *cfg,
					 const struct sl_packet *pkt,
					 __u32 start,
					 const struct sl_bitmap *ports)
{
	if (!cfg || !pkt || !ports)
		return -1;
	return sl_rule_position_of(cfg, pkt, start, ports);
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

#endif /* SL_CLASSIFY_H */
