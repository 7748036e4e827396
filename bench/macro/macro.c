// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sl-macro: the driver of bench/macro/bench_macro.sh.
 *
 *   sl-macro gen --dev DEV --dst-mac MAC --src ADDR --dst ADDR
 *                [--clients N] [--cpus 0,1] (--seconds S | --packets P)
 *                [--base4 A.B.C.D] [--hold-dev DEV2] [--spoof BITS]
 *      Sends UDP frames (port 9) out of DEV (in the current network
 *      namespace) with BPF_PROG_TEST_RUN + BPF_F_TEST_XDP_LIVE_FRAMES: one
 *      thread pinned to each CPU of --cpus runs gen.bpf.c's gen_tx over
 *      large batches (ctx_in.ingress_ifindex = DEV, so XDP_TX leaves by
 *      DEV and lands on its veth peer). The source address walks over
 *      --clients addresses (from --base4 for IPv4; the /64 prefix for IPv6,
 *      from --src); with --spoof, every frame gets a random one of
 *      2^BITS addresses instead (a spoofed flood: every packet a new
 *      source, as good as). Bounded by --seconds or by --packets (in all).
 *      Prints {"sent": N, "elapsed_ns": N, "threads": N, "calls": N} on
 *      stdout.
 *
 *      Every BPF_PROG_TEST_RUN of an XDP program puts the program into the
 *      kernel's XDP dispatcher and takes it out again when it ends, and
 *      each change waits for an RCU grace period (bpf_prog_change_xdp ->
 *      bpf_dispatcher_change_prog -> synchronize_rcu): two grace periods
 *      per call whatever the batch, long on a small busy machine.
 *      --hold-dev attaches gen_tx (generic XDP) to DEV2, a device no
 *      packet reaches (a dummy, or one end of a veth pair of its own), for
 *      the whole run: the dispatcher then holds the program (it counts
 *      references) and the calls change nothing.
 *
 *   sl-macro floor DEV drop|count|pass|count-pass [--max-entries N]
 *      Loads bench/floor.bpf.c (floor_sources resized to N, default
 *      262,144) and attaches floor_drop, floor_count, floor_pass or
 *      floor_count_pass to DEV in native XDP mode (netlink, so it stays
 *      after exit). Detach with `ip link set dev DEV xdpdrv off`.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "gen.skel.h"
#include "floor.skel.h"

#define MAX_THREADS	64
#define PKT_PAYLOAD	18
#define UDP_PORT	9

static uint8_t pkt[128];
static size_t pkt_len;
static int prog_fd, ifindex;
static uint64_t quota;		/* packets per thread, 0 = by time */
static uint64_t end_ns;
static uint64_t calls;

struct worker {
	pthread_t tid;
	int cpu;
	uint64_t sent;
	int err;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint16_t csum16(const void *p, size_t len, uint32_t sum)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

static int parse_mac(const char *s, uint8_t *mac)
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1],
		      &mac[2], &mac[3], &mac[4], &mac[5]) == 6 ? 0 : -1;
}

