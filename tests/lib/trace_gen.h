/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Random request traces and the exact sliding log, shared by the host tests
 * of the algorithm (tests/unit/test_algo.c) and the replay tests through the
 * real BPF object (tests/replay/test_replay_*.c), so that both run the very same
 * generators and reference.
 *
 * A trace is a list of requests (time in ms, CPU) in non-decreasing time.
 * Everything here is deterministic given the seed: a failing case can be
 * reproduced from its seed and index.
 */
#ifndef SL_TEST_TRACE_GEN_H
#define SL_TEST_TRACE_GEN_H

#include <stdlib.h>
#include <linux/types.h>
#include "sl_algo.h"

#ifndef MAXREQ
#define MAXREQ		16384
#endif

struct req {
	__u64 t;
	int cpu;
};

struct trace {
	int n;
	struct req r[MAXREQ];
};

/* Largest number of accepts (sorted times) in any interval (t - w, t]. */
static inline __u64 max_in_window(const __u64 *acc, int n, __u64 w)
{
	__u64 best = 0;
	int i, j = 0;

	for (i = 0; i < n; i++) {
		while (acc[j] + w <= acc[i])
			j++;
		if ((__u64)(i - j + 1) > best)
			best = i - j + 1;
	}
	return best;
}

/* Exact sliding log: accept while fewer than `limit` accepts lie in
 * (t - w, t]; the accepted requests of `in` go to `out`.
 */
static inline int ref_log(const struct trace *in, __u64 limit, __u64 w,
			  struct trace *out)
{
	int i, j = 0;

	out->n = 0;
	for (i = 0; i < in->n; i++) {
		while (j < out->n && out->r[j].t + w <= in->r[i].t)
			j++;
		if ((__u64)(out->n - j) < limit)
			out->r[out->n++] = in->r[i];
	}
	return out->n;
}

static inline __u64 rnd(__u64 *s, __u64 n)	/* xorshift64*, in [0, n) */
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (*s * 0x2545F4914F6CDD1DULL >> 11) % n;
}

static inline void add_burst(struct trace *x, __u64 t, int n, int cpu)
{
	while (n-- > 0 && x->n < MAXREQ)
		x->r[x->n++] = (struct req){ .t = t, .cpu = cpu };
}

static inline int req_cmp(const void *a, const void *b)
{
	const struct req *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

/* Random bursts, often at slice edges or one window after the previous
 * burst (the edge-slice shapes); burst sizes scale with `lim` requests.
 */
static inline void gen_trace(__u64 *s, const struct sl_params *p, __u64 lim,
			     int ncpu, struct trace *x)
{
	__u64 w = p->window_ms, sl = p->slice_ms, t = rnd(s, w), prev = 0;
	__u64 start, span, size, i;
	int b, bursts = 1 + rnd(s, 10);

	x->n = 0;
	for (b = 0; b < bursts; b++) {
		/* at a coming slice edge, a window after the last burst, or not */
		i = rnd(s, 4);
		start = i == 0 ? (t / sl + 1 + rnd(s, 3)) * sl + rnd(s, 5) - 2 :
			i == 1 ? prev + w + rnd(s, 5) - 2 : t + rnd(s, w);
		i = rnd(s, 4);
		size = i == 0 ? lim / 10 + 1 : i == 1 ? lim : 1 + rnd(s, 2 * lim);
		span = rnd(s, 3) == 0 ? 0 : rnd(s, 2) ? rnd(s, sl) : rnd(s, 3 * w);
		for (i = 0; i < size && x->n < MAXREQ; i++)
			x->r[x->n++] = (struct req){
				.t = start + i * span / size,
				.cpu = ncpu > 1 ? (int)rnd(s, ncpu) : 0,
			};
		prev = start;
		t = start + span > t ? start + span : t;
	}
	qsort(x->r, x->n, sizeof(x->r[0]), req_cmp);
}

#endif /* SL_TEST_TRACE_GEN_H */
