/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The per-client decision at node level, over per-CPU state.
 *
 * Counting stays per CPU (no shared cache line is written per packet), and a
 * decision sums the client's slots on every CPU with
 * bpf_map_lookup_percpu_elem: exact at node level, with no aggregation lag.
 * The sum costs one lookup per CPU, so it is paid only when it can change the
 * answer: once a CPU finds the client over the limit it caches, in its own
 * slot, the earliest time any counted slice leaves the window. Until then
 * nothing can lower the count (slices only age out), so every further
 * packet is decided by one lookup and one compare and writes nothing: the
 * over-limit path is the cheapest path. The cache is tagged with the rules
 * epoch, so `rules apply` invalidates it.
 */
#ifndef SL_LIMIT_H
#define SL_LIMIT_H

#include "maps.h"
#include "sl_algo.h"
#include "sl_key.h"

/* Set by the loader: CPUs whose slots a decision sums. */
const volatile __u32 sl_nr_cpus = 1;

enum sl_decision {
	SL_ACCEPT = 0,
	SL_OVER = 1,
	SL_FAIL_OPEN = 2,	/* no state could be had: accepted */
};

static __always_inline struct sl_client *
sl_client_get(const struct sl_client_key *key)
{
	static const struct sl_client zero;
	struct sl_client *c;

	c = bpf_map_lookup_elem(&sl_clients, key);
	if (c)
		return c;
	/* NOEXIST: a racing insert on another CPU must not be overwritten
	 * (that would zero its slots); look up whatever won.
	 */
	bpf_map_update_elem(&sl_clients, key, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&sl_clients, key);
}

/* bpf_loop() callback: the verifier checks its body once, not once per CPU. */
struct sl_tally_ctx {
	struct sl_client_key key;
	struct sl_params params;
	struct sl_tally tally;
	__u64 now_ms;
};

static long sl_tally_cpu(__u32 cpu, void *data)
{
	struct sl_tally_ctx *ctx = data;
	const struct sl_client *c;

	c = bpf_map_lookup_percpu_elem(&sl_clients, &ctx->key, cpu);
	if (c)
		sl_tally_add(&ctx->tally, c, &ctx->params, ctx->now_ms);
	return 0;
}

/* A global function: verified once, on its own. */
__noinline int sl_decide(const struct sl_client_key *key,
			 const struct sl_params *p, __u32 epoch,
			 __u64 now_ms, __u32 units)
{
	struct sl_tally_ctx ctx;
	struct sl_client *own;

	if (!key || !p)
		return SL_FAIL_OPEN;
	own = sl_client_get(key);
	if (!own)
		return SL_FAIL_OPEN;
	/* the over-limit path ends here: a lookup and a compare, no write */
	if (own->blocked_epoch == epoch && now_ms < own->blocked_until_ms)
		return SL_OVER;

	ctx.key = *key;
	ctx.params = *p;
	ctx.now_ms = now_ms;
	sl_tally_init(&ctx.tally);
	bpf_loop(sl_nr_cpus, sl_tally_cpu, &ctx, 0);
	if (!sl_tally_allows(&ctx.tally, p)) {
		own->blocked_until_ms = ctx.tally.next_expiry_ms;
		own->blocked_epoch = epoch;
		return SL_OVER;
	}
	sl_charge(own, p, &ctx.tally, now_ms, units);
	return SL_ACCEPT;
}

#endif /* SL_LIMIT_H */
