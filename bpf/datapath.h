/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one data path of the XDP and the TC entry points, which only adapt
 * their context to it: global counters, parse (parse.h), then the chain of
 * matching rules (classify.h), each applied by rule.h.
 */
#ifndef SL_DATAPATH_H
#define SL_DATAPATH_H

#include "classify.h"
#include "maps.h"
#include "parse.h"
#include "rule.h"

static __always_inline int sl_run(void *data, void *data_end, __u32 len)
{
	struct sl_global_stats *gs;
	struct sl_config *cfg;
	struct sl_packet pkt = {};
	__u32 start = 0;
	int i, pos, ret;

	cfg = sl_live_config();
	gs = sl_cpu_stats();
	if (!gs || !cfg)
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

#endif /* SL_DATAPATH_H */
