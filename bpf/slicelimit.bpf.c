// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * slicelimit: per-client rate limiting at XDP or TC ingress. This file holds
 * only the entry points, which adapt their context: sl_run() (datapath.h) is
 * the one data path for both, and the headers beside it parse (parse.h),
 * classify (classify.h), apply a rule (rule.h), decide (limit.h), answer the
 * check API (check.h) and define the maps (maps.h).
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <xdp/xdp_helpers.h>
#include "check.h"
#include "datapath.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Bytes of an skb made linear before parsing: what a packet without an
 * IPv6 extension chain needs; a longer chain asks for the rest.
 */
#define SL_TC_PULL	128

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
 * state: an address counted by XDP and by the API is one client. A
 * struct sl_check_msg gets the client's state back in the same call.
 */
SEC("xdp")
int sl_check(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct sl_check_req *req = data;

	if ((void *)(req + 1) > data_end)
		return XDP_ABORTED;
	return sl_check_request(ctx, req);
}

SEC("tc")
int sl_tc(struct __sk_buff *skb)
{
	void *data, *data_end;

	/* Headers may sit outside the linear part of an skb; make the first
	 * bytes readable before parsing (a no-op when they already are).
	 */
	if (skb->data_end - skb->data < skb->len &&
	    skb->data_end - skb->data < SL_TC_PULL)
		bpf_skb_pull_data(skb, skb->len < SL_TC_PULL ? skb->len : SL_TC_PULL);
	/* A header chain past those bytes: pull the whole packet; if that
	 * fails, the data path decides on what it can read.
	 */
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	if (sl_headers_cut(data, data_end, skb->len)) {
		bpf_skb_pull_data(skb, skb->len);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
	}
	return sl_run(data, data_end, skb->len) == SL_DROP ? TC_ACT_SHOT :
							      TC_ACT_OK;
}
