/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one data path of the XDP and the TC entry points, which only adapt
 * their context to it: global counters, parse (parse.h), then the chain of
 * matching rules (classify.h), each applied by rule.h.
 *
 * No packet shape is a way around a rule (slicelimit-rules(5), PACKET
 * SHAPES):
 * - a first fragment holds the ports: it is decided like any packet, and
 *   its verdict and ports are remembered in sl_frags;
 * - a later fragment follows its first: dropped with it, or decided under
 *   the first's ports, charged its bytes only (a datagram is one packet);
 * - a later fragment with no first remembered is counted under the first
 *   rule of its protocol that its addresses match, whatever the port;
 * - an IPv6 chain longer than the walk, or a frame with more VLAN tags
 *   than the parser walks, is dropped if a rule matches its addresses;
 * - IPv6 from an IPv4-mapped source is dropped: it would otherwise be
 *   charged to the IPv4 client, and the stack drops it anyway;
 * - ICMP errors and link control (neighbour discovery, packet-too-big)
 *   are never limited.
 *
 * Which maps each path looks up, and which of those lookups are calls:
 * see docs/ARCHITECTURE.md, "Map lookups per path"
 * (bench/map_lookups.py counts them in the object).
 *
 * Calls per path (each a return through the kernel's return thunk where
 * it mitigates speculation, docs/MEASUREMENTS.md): none before the
 * verdict of a packet that meets no rule; a front miss is inline too; the
 * chain's first rule is found inline (without address prefixes, among the
 * first 64 rules) and applied by one call, sl_apply_rule, with no walk
 * unless it continues.
 */
#ifndef SL_BPF_DATAPATH_H
#define SL_BPF_DATAPATH_H

#include "classify.h"
#include "front.h"
#include "lists.h"
#include "maps.h"
#include "parse.h"
#include "rule.h"

static __always_inline void sl_frag_key_of(struct sl_frag_key *k,
					   const struct sl_packet *pkt)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->src = pkt->src;
	k->dst = pkt->dst;
	k->id = pkt->frag_id;
	k->proto = pkt->frag_proto;
	k->family = pkt->family;
}

/* Static subprograms: their frames are not on the stack of the rule
 * chain's calls (the 512 bytes of 6.1 are the deepest chain's).
 */
static __noinline struct sl_frag *sl_frag_find(const struct sl_packet *pkt)
{
	struct sl_frag_key k;

	sl_frag_key_of(&k, pkt);
	return bpf_map_lookup_elem(&sl_frags, &k);
}

static __noinline void sl_frag_remember(const struct sl_packet *pkt,
					int verdict)
{
	struct sl_frag_key k;
	struct sl_frag v = {
		.slot = pkt->slot,
		.dport = pkt->dport,
		.dropped = verdict == SL_DROP,
	};

	sl_frag_key_of(&k, pkt);
	bpf_map_update_elem(&sl_frags, &k, &v, BPF_ANY);
}

/* The rules a fragment without ports can meet, or NULL to classify it by
 * its slot (set here): ICMP and other protocols have no ports to miss.
 */
static __always_inline const struct sl_bitmap *
sl_orphan_rules(const struct sl_config *cfg, struct sl_packet *pkt)
{
	const struct sl_proto_rules *pr;

	switch (pkt->frag_proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		pr = sl_proto_rules_of(cfg);
		if (!pr)
			return &cfg->all_rules;
		return pkt->frag_proto == IPPROTO_TCP ? &pr->tcp : &pr->udp;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		/* an echo request's: errors are never fragmented */
		pkt->slot = SL_SLOT_ICMP;
		return NULL;
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_MH:
	case IPPROTO_AH:
		/* more headers before the upper layer: any rule */
		return &cfg->all_rules;
	default:
		pkt->slot = SL_SLOT_OTHER;
		return NULL;
	}
}

