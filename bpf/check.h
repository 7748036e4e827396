/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTTP check API's decision (user/service/check_local.c): one request
 * of `units` for a key, counted under a rule by the data path's own decision
 * (limit.h), on the same state, so that an address counted by XDP and by
 * the API is one client.
 */
#ifndef SL_BPF_CHECK_H
#define SL_BPF_CHECK_H

#include "classify.h"
#include "limit.h"
#include "maps.h"
#include "parse.h"

/* After the decision, when the packet has room for a reply (struct
 * sl_check_msg): the client's state, its peer view and the layout, copied
 * for the service to compute its answer from (include/slicelimit.h).
 * Packet pointers are taken again from the context: the decision's
 * calls came between. The small fields are written directly, the large
 * copies last, by bpf_xdp_store_bytes (one helper call each instead of a
 * load and a store per word for the verifier to walk).
 */
static __always_inline void sl_check_reply(struct xdp_md *ctx,
					   const struct sl_client_key *key,
					   __u32 algorithm, __u32 has)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct sl_check_msg *msg = data;
	const struct sl_sync_conf *sc = NULL;
	const struct sl_peer_view *pv = NULL;
	const void *state = NULL;
	int kind = sl_state_kind(algorithm);

	if ((void *)(msg + 1) > data_end)
		return;
	if (!(has & SL_CHECK_HAS_EXEMPT)) {
		sc = sl_sync_conf();
		if (sc && sc->layout != SL_LAYOUT_LOCAL) {
			has |= SL_CHECK_HAS_SYNC;
			pv = bpf_map_lookup_elem(&sl_peer_view, key);
			if (pv)
				has |= SL_CHECK_HAS_PEERS;
		}
		if (kind == SL_STATE_CLIENT)
			state = bpf_map_lookup_elem(&sl_clients, key);
		else if (kind == SL_STATE_PLAIN)
			state = bpf_map_lookup_elem(&sl_clients_plain, key);
		if (state)
			has |= SL_CHECK_HAS_STATE;
	}
	msg->reply.now_ms = sl_now_ms();
	msg->reply.has = has;
	if (has & SL_CHECK_HAS_SYNC)
		msg->reply.sync = *sc;
	if (pv)
		bpf_xdp_store_bytes(ctx, offsetof(struct sl_check_msg,
						  reply.peers),
				    (void *)pv, sizeof(*pv));
	if (state && kind == SL_STATE_CLIENT)
		bpf_xdp_store_bytes(ctx, offsetof(struct sl_check_msg,
						  reply.state.client),
				    (void *)state, sizeof(struct sl_client));
	else if (state)
		bpf_xdp_store_bytes(ctx, offsetof(struct sl_check_msg,
						  reply.state.plain),
				    (void *)state,
				    sizeof(struct sl_client_plain));
}

/* The answer is the XDP return code, which is what BPF_PROG_TEST_RUN hands
 * back: XDP_PASS (counted, or exempt), XDP_DROP (over the limit), and
 * XDP_ABORTED for a request that is not one or names no live rule (the rule
 * set moved since the caller read the position and id: it reads them again).
 * Mapping a verdict to these in the entry point instead costs sl_check
 * 56 bytes of stack in register spills (clang 14).
 */
static __always_inline int sl_check_request(struct xdp_md *ctx,
					    const struct sl_check_req *req)
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
		if (sl_exempt(cfg, &pkt, req->position)) {
			sl_check_reply(ctx, &key, 0, SL_CHECK_HAS_EXEMPT);
			return XDP_PASS;
		}
		sl_client_key_make(&key, rule, &req->addr, 0);
	}
	sl_params_from_rule(&p, rule);
	ret = sl_decide(&key, &p, cfg->rules_epoch, req->units);
	sl_check_reply(ctx, &key, p.algorithm, 0);
	return ret == SL_OVER ? XDP_DROP : XDP_PASS;
}

#endif /* SL_BPF_CHECK_H */
