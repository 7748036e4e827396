// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ns/packet of slicelimit's data path with BPF_PROG_TEST_RUN, side by side
 * with two floors measured in the same run: XDP_DROP alone, and a bare
 * per-source counter in an LRU per-CPU hash. Each case is RUNS runs of
 * REPEAT packets on CPU 0; we print the median, min and max of the kernel's
 * per-packet mean, and the median's ratio to each floor.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common.h"
#include "instance.h"
#include "packet.h"
#include "rules.h"
#include "floor.skel.h"
#include "slicelimit.skel.h"

#define RUNS	7
#define REPEAT	1000000

struct result {
	const char *name;
	double median, min, max;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int measure(int prog_fd, const void *pkt, size_t len,
		   struct result *r, __u32 expect)
{
	double ns[RUNS];
	int i;

	for (i = 0; i < RUNS; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt,
			    .data_size_in = len, .repeat = REPEAT);

		if (bpf_prog_test_run_opts(prog_fd, &opts))
			return -errno;
		if (opts.retval != expect) {
			fprintf(stderr, "%s: verdict %u, expected %u\n", r->name,
				opts.retval, expect);
			return -EINVAL;
		}
		ns[i] = opts.duration;
	}
	qsort(ns, RUNS, sizeof(ns[0]), cmp_double);
	r->median = ns[RUNS / 2];
	r->min = ns[0];
	r->max = ns[RUNS - 1];
	return 0;
}

static int apply_yaml(struct sl_instance *in, const char *yaml)
{
	struct sl_ruleset rs;
	int err;

	err = sl_rules_load_buffer("bench", yaml, strlen(yaml), &rs);
	if (!err)
		err = sl_rules_apply(&in->maps, &rs);
	sl_rules_free(&rs);
	return err;
}

