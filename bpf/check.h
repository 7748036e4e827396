/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTTP check API's decision (user/service/check_local.c): one request
 * of `units` for a key, counted under a rule by the data path's own decision
 * (limit.h), on the same state, so that an address counted by XDP and by
 * the API is one client.
 */
#ifndef SL_CHECK_H
#define SL_CHECK_H

#include "classify.h"
#include "limit.h"
#include "maps.h"
#include "parse.h"

/* The answer is the XDP return code, which is what BPF_PROG_TEST_RUN hands
 * back: XDP_PASS (counted, or exempt), XDP_DROP (over the limit), and
 * XDP_ABORTED for a request that is not one or names no live rule (the rule
 * set moved since the caller read the position and id: it reads them again).
 * Mapping a verdict to these in the entry point instead costs sl_check
 * 56 bytes of stack in register spills (clang 14).
 */
static __always_inline int sl_check_request(const struct sl_check_req *req)
{
	const struct sl_rule *rule;
	struct sl_config *cfg;
	struct sl_client_key key;
	struct sl_params p;
	int ret;

	if (req->magic != SL_CHECK_MAGIC || req->position >= SL_MAX_RULES ||
	    !req->units)
		return XDP_ABORTED;
	cfg = sl_live_config();
	if (!cfg || cfg->rules_epoch != req->rules_epoch)
		return XDP_ABORTED;
	rule = sl_rule_at(cfg, req->position);
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
	ret = sl_decide(&key, &p, cfg->rules_epoch, req->units);
	return ret == SL_OVER ? XDP_DROP : XDP_PASS;
}

#endif /* SL_CHECK_H */