/* A chain too long to walk, or a frame with more VLAN tags than the
 * parser walks (`vlan`): whatever it carries, the first rule that its
 * addresses match drops it (a shadow rule only counts it). A frame whose
 * addresses lie past the tags walked has none (all zero): only a rule
 * without address prefixes matches it. A static subprogram: nothing of
 * the entry's is held across it, so the entry's frame does not grow.
 */
static __noinline int sl_long_chain(const struct sl_config *cfg,
				    struct sl_global_stats *gs,
				    const struct sl_packet *pkt, __u32 len,
				    int vlan)
{
	const struct sl_rule *rule;
	struct sl_rule_stats *rs;
	__u32 rule_id;
	int pos;

	if (vlan)
		gs->vlan_deep++;
	else
		gs->long_chains++;
	pos = sl_rule_position(cfg, pkt, 0, &cfg->all_rules);
	if (pos < 0) {
		gs->no_rule++;
		return SL_PASS;
	}
	rule = sl_rule_at(cfg, pos);
	if (!rule)
		return SL_PASS;
	rule_id = rule->id;
	rs = bpf_map_lookup_elem(&sl_rule_stats, &rule_id);
	if (!rs)
		return SL_PASS;
	if (sl_exempt(cfg, pkt, pos)) {
		rs->exempt++;
		rs->passed_bytes += len;
		return SL_PASS;
	}
	if (rule->action == SL_ACTION_SHADOW) {
		rs->shadow_dropped++;
		rs->passed_bytes += len;
		return SL_PASS;
	}
	if (vlan)
		gs->vlan_deep_dropped++;
	else
		gs->long_chains_dropped++;
	rs->dropped++;
	rs->dropped_bytes += len;
	return SL_DROP;
}

/* The later fragment's datagram was dropped by a bytes limit: its other
 * fragments go too.
 */
static __noinline void sl_frag_dropped(const struct sl_packet *pkt)
{
	struct sl_global_stats *gs = sl_cpu_stats();
	struct sl_frag *first = sl_frag_find(pkt);

	if (first)
		first->dropped = 1;
	if (gs)
		gs->frag_later_dropped++;
}

/* First match wins; a rule that `continue`s hands a packet it passed on
 * to the next rule that matches it, to the end of the chain. sl_run
 * applies the chain's first rule itself: most chains end there (a rule
 * that does not continue), with no walk. The rest of a chain is a
 * bpf_loop body: the verifier checks one step, however long the chain;
 * each step starts past the rule before, so the rule count bounds it.
 * `ports`: the rules whose protocol and ports match the packet
 * (sl_class_rules_of), or the rules of its protocol when its ports cannot be
 * seen.
 *
 * The walk's state is the whole frame of sl_run_rules, under the entry's
 * and above sl_apply_rule's on the deepest call chain: 6.1 limits that
 * chain to 512 bytes, each frame rounded up to 32, so it fits in 32.
 */
struct sl_chain_walk {
	const struct sl_config *cfg;
	const struct sl_packet *pkt;
	const struct sl_bitmap *ports;
	__u32 len;
	__u16 next;		/* the first position the next step looks at:
				 * past the rule before */
	__u8 dropped;
	__u8 pad;
};

_Static_assert(sizeof(struct sl_chain_walk) <= 32,
	       "the chain walk's frame must stay within 32 bytes on 6.1");
_Static_assert(SL_MAX_RULES <= 0xffff, "positions are kept in 16 bits");

static long sl_chain_step(__u32 i, void *data)
{
	struct sl_chain_walk *w = data;
	int pos, ret;

	pos = sl_rule_position(w->cfg, w->pkt, w->next, w->ports);
	if (pos < 0)
		return 1;
	ret = sl_apply_rule(w->cfg, w->pkt, pos, w->len);
	w->next = pos + 1;
	if (ret == SL_DROP) {
		w->dropped = 1;
		return 1;
	}
	return ret & SL_CONTINUE ? 0 : 1;
}