/* Ethernet + IPv4/IPv6 + UDP to port 9, checksums right. */
static int build_packet(const char *dst_mac, const char *src, const char *dst)
{
	struct ethhdr eth = { .h_source = { 0x02, 0, 0, 0, 0, 1 } };
	struct udphdr udp = { .source = htons(1234), .dest = htons(UDP_PORT),
			      .len = htons(sizeof(udp) + PKT_PAYLOAD) };
	uint8_t payload[PKT_PAYLOAD] = { 's', 'l', 'm' };
	size_t off = sizeof(eth);
	uint32_t ph;

	if (parse_mac(dst_mac, eth.h_dest))
		return -1;
	if (strchr(src, ':')) {
		struct ipv6hdr ip6 = { .version = 6, .hop_limit = 64,
				       .nexthdr = IPPROTO_UDP,
				       .payload_len = udp.len };
		uint8_t phdr[40];

		if (inet_pton(AF_INET6, src, &ip6.saddr) != 1 ||
		    inet_pton(AF_INET6, dst, &ip6.daddr) != 1)
			return -1;
		eth.h_proto = htons(ETH_P_IPV6);
		memcpy(phdr, &ip6.saddr, 32);
		ph = 0;
		{
			uint8_t tmp[40 + sizeof(udp) + PKT_PAYLOAD];
			uint32_t l = htonl(sizeof(udp) + PKT_PAYLOAD);

			memcpy(tmp, phdr, 32);
			memcpy(tmp + 32, &l, 4);
			memset(tmp + 36, 0, 3);
			tmp[39] = IPPROTO_UDP;
			memcpy(tmp + 40, &udp, sizeof(udp));
			memcpy(tmp + 40 + sizeof(udp), payload, PKT_PAYLOAD);
			udp.check = csum16(tmp, sizeof(tmp), ph);
		}
		memcpy(pkt + off, &ip6, sizeof(ip6));
		off += sizeof(ip6);
	} else {
		struct iphdr ip = { .version = 4, .ihl = 5, .ttl = 64,
				    .protocol = IPPROTO_UDP,
				    .tot_len = htons(sizeof(ip) + sizeof(udp) + PKT_PAYLOAD) };
		uint8_t tmp[12 + sizeof(udp) + PKT_PAYLOAD];
		uint16_t l = udp.len;

		if (inet_pton(AF_INET, src, &ip.saddr) != 1 ||
		    inet_pton(AF_INET, dst, &ip.daddr) != 1)
			return -1;
		eth.h_proto = htons(ETH_P_IP);
		ip.check = csum16(&ip, sizeof(ip), 0);
		memcpy(tmp, &ip.saddr, 8);
		tmp[8] = 0;
		tmp[9] = IPPROTO_UDP;
		memcpy(tmp + 10, &l, 2);
		memcpy(tmp + 12, &udp, sizeof(udp));
		memcpy(tmp + 12 + sizeof(udp), payload, PKT_PAYLOAD);
		udp.check = csum16(tmp, sizeof(tmp), 0);
		memcpy(pkt + off, &ip, sizeof(ip));
		off += sizeof(ip);
	}
	memcpy(pkt, &eth, sizeof(eth));
	memcpy(pkt + off, &udp, sizeof(udp));
	off += sizeof(udp);
	memcpy(pkt + off, payload, PKT_PAYLOAD);
	pkt_len = off + PKT_PAYLOAD;
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct xdp_md ctx = { .data = 0, .data_end = pkt_len,
			      .ingress_ifindex = ifindex };
	uint8_t buf[128];
	uint32_t repeat = 16384;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		w->err = errno;
		return NULL;
	}
	memcpy(buf, pkt, pkt_len);
	for (;;) {
		uint64_t t0, dt;
		uint32_t n = repeat;

		if (quota) {
			if (w->sent >= quota)
				break;
			n = quota - w->sent > (1u << 24) ? (1u << 24) : quota - w->sent;
		} else if (now_ns() >= end_ns) {
			break;
		}
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = buf,
			    .data_size_in = pkt_len, .ctx_in = &ctx,
			    .ctx_size_in = sizeof(ctx),
			    .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
			    .repeat = n, .batch_size = 64);
		t0 = now_ns();
		if (bpf_prog_test_run_opts(prog_fd, &opts)) {
			w->err = errno;
			return NULL;
		}
		dt = now_ns() - t0;
		w->sent += n;
		__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
		/* aim at ~50 ms a call: the time bound is kept to a few
		 * percent (elapsed_ns is measured anyway), and what a call
		 * costs whatever its size (the dispatcher's mutex, shared
		 * with every other test run on the host) stays small beside
		 * it; never below 16384 frames, so a slow call cannot shrink
		 * the batch until the fixed cost is all there is
		 */
		if (!quota && dt) {
			uint64_t want = (uint64_t)n * 50000000ull / dt;

			repeat = want < 16384 ? 16384 : want > (1u << 24) ? (1u << 24) : want;
		}
	}
	return NULL;
}

/* The nr workers sending packets (shared between them) or for seconds;
 * the total on stdout as JSON.
 */
static int gen_run(struct worker *w, int nr, uint64_t packets,
		   double seconds)
{
	uint64_t t0, t1, sent = 0;
	int i;

	quota = packets ? (packets + nr - 1) / nr : 0;
	t0 = now_ns();
	end_ns = t0 + (uint64_t)(seconds * 1e9);
	for (i = 0; i < nr; i++)
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]))
			return -EAGAIN;
	for (i = 0; i < nr; i++)
		pthread_join(w[i].tid, NULL);
	t1 = now_ns();
	for (i = 0; i < nr; i++) {
		if (w[i].err) {
			fprintf(stderr, "gen: cpu %d: %s\n", w[i].cpu, strerror(w[i].err));
			return -w[i].err;
		}
		sent += w[i].sent;
	}
	printf("{\"sent\": %llu, \"elapsed_ns\": %llu, \"threads\": %d, \"calls\": %llu}\n",
	       (unsigned long long)sent, (unsigned long long)(t1 - t0), nr,
	       (unsigned long long)calls);
	return 0;
}

