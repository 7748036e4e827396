// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The macro benchmark's packet generator, run with BPF_PROG_TEST_RUN and
 * BPF_F_TEST_XDP_LIVE_FRAMES on the sending veth end: every frame gets the
 * next source address of nr_clients (a per-CPU counter), its checksums are
 * updated for the new address (the IPv4 header checksum is checked by
 * ip_rcv before netfilter's PREROUTING; the UDP one is kept right too), and
 * XDP_TX sends it out of the veth to the peer, where the receiver runs.
 *
 * IPv4 sources are base4 + i (host order); IPv6 sources put i in bytes 4..7
 * of the address, i.e. in the /64 prefix, so that every source is a client
 * of its own for slicelimit's default ipv6_prefix: 64 too.
 *
 * A frame's page is recycled with whatever the program wrote into it, so
 * the update is computed from the address the frame holds now, never from
 * the template's.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 nr_clients = 1;
/* nonzero: every frame gets a random source of 2^spoof_bits (base4 + a
 * random number below it; IPv6: in the /64 prefix), as a spoofed flood
 * has, instead of the next of nr_clients */
const volatile __u32 spoof_bits = 0;
const volatile __u32 base4 = 0x0ac80000;	/* 10.200.0.0 */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} gen_ctr SEC(".maps");

/* RFC 1624: a 16-bit one's complement checksum after 4 bytes changed */
static __always_inline __u16 csum_replace4(__u16 check, __u32 from, __u32 to)
{
	__u32 s = (__u16)~check;

	s += (__u16)~(from & 0xffff);
	s += (__u16)~(from >> 16);
	s += to & 0xffff;
	s += to >> 16;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

SEC("xdp")
int gen_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 zero = 0, idx, from, to;
	__u64 *ctr;

	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	ctr = bpf_map_lookup_elem(&gen_ctr, &zero);
	if (!ctr)
		return XDP_ABORTED;
	if (spoof_bits)
		idx = bpf_get_prandom_u32() & (__u32)((1ull << spoof_bits) - 1);
	else
		idx = (__u32)((*ctr)++ % nr_clients);

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		struct udphdr *udp = (void *)(ip + 1);

		if ((void *)(udp + 1) > data_end)
			return XDP_ABORTED;
		from = ip->saddr;
		to = bpf_htonl(base4 + idx);
		ip->saddr = to;
		ip->check = csum_replace4(ip->check, from, to);
		if (udp->check) {
			udp->check = csum_replace4(udp->check, from, to);
			if (!udp->check)
				udp->check = 0xffff;
		}
		return XDP_TX;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct udphdr *udp = (void *)(ip6 + 1);

		if ((void *)(udp + 1) > data_end)
			return XDP_ABORTED;
		from = ip6->saddr.in6_u.u6_addr32[1];
		to = bpf_htonl(idx);
		ip6->saddr.in6_u.u6_addr32[1] = to;
		udp->check = csum_replace4(udp->check, from, to);
		if (!udp->check)
			udp->check = 0xffff;
		return XDP_TX;
	}
	return XDP_ABORTED;
}
