/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A private, unpinned instance of the kernel program under the model clock,
 * driven with BPF_PROG_TEST_RUN: what tests, replay and benchmarks run
 * packets through. It never touches the pinned production instance.
 */
#ifndef SL_INSTANCE_INSTANCE_H
#define SL_INSTANCE_INSTANCE_H

#include <stdbool.h>
#include <stddef.h>
#include "instance/instance_maps.h"

struct slicelimit_bpf;

struct sl_instance {
	struct slicelimit_bpf *skel;
	struct sl_maps maps;
};

struct sl_instance_opts {
	unsigned clients;	/* client table capacity, 0: default */
	bool model_clock;	/* decide on sl_instance_set_time(), not TAI */
	bool xdp_only;		/* load sl_xdp alone: most of a load is the
				 * verifier's, paid per program */
};

int sl_instance_open(struct sl_instance *in, const struct sl_instance_opts *o);
void sl_instance_close(struct sl_instance *in);
void sl_instance_set_time(struct sl_instance *in, __u64 now_ms);

/* Run one packet through the XDP (tc == false) or TC program on `cpu`
 * (-1: wherever the thread is). *retval is the program's return code.
 * `repeat` > 1 runs it that many times; *duration_ns is the kernel's mean.
 */
int sl_instance_run(struct sl_instance *in, bool tc, int cpu,
		    const void *pkt, size_t len, __u32 repeat,
		    __u32 *retval, __u32 *duration_ns);

/* Pin the calling thread to `cpu` (BPF_PROG_TEST_RUN runs XDP on the
 * caller's CPU, so this picks whose per-CPU slots a packet uses).
 */
int sl_pin_to_cpu(int cpu);

#endif /* SL_INSTANCE_INSTANCE_H */