/* The chain after a rule that passed the packet and continues, from
 * position `start` on: SL_DROP or SL_PASS. A global function: verified
 * once, whatever the states of its callers (the XDP and TC entries, and
 * every path of the data path that gets here), which the walk's loop
 * would otherwise multiply.
 */
__noinline int sl_run_rules(const struct sl_config *cfg,
			    const struct sl_packet *pkt,
			    const struct sl_bitmap *ports, __u32 len,
			    __u32 start)
{
	struct sl_chain_walk w;

	if (!cfg || !pkt || !ports || start >= SL_MAX_RULES)
		return SL_PASS;
	w.cfg = cfg;
	w.pkt = pkt;
	w.ports = ports;
	w.len = len;
	w.next = start;
	w.dropped = 0;
	w.pad = 0;
	bpf_loop(cfg->nr_rules < SL_MAX_RULES ? cfg->nr_rules : SL_MAX_RULES,
		 sl_chain_step, &w, 0);
	return w.dropped ? SL_DROP : SL_PASS;
}

/* Whether a packet's headers go on past what the program can read now
 * (`data_end`) but not past the packet (`len`): the TC entry can make
 * more of an skb readable first. A static subprogram, called before the
 * data path: its parse's frame is not under the rule chain's calls,
 * whose stack 6.1 limits to 512 bytes.
 */
static __noinline int sl_headers_cut(void *data, void *data_end, __u32 len)
{
	struct sl_packet pkt = {};

	return sl_parse(data, data_end, &pkt) == SL_PARSE_TRUNCATED &&
	       data_end - data < len;
}

/* The parse result sl_run decides on: headers past what the program can
 * read at all (the TC entry has made all it can readable) are a chain too
 * long, and a first fragment cut before its ports is decided like a
 * later one: its ports are where the program cannot see them.
 */
static __always_inline int sl_run_parse(void *data, void *data_end,
					__u32 len, struct sl_packet *pkt)
{
	int ret = sl_parse(data, data_end, pkt);

	if (ret == SL_PARSE_TRUNCATED && data_end - data < len)
		ret = SL_PARSE_LONG_CHAIN;
	if (ret == SL_PARSE_TRUNCATED && pkt->frag == SL_FRAG_FIRST) {
		pkt->frag = SL_FRAG_LATER;
		ret = SL_PARSE_FRAGMENT;
	}
	return ret;
}

/* The chain of rules from the first that matches, at position `first`:
 * the verdict, with a dropped flow remembered in the front cache and a
 * counted fragment's drop in sl_frags.
 */
static __always_inline int sl_run_chain(const struct sl_config *cfg,
					struct sl_packet *pkt,
					const struct sl_bitmap *ports,
					int first, __u32 len)
{
	int verdict;
	__u64 at;

	/* the rule's position and the length in one register across the
	 * call: the entry's frame, on the deepest call chain, holds no
	 * spill for them (the barrier keeps the compiler from splitting it)
	 */
	at = (__u64)first << 32 | len;
	__asm__ volatile("" : "+r"(at));
	verdict = sl_apply_rule(cfg, pkt, at >> 32, (__u32)at);
	__asm__ volatile("" : "+r"(at));
	if (verdict == SL_DROP) {
		if (pkt->frag == SL_FRAG_NONE)
			sl_front_remember(cfg, pkt, at >> 32);
	} else if (verdict & SL_CONTINUE) {
		verdict = sl_run_rules(cfg, pkt, ports, (__u32)at,
				       (at >> 32) + 1);
	} else {
		verdict = SL_PASS;
	}
	if (verdict == SL_DROP && pkt->counted)
		sl_frag_dropped(pkt);
	return verdict;
}

/* The rules' verdict on a packet whose shape they decide (sl_run):
 * `ports` the rules an orphan fragment can meet, NULL to classify it by
 * its port slot.
 */
