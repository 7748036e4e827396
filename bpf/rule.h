/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One rule applied to a packet: the exempt list, the units the rule counts
 * (packets, bytes or new connections), the decision (limit.h) and the
 * rule's counters. Whether the packet goes on to a later rule is the
 * caller's (datapath.h): a rule only says that it `continue`s.
 */
#ifndef SL_BPF_RULE_H
#define SL_BPF_RULE_H

#include "classify.h"
#include "limit.h"
#include "maps.h"
#include "parse.h"

enum sl_verdict {
	SL_PASS = 0,
	SL_DROP = 1,
};

enum {
	SL_CONTINUE = 2,	/* sl_apply_rule: passed, and the rule continues */
};

/* One rule's verdict on a packet, with the rule's counters. A global
 * function: verified once, however many rules a packet meets.
 */
__noinline int sl_apply_rule(const struct sl_config *cfg,
			     const struct sl_packet *pkt, __u32 pos, __u32 len)
{
	const struct sl_rule *rule;
	struct sl_rule_stats *rs;
	struct sl_client_key key;
	struct sl_params p;
	__u32 rule_id, units;
	int ret, pass;

	if (!cfg || !pkt || pos >= SL_MAX_RULES)
		return SL_PASS;
	rule = sl_rule_at(cfg, pos);
	if (!rule)
		return SL_PASS;
	rule_id = rule->id;
	rs = bpf_map_lookup_elem(&sl_rule_stats, &rule_id);
	if (!rs)
		return SL_PASS;
	pass = rule->continues ? SL_PASS | SL_CONTINUE : SL_PASS;
	if (sl_exempt(cfg, pkt, pos)) {
		rs->exempt++;
		rs->passed_bytes += len;
		return pass;
	}

	if (rule->unit == SL_UNIT_BYTES)
		units = len;
	else if (pkt->counted)
		units = 0;	/* its datagram's first fragment was counted */
	else if (rule->unit == SL_UNIT_SYN && !pkt->syn)
		units = 0;	/* not a new connection: not counted */
	else
		units = 1;
	if (!units)
		goto pass;

	sl_client_key_make(&key, rule, &pkt->src, pkt->dport);
	sl_params_from_rule(&p, rule);
	ret = sl_decide(&key, &p, cfg->rules_epoch, units);
	if (ret == SL_FAIL_OPEN) {
		struct sl_global_stats *gs = sl_cpu_stats();

		if (gs)
			gs->fail_open++;
	}
	if (ret != SL_OVER)
		goto pass;
	if (rule->action == SL_ACTION_SHADOW) {
		rs->shadow_dropped++;
		rs->passed_bytes += len;
		return pass;
	}
	rs->dropped++;
	rs->dropped_bytes += len;
	return SL_DROP;
pass:
	rs->passed++;
	rs->passed_bytes += len;
	return pass;
}

#endif /* SL_BPF_RULE_H */
