/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The front cache: a flow whose packet the exact path just dropped under
 * a cached block (bpf/block.h) is decided again by one per-CPU array
 * lookup, before classification, for as long as that block holds.
 *
 * An entry is the flow as classification and the client key read it
 * (addresses, port slot, port, and the SYN bit a rule counting new
 * connections reads), the dropping rule's id, and what the block holds
 * under: its block tag (the rules epoch and the sync conf's part), the
 * count of userspace deletions of client states (sl_forgotten), and its
 * end, the state's own. A hit needs all three current and the end still
 * ahead of the cache's clock, exactly the state's own test; it counts the
 * drop as the exact path does (the rule's dropped packets and bytes) and
 * writes nothing else. Anything else takes the exact path.
 *
 * Written only for a drop by the first rule of the chain (a `continue`
 * rule before it charges the packet, which a hit would skip); a shadow
 * rule drops nothing, so it has none. Per CPU: no entry is torn between
 * CPUs. The block's end is read after sl_forgotten, so a state deleted
 * between the two leaves an entry that holds under the count before.
 * The one difference from the exact path: a state the LRU table evicts
 * stays blocked here until its block's end, where the exact path would
 * start it afresh.
 *
 * Quiet when it cannot hit: sources that take turns, more of them than
 * the slots, each find their slot held by another and pay the lookup and
 * the second look after the drop for nothing. A per-CPU score (the
 * cache's own, struct sl_front_cache) counts +1 for each packet the front
 * missed and the exact path then dropped (by the chain's first rule:
 * the drops it could have held), -SL_FRONT_HIT_CREDIT for each hit, and
 * stays within 0..SL_FRONT_QUIET. At SL_FRONT_QUIET the front is quiet:
 * a packet that meets a rule neither looks nor writes (front_skipped;
 * one that meets none never looks), except one in
 * SL_FRONT_PROBE by the CPU's packet count (front_probes), which looks,
 * and whose drop then takes its slot even from a live entry. So when one
 * flow floods again, its first probe dropped under its cached block
 * writes its entry and the next probe hits, bringing the score under
 * SL_FRONT_QUIET: the front is back within 2 * SL_FRONT_PROBE of that
 * CPU's packets. Among many sources a probe's hit wakes it too, until
 * the misses after it put it back: the share of packets that look
 * follows the hit rate. SL_FRONT_HIT_CREDIT sets the break-even (a hit
 * pays for that many misses: the front stays on while more than one
 * drop in SL_FRONT_HIT_CREDIT + 1 hits) and SL_FRONT_QUIET how many net
 * misses it takes to go quiet. Verdicts are the exact path's either
 * way: the front only ever skips work.
 */
#ifndef SL_BPF_FRONT_H
#define SL_BPF_FRONT_H

#include "limit.h"
#include "maps.h"
#include "parse.h"
#include "sl_front.h"
#include "sl_key.h"

static __always_inline __u32 sl_forgotten_now(void)
{
	__u32 zero = 0, *n = bpf_map_lookup_elem(&sl_forgotten, &zero);

	return n ? *n : 0;
}

/* The block tag sl_decide computes its blocks under. */
static __always_inline __u64 sl_front_block_tag(const struct sl_config *cfg)
{
	const struct sl_sync_conf *sc = sl_sync_conf();

	return sl_block_tag(cfg->rules_epoch, sl_syncs(sc) ? sc : NULL);
}

/* This CPU's front cache (an array of one: NULL only to the verifier). */
static __always_inline struct sl_front_cache *sl_front_cache(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&sl_front, &zero);
}

static __always_inline struct sl_front_entry *
sl_front_entry_of(struct sl_front_cache *fc, const struct sl_packet *pkt)
{
	__u32 idx = sl_front_slot(&pkt->src, &pkt->dst, pkt->slot, pkt->dport);

	/* the compare reads the addresses again: held from the hash, their
	 * eight words would be spilled, on the entry's frame
	 */
	__asm__ volatile("" : : : "memory");
	return &fc->slot[idx & (SL_FRONT_SLOTS - 1)];
}

static __always_inline int sl_front_matches(const struct sl_front_entry *fe,
					    const struct sl_packet *pkt)
{
	const __u32 *a = (const __u32 *)fe->src.byte;
	const __u32 *b = (const __u32 *)pkt->src.byte;
	const __u32 *c = (const __u32 *)fe->dst.byte;
	const __u32 *d = (const __u32 *)pkt->dst.byte;

	return fe->set && fe->slot == pkt->slot && fe->dport == pkt->dport &&
	       fe->syn == pkt->syn &&
	       !((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) |
		 (c[0] ^ d[0]) | (c[1] ^ d[1]) | (c[2] ^ d[2]) | (c[3] ^ d[3]));
}

/* 1 if the packet looks in the front cache: always unless it is quiet,
 * then one packet in SL_FRONT_PROBE.
 */
static __always_inline int sl_front_looks(struct sl_global_stats *gs,
					  const struct sl_front_cache *fc)
{
	if (fc->score < SL_FRONT_QUIET)
		return 1;
	if (gs->packets & (SL_FRONT_PROBE - 1)) {
		gs->front_skipped++;
		return 0;
	}
	gs->front_probes++;
	return 1;
}

/* 1 if the flow's entry `fe` of `fc` (it matched the packet) holds:
 * counted as dropped by its rule. A static subprogram: its frame is not
 * on the rule chain's stack.
 */
static __noinline int sl_front_drop(const struct sl_config *cfg,
				    struct sl_front_cache *fc,
				    struct sl_front_entry *fe, __u32 len)
{
	struct sl_rule_stats *rs;
	__u32 rule_id;

	if (!cfg || !fc || !fe)
		return 0;
	if (fe->forgotten != sl_forgotten_now() ||
	    fe->tag != sl_front_block_tag(cfg) || !sl_cache_before(fe->end)) {
		fe->set = 0;
		return 0;
	}
	rule_id = fe->rule_id;
	rs = bpf_map_lookup_elem(&sl_rule_stats, &rule_id);
	if (!rs)
		return 0;
	rs->dropped++;
	rs->dropped_bytes += len;
	fc->score -= fc->score < SL_FRONT_HIT_CREDIT ? fc->score :
						       SL_FRONT_HIT_CREDIT;
	return 1;
}

/* 1 if the packet looked in the front cache (sl_front_looks) and its
 * entry holds (sl_front_drop). The slot and the flow's compare are
 * inline: a miss, what every packet of a flow no block holds meets,
 * costs no call.
 */
static __always_inline int sl_front_hit(const struct sl_config *cfg,
					struct sl_global_stats *gs,
					const struct sl_packet *pkt, __u32 len)
{
	struct sl_front_cache *fc = sl_front_cache();
	struct sl_front_entry *fe;

	if (!fc || !sl_front_looks(gs, fc))
		return 0;
	fe = sl_front_entry_of(fc, pkt);
	if (!sl_front_matches(fe, pkt))
		return 0;
	return sl_front_drop(cfg, fc, fe, len);
}

/* The word of the block the exact path dropped the packet under, read
 * once, if the client's state holds one now; 0 otherwise.
 */
static __always_inline __u64 sl_front_block(const struct sl_rule *rule,
					    const struct sl_client_key *key,
					    __u64 tag)
{
	const struct sl_client_hdr *own;
	__u64 word;

	switch (sl_state_kind(rule->algorithm)) {
	case SL_STATE_PLAIN:
		own = bpf_map_lookup_elem(&sl_clients_plain, key);
		break;
	case SL_STATE_LOG:
		own = bpf_map_lookup_elem(&sl_clients_log, key);
		break;
	default:
		own = bpf_map_lookup_elem(&sl_clients, key);
		break;
	}
	if (!own)
		return 0;
	word = SL_LOAD(own->blocked_until);
	if (((__u64)SL_LOAD(own->blocked_epoch) << 32 |
	     SL_LOAD(own->blocked_sync)) != tag ||
	    !sl_block_of(word, tag) || !sl_cache_before(word))
		return 0;
	return word;
}

/* After the rule at `pos`, the first of the packet's chain, dropped it:
 * its flow's entry, if that drop was a cached block's and the packet
 * looked in the front cache (sl_front_looks, the same test: the score
 * and the packet count are as they were then).
 */
static __noinline void sl_front_remember(const struct sl_config *cfg,
					 const struct sl_packet *pkt,
					 __u32 pos)
{
	struct sl_global_stats *gs = sl_cpu_stats();
	struct sl_front_cache *fc = sl_front_cache();
	const struct sl_rule *rule;
	struct sl_front_entry *fe;
	struct sl_client_key key;
	__u32 forgotten;
	__u64 tag, word;
	int quiet;

	if (!cfg || !gs || !fc || pos >= SL_MAX_RULES)
		return;
	quiet = fc->score >= SL_FRONT_QUIET;
	if (quiet && (gs->packets & (SL_FRONT_PROBE - 1)))
		return;
	if (!quiet)
		fc->score++;
	rule = sl_rule_at(cfg, pos);
	if (!rule)
		return;
	fe = sl_front_entry_of(fc, pkt);
	/* before the state: a deletion after this read makes the entry old */
	forgotten = sl_forgotten_now();
	tag = sl_front_block_tag(cfg);
	/* a slot another flow holds while its block lasts is left to it:
	 * flows that share a slot would otherwise each pay a second state
	 * lookup and a write for every packet of theirs, and hit no more;
	 * a probe takes it, so that a flow flooding alone gets one
	 */
	if (!quiet && fe->set && fe->forgotten == forgotten && fe->tag == tag &&
	    sl_cache_before(fe->end))
		return;
	sl_client_key_make(&key, rule, &pkt->src, pkt->dport);
	word = sl_front_block(rule, &key, tag);
	if (!word)
		return;
	fe->src = pkt->src;
	fe->dst = pkt->dst;
	fe->slot = pkt->slot;
	fe->dport = pkt->dport;
	fe->syn = pkt->syn;
	fe->rule_id = rule->id;
	fe->forgotten = forgotten;
	fe->tag = tag;
	fe->end = word & SL_CACHE_END_MASK;
	fe->set = 1;
}

#endif /* SL_BPF_FRONT_H */
