/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The fixture of the tests/bpf/test_bpf_* binaries (and of
 * tests/check/test_bpf_check_cost): a private, unpinned
 * instance of the real object per test under the model clock, a packet
 * run through its XDP or TC program, and readers of the counters and
 * rules the program and the loader wrote.
 */
#ifndef SL_TEST_BPF_FIXTURE_H
#define SL_TEST_BPF_FIXTURE_H

#include <stdbool.h>
#include "slicelimit.h"
#include "instance/instance.h"
#include "rules/rules.h"
#include "instance_fixture.h"
#include "pkt_builder.h"

#define T0		1000000000ULL	/* model ms; far from 0 (and from u32 wrap) */

#define UDP IPPROTO_UDP
#define TCP IPPROTO_TCP
#define ICMP IPPROTO_ICMP

struct fixture {
	struct sl_instance in;
};

enum verdict { PASS, DROP };

int setup(void **state);
int teardown(void **state);
int group_setup(void **state);
const char *verdict_name(enum verdict v);
bool runnable(bool tc, const struct pkt *p, unsigned len);
enum verdict run_len(struct fixture *f, bool tc, int cpu,
		     const struct pkt *p, unsigned len);
enum verdict run(struct fixture *f, const struct pkt *p);
void set_time(struct fixture *f, __u64 ms);
void apply(struct fixture *f, const char *yaml);
struct sl_global_stats global_stats(struct fixture *f);
struct sl_rule_stats stats_of_id(struct fixture *f, __u32 id);
struct sl_rule live_rule(struct fixture *f, const char *name);
__u32 id_of(struct fixture *f, const char *name);
struct sl_rule_stats stats_of(struct fixture *f, const char *name);
unsigned clients_of(struct fixture *f, __u32 id);
const char *matched(struct fixture *f, bool tc, const struct pkt *p);
void send_steady(struct fixture *f, const struct pkt *p, __u64 start,
		 unsigned gap, unsigned window, unsigned windows,
		 int ncpus, unsigned *acc);

#endif /* SL_TEST_BPF_FIXTURE_H */
