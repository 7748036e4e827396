/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The fixture of the tests/replay/test_replay_* binaries: one private
 * model-clock instance of the real object for the group, rules described
 * and applied by a struct rule_cfg, traces replayed through it with
 * sl_replay_run() into a struct run, and the checks the groups share.
 */
#ifndef SL_TEST_REPLAY_FIXTURE_H
#define SL_TEST_REPLAY_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include "slicelimit.h"
#include "sl_algo.h"
#include "instance/instance.h"
#include "rules/rules.h"
#include "trace_gen.h"

#define SEED		0x5eed7e91a7ULL
#define NPROP		500	/* traces per property and CPU layout */
#define NRETRY		16	/* histories per algorithm and CPU layout */
#define MAXTR		300	/* requests per replayed trace */
#define MAXRUN		1400
#define MAX_PRINTS	8	/* problems printed per test */
#define ULL(x)		((unsigned long long)(x))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct fixture {
	struct sl_instance in;
	bool two_cpus;		/* CPUs 0 and 1 exist and are ours */
	unsigned next_client;
	__u64 fail_open0;	/* global fail_open when the test began */
	struct timespec t0;
	/* when set, replay() creates each client's (zero) state of this
	 * rule from userspace first, so the kernel never allocates it
	 */
	const struct sl_rule *preseed;
	unsigned preseed_tries;	/* ENOMEM retries of the preseeding */
	/* traces whose bound needed the one-per-CPU allowance */
	unsigned boundary_extra;	/* boundary bursts that needed +1 per CPU */
};

int group_setup(void **state);
int group_teardown(void **state);
__u64 fail_open_now(struct fixture *f);
int begin(void **state);
int end(void **state);
void need_cpus(struct fixture *f, int ncpu);
struct sl_addr new_client(struct fixture *f, unsigned net);
void assert_no_fail_open(struct fixture *f);
struct rule_cfg {
	unsigned algo;		/* enum sl_algorithm */
	__u64 limit;
	__u32 window_ms;
	unsigned slices;	/* 0: not given (12) */
	__u64 capacity;		/* token-bucket: 0, not given (the limit) */
	unsigned refill_milli;	/* token-bucket: refill_per_s x 1000; 0: not
				 * given (limit per window) */
	unsigned net;		/* nonzero: source 10.net.0.0/16 only */
};

int describe(const struct rule_cfg *c, char *buf, size_t len);
void expect_rule(const struct rule_cfg *c, const struct sl_rule *r);
void apply_rules(struct fixture *f, const struct rule_cfg *c,
		 unsigned nr, struct sl_rule *live);
void apply_rule(struct fixture *f, const struct rule_cfg *c,
		struct sl_rule *live);
struct dec {
	__u64 t;
	int cpu;
	bool accepted;
	bool ruled;		/* a rule decided (the callback got one) */
	int rule_id;
	struct sl_client_view v;
};

struct run {
	struct dec d[MAXRUN];
	size_t n;
	int want_id;			/* the rule that must decide; -1: any */
	struct sl_replay_client c;	/* the client's totals */
	__u64 acc[MAXRUN];		/* accept times */
	int nacc;
};

void on_decision(void *ctx, const struct sl_trace_req *r,
		 bool accepted, const struct sl_rule *rule,
		 const struct sl_client_view *v);
void preseed_client(struct fixture *f, const struct sl_rule *rule,
		    const struct sl_addr *who);
void replay(struct fixture *f, const struct req *req, int n,
	    __u64 base, const struct sl_addr *who, __u32 window_ms,
	    struct run *out);
__u64 accepts_in_window(const struct run *x, size_t k, __u64 t, __u64 w);
__u64 gcd(__u64 a, __u64 b);
__u64 random_base(__u64 *s, __u32 window_ms, __u32 slice_ms);
unsigned check_sliding_decisions(const struct run *x, __u64 L, __u32 W,
				 const char *what, unsigned *printed);

#endif /* SL_TEST_REPLAY_FIXTURE_H */
