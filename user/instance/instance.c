// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "instance/instance.h"
#include "slicelimit.skel.h"

int sl_instance_open(struct sl_instance *in, const struct sl_instance_opts *o)
{
	struct bpf_map *map;
	int err;

	memset(in, 0, sizeof(*in));
	in->skel = slicelimit_bpf__open();
	if (!in->skel)
		return -errno;
	/* private maps: no pinning, so nothing is shared with production */
	bpf_object__for_each_map(map, in->skel->obj)
		bpf_map__set_pin_path(map, NULL);
	in->skel->rodata->sl_use_model_clock = o && o->model_clock;
	sl_size_state_maps(in->skel->obj, o ? o->clients : 0);
	if (o && o->xdp_only) {
		bpf_program__set_autoload(in->skel->progs.sl_tc, false);
		bpf_program__set_autoload(in->skel->progs.sl_check, false);
	}
	err = slicelimit_bpf__load(in->skel);
	if (err) {
		slicelimit_bpf__destroy(in->skel);
		in->skel = NULL;
		return err;
	}
	sl_maps_from_object(&in->maps, in->skel->obj);
	err = sl_newcomers_init(&in->maps);
	if (err) {
		slicelimit_bpf__destroy(in->skel);
		in->skel = NULL;
		return err;
	}
	return 0;
}

void sl_instance_close(struct sl_instance *in)
{
	slicelimit_bpf__destroy(in->skel);
	in->skel = NULL;
}

void sl_instance_set_time(struct sl_instance *in, __u64 now_ms)
{
	__u64 was = in->skel->bss->sl_model_now_ms;

	/* the cache's clock (bpf/clock.h): forward with the model clock,
	 * still at a step back, as CLOCK_MONOTONIC beside a stepped TAI
	 */
	if (now_ms > was)
		in->skel->bss->sl_model_mono_ms += now_ms - was;
	in->skel->bss->sl_model_now_ms = now_ms;
}

int sl_pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

int sl_instance_run(struct sl_instance *in, bool tc, int cpu,
		    const void *pkt, size_t len, __u32 repeat,
		    __u32 *retval, __u32 *duration_ns)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		    .data_in = pkt,
		    .data_size_in = len,
		    .repeat = repeat > 1 ? repeat : 0);
	struct bpf_program *prog = tc ? in->skel->progs.sl_tc :
					in->skel->progs.sl_xdp;
	int err;

	if (cpu >= 0) {
		err = sl_pin_to_cpu(cpu);
		if (err)
			return err;
	}
	err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);
	if (err)
		return -errno;
	if (retval)
		*retval = opts.retval;
	if (duration_ns)
		*duration_ns = opts.duration;
	return 0;
}