/* The kernel's own account of a map's memory (fdinfo "memlock"). */
static unsigned long long map_memlock(int fd)
{
	unsigned long long v = 0;
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void addr(const char *s, struct sl_addr *a)
{
	if (sl_parse_addr(s, a))
		abort();
}

/* Send one packet from each of n sources (10.x.y.z) so the table holds n. */
static int fill_clients(struct sl_instance *in, unsigned n, __u16 port)
{
	struct sl_addr src, dst;
	uint8_t pkt[SL_PACKET_MAX];
	unsigned i;
	size_t len;

	addr("192.0.2.1", &dst);
	addr("10.0.0.0", &src);
	for (i = 0; i < n; i++) {
		__u32 v = htonl(0x0a000000 + 1 + i);

		memcpy(&src.byte[12], &v, 4);
		len = sl_packet_udp(pkt, &src, &dst, 1234, port, 18);
		if (sl_instance_run(in, false, -1, pkt, len, 1, NULL, NULL))
			return -1;
	}
	return 0;
}

int main(void)
{
	struct sl_instance_opts io = { .model_clock = true };
	struct result res[16];
	struct sl_instance in;
	struct floor_bpf *fl;
	struct sl_addr src, src6, dst, dst6;
	uint8_t pkt[SL_PACKET_MAX], pkt6[SL_PACKET_MAX], other[SL_PACKET_MAX];
	size_t len, len6, olen;
	int n = 0, xdp, i, err;
	char *yaml;

	if (sl_pin_to_cpu(0))
		return 1;
	fl = floor_bpf__open_and_load();
	if (!fl || sl_instance_open(&in, &io)) {
		fprintf(stderr, "cannot load the programs (root? bpffs?)\n");
		return 1;
	}
	sl_instance_set_time(&in, 1000000);
	xdp = bpf_program__fd(in.skel->progs.sl_xdp);
	addr("198.51.100.7", &src);
	addr("192.0.2.1", &dst);
	addr("2001:db8::7", &src6);
	addr("2001:db8:ffff::1", &dst6);
	len = sl_packet_udp(pkt, &src, &dst, 1234, 5000, 18);
	len6 = sl_packet_udp(pkt6, &src6, &dst6, 1234, 5000, 18);
	olen = sl_packet_udp(other, &src, &dst, 1234, 9999, 18);

#define CASE(label, fd, p, l, verdict) do {				\
	res[n].name = label;						\
	err = measure(fd, p, l, &res[n], verdict);			\
	if (err) goto fail;						\
	n++;								\
} while (0)

	CASE("floor: XDP_DROP only", bpf_program__fd(fl->progs.floor_drop),
	     pkt, len, XDP_DROP);
	CASE("floor: per-source LRU per-CPU count", bpf_program__fd(fl->progs.floor_count),
	     pkt, len, XDP_DROP);

	if (apply_yaml(&in,
		"rules:\n"
		"  - { name: flood, protocol: udp, ports: 5000, limit: 10, window: 60s }\n"
		"  - { name: open, protocol: udp, ports: 6000, limit: 4000000000, window: 60s }\n"
		"  - { name: watch, protocol: udp, ports: 7000, limit: 10, window: 60s, action: shadow }\n"))
		goto fail;
	CASE("slicelimit: no rule matched", xdp, other, olen, XDP_PASS);
	len = sl_packet_udp(pkt, &src, &dst, 1234, 6000, 18);
	CASE("slicelimit: under limit (accept)", xdp, pkt, len, XDP_PASS);
	len = sl_packet_udp(pkt, &src, &dst, 1234, 5000, 18);
	for (i = 0; i < 11; i++)
		sl_instance_run(&in, false, -1, pkt, len, 1, NULL, NULL);
	CASE("slicelimit: over limit (drop)", xdp, pkt, len, XDP_DROP);
	for (i = 0; i < 11; i++)
		sl_instance_run(&in, false, -1, pkt6, len6, 1, NULL, NULL);
	CASE("slicelimit: over limit, IPv6", xdp, pkt6, len6, XDP_DROP);
	len = sl_packet_udp(pkt, &src, &dst, 1234, 7000, 18);
	for (i = 0; i < 11; i++)
		sl_instance_run(&in, false, -1, pkt, len, 1, NULL, NULL);
	CASE("slicelimit: over limit, shadow", xdp, pkt, len, XDP_PASS);

	if (fill_clients(&in, 100000, 5000))
		goto fail;
	len = sl_packet_udp(pkt, &src, &dst, 1234, 5000, 18);
	CASE("slicelimit: over limit, 100,000 clients", xdp, pkt, len, XDP_DROP);

	/* 1,000 rules, the flood rule last by priority */
	yaml = malloc(1000 * 96 + 64);
	if (!yaml)
		goto fail;
	strcpy(yaml, "rules:\n");
	for (i = 0; i < 999; i++)
		sprintf(yaml + strlen(yaml),
			"  - { name: r%d, protocol: udp, ports: %d, limit: 10 }\n",
			i, 10000 + i);
	strcat(yaml, "  - { name: flood, protocol: udp, ports: 5000, limit: 10, window: 60s }\n");
	err = apply_yaml(&in, yaml);
	free(yaml);
	if (err)
		goto fail;
	for (i = 0; i < 11; i++)
		sl_instance_run(&in, false, -1, pkt, len, 1, NULL, NULL);
	CASE("slicelimit: over limit, 1,000 rules", xdp, pkt, len, XDP_DROP);

	printf("BPF_PROG_TEST_RUN, 64-byte-class UDP packets, CPU 0, %d runs x %d packets\n\n",
	       RUNS, REPEAT);
	printf("%-42s %8s %8s %8s %10s %10s\n", "case", "median", "min", "max",
	       "x XDP_DROP", "x counter");
	for (i = 0; i < n; i++)
		printf("%-42s %6.1fns %6.1fns %6.1fns %10.2f %10.2f\n", res[i].name,
		       res[i].median, res[i].min, res[i].max,
		       res[i].median / res[0].median, res[i].median / res[1].median);

	{
		struct bpf_map_info info = {};
		__u32 ilen = sizeof(info);
		unsigned long long mem = map_memlock(in.maps.clients);

		bpf_obj_get_info_by_fd(in.maps.clients, &info, &ilen);
		printf("\nclient table: %u entries, %d CPUs, value %u bytes per CPU, "
		       "key %u bytes: %llu bytes in all (fdinfo memlock), %.0f bytes per client, "
		       "%.0f per client per CPU\n",
		       info.max_entries, in.maps.nr_cpus, info.value_size,
		       info.key_size, mem, (double)mem / info.max_entries,
		       (double)mem / info.max_entries / in.maps.nr_cpus);
		printf("design study: 12 slices x 48 bytes = 576 bytes per client\n");
	}
	sl_instance_close(&in);
	floor_bpf__destroy(fl);
	return 0;
fail:
	fprintf(stderr, "benchmark failed\n");
	return 1;
}