static int cmd_gen(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dev", 1, 0, 'd' }, { "dst-mac", 1, 0, 'm' },
		{ "src", 1, 0, 's' }, { "dst", 1, 0, 't' },
		{ "clients", 1, 0, 'n' }, { "cpus", 1, 0, 'c' },
		{ "seconds", 1, 0, 'S' }, { "packets", 1, 0, 'P' },
		{ "base4", 1, 0, 'b' }, { "hold-dev", 1, 0, 'H' },
		{ "spoof", 1, 0, 'R' }, { 0 }
	};
	const char *dev = NULL, *mac = NULL, *src = NULL, *dst = NULL;
	const char *cpus = "0", *base4 = "10.200.0.0", *hold = NULL;
	struct worker w[MAX_THREADS];
	double seconds = 0;
	uint64_t packets = 0;
	unsigned long clients = 1, spoof = 0;
	struct gen_bpf *skel;
	struct in_addr b4;
	int o, nr = 0, hold_idx = 0, rc;
	char *tok, *save, *list;

	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 'd': dev = optarg; break;
		case 'm': mac = optarg; break;
		case 's': src = optarg; break;
		case 't': dst = optarg; break;
		case 'n': clients = strtoul(optarg, NULL, 0); break;
		case 'c': cpus = optarg; break;
		case 'S': seconds = atof(optarg); break;
		case 'P': packets = strtoull(optarg, NULL, 0); break;
		case 'b': base4 = optarg; break;
		case 'H': hold = optarg; break;
		case 'R': spoof = strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (!dev || !mac || !src || !dst || !clients || (!seconds == !packets) ||
	    spoof > 32 || inet_pton(AF_INET, base4, &b4) != 1) {
		fprintf(stderr, "gen: need --dev --dst-mac --src --dst, --clients >= 1, "
			"--spoof <= 32, and one of --seconds/--packets\n");
		return 2;
	}
	ifindex = if_nametoindex(dev);
	if (!ifindex) {
		fprintf(stderr, "gen: no device %s\n", dev);
		return 1;
	}
	if (build_packet(mac, src, dst)) {
		fprintf(stderr, "gen: bad address or MAC\n");
		return 2;
	}
	skel = gen_bpf__open();
	if (!skel)
		return 1;
	skel->rodata->nr_clients = clients;
	skel->rodata->base4 = ntohl(b4.s_addr);
	skel->rodata->spoof_bits = spoof;
	if (gen_bpf__load(skel)) {
		fprintf(stderr, "gen: cannot load gen_tx\n");
		return 1;
	}
	prog_fd = bpf_program__fd(skel->progs.gen_tx);
	list = strdup(cpus);
	for (tok = strtok_r(list, ",", &save); tok && nr < MAX_THREADS;
	     tok = strtok_r(NULL, ",", &save))
		w[nr++] = (struct worker){ .cpu = atoi(tok) };
	free(list);
	if (!nr)
		return 2;
	if (hold) {
		hold_idx = if_nametoindex(hold);
		if (!hold_idx || bpf_xdp_attach(hold_idx, prog_fd, XDP_FLAGS_SKB_MODE, NULL)) {
			fprintf(stderr, "gen: cannot hold gen_tx on %s\n", hold);
			return 1;
		}
	}
	rc = gen_run(w, nr, packets, seconds) ? 1 : 0;
	if (hold_idx)
		bpf_xdp_detach(hold_idx, XDP_FLAGS_SKB_MODE, NULL);
	gen_bpf__destroy(skel);
	return rc;
}

static int cmd_floor(int argc, char **argv)
{
	unsigned long max = 262144;
	struct floor_bpf *fl;
	struct bpf_program *p;
	int idx, err;

	if (argc < 3 || (strcmp(argv[2], "drop") && strcmp(argv[2], "count") &&
			 strcmp(argv[2], "pass") && strcmp(argv[2], "count-pass")))
		return 2;
	if (argc == 5 && !strcmp(argv[3], "--max-entries"))
		max = strtoul(argv[4], NULL, 0);
	idx = if_nametoindex(argv[1]);
	if (!idx) {
		fprintf(stderr, "floor: no device %s\n", argv[1]);
		return 1;
	}
	fl = floor_bpf__open();
	if (!fl || bpf_map__set_max_entries(fl->maps.floor_sources, max) ||
	    floor_bpf__load(fl)) {
		fprintf(stderr, "floor: cannot load\n");
		return 1;
	}
	if (!strcmp(argv[2], "drop"))
		p = fl->progs.floor_drop;
	else if (!strcmp(argv[2], "pass"))
		p = fl->progs.floor_pass;
	else if (!strcmp(argv[2], "count-pass"))
		p = fl->progs.floor_count_pass;
	else
		p = fl->progs.floor_count;
	err = bpf_xdp_attach(idx, bpf_program__fd(p), XDP_FLAGS_DRV_MODE, NULL);
	if (err) {
		fprintf(stderr, "floor: attach %s: %s\n", argv[1], strerror(-err));
		return 1;
	}
	floor_bpf__destroy(fl);	/* the attachment keeps the program */
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "gen"))
		return cmd_gen(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "floor"))
		return cmd_floor(argc - 1, argv + 1);
	fprintf(stderr, "usage: sl-macro gen ... | sl-macro floor DEV drop|count|pass|count-pass [--max-entries N]\n");
	return 2;
}
