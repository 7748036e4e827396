// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * slicelimit: per-client rate limiting at XDP or TC ingress. The entry points
 * only adapt the context; sl_run() is the one data path for both.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <xdp/xdp_helpers.h>
#include "parse.h"
#include "classify.h"
#include "limit.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

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
	__u32 idx, rule_id, units, zero = 0;
	int ret, pass;

	if (!cfg || !pkt || pos >= SL_MAX_RULES)
		return SL_PASS;
	idx = (cfg->gen & 1) * SL_MAX_RULES + pos;
	rule = bpf_map_lookup_elem(&sl_rules, &idx);
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
		struct sl_global_stats *gs;

		gs = bpf_map_lookup_elem(&sl_global_stats, &zero);
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

static __always_inline int sl_run(void *data, void *data_end, __u32 len)
{
	struct sl_global_stats *gs;
	struct sl_config *cfg;
	struct sl_packet pkt = {};
	__u32 zero = 0, start = 0, *gen;
	int i, pos, ret;

	gs = bpf_map_lookup_elem(&sl_global_stats, &zero);
	gen = bpf_map_lookup_elem(&sl_active, &zero);
	if (!gs || !gen)
		return SL_PASS;
	cfg = bpf_map_lookup_elem(&sl_config, gen);
	if (!cfg)
		return SL_PASS;
	gs->packets++;

	ret = sl_parse(data, data_end, &pkt);
	if (ret) {
		if (ret == SL_PARSE_NON_IP)
			gs->non_ip++;
		else if (ret == SL_PARSE_FRAGMENT)
			gs->fragments++;
		else
			gs->malformed++;
		return SL_PASS;
	}

	/* First match wins; a rule that `continue`s hands a packet it passed
	 * on to the next rule that matches it, up to SL_MAX_CHAIN rules.
	 */
	for (i = 0; i < SL_MAX_CHAIN; i++) {
		pos = sl_rule_position(cfg, &pkt, start);
		if (pos < 0)
			break;
		ret = sl_apply_rule(cfg, &pkt, pos, len);
		if (ret == SL_DROP)
			return SL_DROP;
		if (!(ret & SL_CONTINUE))
			return SL_PASS;
		start = pos + 1;
	}
	if (i == 0)
		gs->no_rule++;
	return SL_PASS;
}

SEC("xdp")
int sl_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	return sl_run(data, data_end, data_end - data) == SL_DROP ?
	       XDP_DROP : XDP_PASS;
}

/* Run before other programs sharing the interface through libxdp's
 * dispatcher, and let them see what we pass.
 */
struct {
	__uint(priority, 10);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(sl_xdp);

/* Count one request for a key under a rule (the HTTP check API). Run only
 * through BPF_PROG_TEST_RUN with a struct sl_check_req as the "packet", so
 * an API check and a packet are decided by the same code, on the same
 * state: an address counted by XDP and by the API is one client.
 */
SEC("xdp")
int sl_check(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct sl_check_req *req = data;
	const struct sl_rule *rule;
	struct sl_config *cfg;
	struct sl_client_key key;
	struct sl_params p;
	__u32 zero = 0, idx, *gen;
	int ret;

	if ((void *)(req + 1) > data_end || req->magic != SL_CHECK_MAGIC ||
	    req->position >= SL_MAX_RULES)
		return XDP_ABORTED;
	gen = bpf_map_lookup_elem(&sl_active, &zero);
	if (!gen)
		return XDP_ABORTED;
	cfg = bpf_map_lookup_elem(&sl_config, gen);
	if (!cfg || cfg->rules_epoch != req->rules_epoch)
		return XDP_ABORTED;
	idx = (cfg->gen & 1) * SL_MAX_RULES + req->position;
	rule = bpf_map_lookup_elem(&sl_rules, &idx);
	if (!rule || rule->id != req->rule_id)
		return XDP_ABORTED;

	if (req->flags & SL_CHECK_RAW_KEY) {
		key.addr = req->addr;
		key.rule_id = rule->id;
		key.dport = 0;
	} else {
		struct sl_packet pkt = { .src = req->addr };

		/* an address the rule exempts is exempt from its checks too */
		if (sl_exempt(cfg, &pkt, req->position))
			return XDP_PASS;
		sl_client_key_make(&key, rule, &req->addr, 0);
	}
	sl_params_from_rule(&p, rule);
	ret = sl_decide(&key, &p, cfg->rules_epoch, 1);
	return ret == SL_OVER ? XDP_DROP : XDP_PASS;
}

SEC("tc")
int sl_tc(struct __sk_buff *skb)
{
	void *data, *data_end;

	/* Headers may sit outside the linear part of an skb; make the first
	 * bytes readable before parsing (a no-op when they already are).
	 */
	if (skb->data_end - skb->data < skb->len &&
	    skb->data_end - skb->data < 128)
		bpf_skb_pull_data(skb, skb->len < 128 ? skb->len : 128);
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	return sl_run(data, data_end, skb->len) == SL_DROP ?
	       TC_ACT_SHOT : TC_ACT_OK;
}