static __always_inline int sl_run_decide(const struct sl_config *cfg,
					 struct sl_global_stats *gs,
					 struct sl_packet *pkt,
					 const struct sl_bitmap *ports,
					 __u32 len)
{
	int verdict, first;
	__u32 class = 0;

	/* no rule for the packet's port: passed before any call, the front
	 * cache's lookup included (it holds only flows a rule dropped)
	 */
	if (!cfg->nr_rules)
		goto no_rule;
	if (!ports) {
		class = sl_port_class(cfg, pkt->slot);
		if (!class)
			goto no_rule;
	}
	/* past sl_run's switch, a packet that is no fragment parsed
	 * whole: what is held across the calls below is one value fewer
	 * without `ret`
	 */
	if (pkt->frag == SL_FRAG_NONE && sl_front_hit(cfg, gs, pkt, len))
		return SL_DROP;
	if (!ports)
		ports = sl_class_rules_of(cfg, class);
	if (!ports)
		goto no_rule;
	first = sl_first_rule(cfg, pkt, ports);
	if (first < 0 || first >= SL_MAX_RULES)
		goto no_rule;
	verdict = sl_run_chain(cfg, pkt, ports, first, len);
	goto out;
no_rule:
	/* looked up again: one value fewer held across the calls above */
	gs = sl_cpu_stats();
	if (gs)
		gs->no_rule++;
	/* a first fragment is still remembered, passed: its later ones
	 * follow it, not the orphans' rules
	 */
	verdict = SL_PASS;
out:
	if (pkt->frag == SL_FRAG_FIRST && cfg->nr_rules)
		sl_frag_remember(pkt, verdict);
	return verdict;
}

static __always_inline int sl_run(void *data, void *data_end, __u32 len)
{
	const struct sl_bitmap *ports = NULL;
	struct sl_global_stats *gs;
	struct sl_config *cfg;
	struct sl_packet pkt = {};
	struct sl_frag *frag;
	int ret, verdict;

	ret = sl_run_parse(data, data_end, len, &pkt);
	cfg = sl_live_config();
	gs = sl_cpu_stats();
	if (!gs || !cfg)
		return SL_PASS;
	gs->packets++;

	/* the block and allow lists come before any rule and any packet
	 * shape's own policy; while both are empty this is one load and a
	 * branch, no lookup
	 */
	if (sl_config_lists(cfg) &&
	    (ret == SL_PARSE_OK || ret == SL_PARSE_FRAGMENT)) {
		verdict = sl_listed(cfg, &pkt, len);
		if (verdict)
			return verdict == SL_LISTED_BLOCK ? SL_DROP : SL_PASS;
	}
	switch (ret) {
	case SL_PARSE_OK:
		if (pkt.frag == SL_FRAG_FIRST) {
			gs->fragments++;
			gs->frag_first++;
		}
		break;
	case SL_PARSE_NON_IP:
		gs->non_ip++;
		return SL_PASS;
	case SL_PARSE_CONTROL:
		gs->icmp_control++;
		return SL_PASS;
	case SL_PARSE_LONG_CHAIN:
	case SL_PARSE_DEEP_VLAN:
		return sl_long_chain(cfg, gs, &pkt, len,
				     ret == SL_PARSE_DEEP_VLAN);
	case SL_PARSE_MAPPED_V4:
		gs->mapped_v4++;
		return SL_DROP;
	case SL_PARSE_FRAGMENT:
		gs->fragments++;
		if (!cfg->nr_rules) {
			gs->no_rule++;
			return SL_PASS;
		}
		frag = sl_frag_find(&pkt);
		if (frag) {
			gs->frag_later++;
			if (frag->dropped) {
				gs->frag_later_dropped++;
				return SL_DROP;
			}
			pkt.slot = frag->slot;
			pkt.dport = frag->dport;
			pkt.counted = 1;
		} else {
			gs->frag_orphans++;
			ports = sl_orphan_rules(cfg, &pkt);
		}
		break;
	default:
		gs->malformed++;
		return SL_PASS;
	}

	return sl_run_decide(cfg, gs, &pkt, ports, len);
}

#endif /* SL_BPF_DATAPATH_H */
