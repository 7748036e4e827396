/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The client's one state (shared by every CPU: why, docs/DESIGN.md, "Why
 * one record for every CPU"): the table its rule's algorithm keeps it in,
 * its creation, and the tally and charge of each table's value, each a
 * global function the verifier checks on its own.
 */
#ifndef SL_BPF_STATE_H
#define SL_BPF_STATE_H

#include "clock.h"
#include "maps.h"
#include "sl_algo.h"
#include "sl_key.h"

enum sl_decision {
	SL_ACCEPT = 0,
	SL_OVER = 1,
	SL_FAIL_OPEN = 2,	/* no state could be had: accepted */
};

/* Zero states to create clients from (read-only data). */
static const struct sl_client sl_zero_client;
static const struct sl_client_plain sl_zero_plain;
static const struct sl_client_log sl_zero_log;
/* The peer view of a client no peer counted. Never written, but not
 * const: the verifier takes a global function's pointer argument as
 * writable memory, which read-only data is not.
 */
static struct sl_peer_view sl_zero_view;

/* The client state map of a kind, and its zero state. */
static __always_inline void *sl_state_map(int kind, const void **zero)
{
	if (kind == SL_STATE_PLAIN) {
		*zero = &sl_zero_plain;
		return &sl_clients_plain;
	}
	if (kind == SL_STATE_LOG) {
		*zero = &sl_zero_log;
		return &sl_clients_log;
	}
	*zero = &sl_zero_client;
	return &sl_clients;
}

/* A key's state, created. NOEXIST: a racing insert on another CPU must
 * not be overwritten (that would zero what it counted). 0 when this call
 * created it.
 */
static __always_inline int sl_state_create(__u32 algorithm,
					   const struct sl_client_key *key)
{
	const void *zero;
	void *map = sl_state_map(sl_state_kind(algorithm), &zero);
	struct sl_global_stats *gs;

	if (bpf_map_update_elem(map, key, zero, BPF_NOEXIST))
		return -1;
	gs = sl_cpu_stats();
	if (gs)
		gs->new_clients++;
	return 0;
}

/* The slots of sliding-plain and sliding-counter, one bpf_loop body: the
 * verifier checks it once, where 64 steps of the walk explored one by one
 * take 6.1's verifier past its limit.
 */
struct sl_slots_ctx {
	const struct sl_client_plain *c;
	const struct sl_params *p;
	struct sl_tally *t;
	struct sl_slot_walk w;
};

static long sl_tally_slot(__u32 i, void *data)
{
	struct sl_slots_ctx *ctx = data;

	if (ctx->c)
		sl_plain_slot_tally(ctx->t, &ctx->c->slot[i & (SL_MAX_PLAIN_SLICES - 1)],
				    ctx->p, &ctx->w);
	return 0;
}

/* The client's tally, into `t`, from its state as sl_decide found it:
 * the state is looked up once per decision, and passed down as the map
 * value it is (sl_value_*: the kernel's, over a table's value; the state
 * functions they call, sl_client_tally and the like, are include/algo's
 * and know no map). Global functions (these, and the others below) are
 * verified once each, on their own: together they would exceed what the
 * verifier explores in one program. One per table, whose value type the
 * verifier checks the accesses against.
 */
__noinline int sl_value_tally_client(const struct sl_client *c,
				     const struct sl_params *p, __u64 now_ms,
				     struct sl_tally *t)
{
	if (!c || !p || !t)
		return -1;
	sl_tally_init(t);
	sl_client_tally(t, c, p, now_ms);
	sl_tally_finish(t, p, now_ms);
	return 0;
}

/* The slot walk's context holds pointers, not copies: on 6.1 the stack
 * of the whole call chain must fit 512 bytes.
 */
__noinline int sl_value_tally_plain(const struct sl_client_plain *c,
				    const struct sl_params *p, __u64 now_ms,
				    struct sl_tally *t)
{
	struct sl_slots_ctx ctx;

	if (!c || !p || !t)
		return -1;
	sl_tally_init(t);
	if (sl_hdr_tally(t, (const void *)c, p, now_ms)) {
		ctx.c = c;
		ctx.p = p;
		ctx.t = t;
		sl_slot_walk_init(&ctx.w, p, now_ms);
		bpf_loop(SL_MAX_PLAIN_SLICES, sl_tally_slot, &ctx, 0);
	}
	sl_tally_finish(t, p, now_ms);
	return 0;
}

__noinline int sl_value_tally_log(const struct sl_client_log *c,
				  const struct sl_params *p, __u64 now_ms,
				  struct sl_tally *t)
{
	if (!c || !p || !t)
		return -1;
	sl_tally_init(t);
	sl_client_log_tally(t, c, p, now_ms);
	sl_tally_finish(t, p, now_ms);
	return 0;
}

static __always_inline void sl_tally_own(void *own, int kind,
					 const struct sl_params *p,
					 __u64 now_ms, struct sl_tally *t)
{
	if (kind == SL_STATE_PLAIN)
		sl_value_tally_plain(own, p, now_ms, t);
	else if (kind == SL_STATE_LOG)
		sl_value_tally_log(own, p, now_ms, t);
	else
		sl_value_tally_client(own, p, now_ms, t);
}

/* A request as the peers' functions weigh it, and as an accept is
 * charged (BPF functions take 5 args).
 */
struct sl_request {
	__u64 now_ms;
	__u32 since;		/* the client's units of the share round */
	__u32 units;
};

/* Account an accept of rq->units at rq->now_ms in the client's one
 * state, found by sl_decide, one function per table as for the tally.
 * Returns 1 if charged, 0 if the accept no longer fits (token-bucket:
 * another CPU took the tokens since the tally `t`).
 */
__noinline int sl_value_charge_client(struct sl_client *c,
				      const struct sl_params *p,
				      const struct sl_tally *t,
				      const struct sl_request *rq)
{
	if (!c || !p || !t || !rq)
		return 1;
	return sl_client_charge(c, p, t, rq->now_ms, rq->units);
}

__noinline int sl_value_charge_plain(struct sl_client_plain *c,
				     const struct sl_params *p,
				     const struct sl_request *rq)
{
	if (!c || !p || !rq)
		return 1;
	return sl_client_plain_charge(c, p, rq->now_ms, rq->units);
}

__noinline int sl_value_charge_log(struct sl_client_log *c,
				   const struct sl_params *p,
				   const struct sl_request *rq)
{
	if (!c || !p || !rq)
		return 1;
	return sl_client_log_charge(c, p, rq->now_ms);
}

static __always_inline int sl_charge_own(void *own, int kind,
					 const struct sl_params *p,
					 const struct sl_tally *t,
					 const struct sl_request *rq)
{
	if (kind == SL_STATE_PLAIN)
		return sl_value_charge_plain(own, p, rq);
	if (kind == SL_STATE_LOG)
		return sl_value_charge_log(own, p, rq);
	return sl_value_charge_client(own, p, t, rq);
}

#endif /* SL_BPF_STATE_H */
