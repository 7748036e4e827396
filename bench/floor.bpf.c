// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Floors for the benchmarks, measured in the same run as slicelimit: the
 * cheapest XDP program there is, the parse any classifier must do, and the
 * bare per-source counter that any per-client limiter must at least do.
 * Fed a new source every packet, floor_count is the bare counter's insert
 * path (an LRU insert, with eviction once the table is full): the floor of
 * a spoofed flood. floor_count_pass is the same counter for traffic within
 * its limit, which goes on to the stack as an accepted packet does, and
 * floor_pass the stack's share alone.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* A key no packet of the benchmarks folds to: floor_parse compares what it
 * parsed against it so that the compiler must keep every read.
 */
const volatile __u32 floor_never = 0xffffffff;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 262144);
	__type(key, __u32);
	__type(value, __u64);
} floor_sources SEC(".maps");

struct floor_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

SEC("xdp")
int floor_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

SEC("xdp")
int floor_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

/* The per-source count, its verdict for every IPv4 packet given. */
static __always_inline int floor_count_verdict(struct xdp_md *ctx, int verdict)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u64 one = 1, *count;

	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	count = bpf_map_lookup_elem(&floor_sources, &ip->saddr);
	if (count)
		(*count)++;
	else
		bpf_map_update_elem(&floor_sources, &ip->saddr, &one, BPF_ANY);
	return verdict;
}

SEC("xdp")
int floor_count(struct xdp_md *ctx)
{
	return floor_count_verdict(ctx, XDP_DROP);
}

SEC("xdp")
int floor_count_pass(struct xdp_md *ctx)
{
	return floor_count_verdict(ctx, XDP_PASS);
}

/*
 * The least a per-client classifier does before it looks anything up:
 * Ethernet, up to two VLAN tags, the IPv4 header (its length from ihl) or
 * the fixed IPv6 header, and the TCP or UDP ports; the source address, the
 * protocol and the destination port are what a rule and a client key need.
 * No extension-header walk, no fragment handling: a floor, not a parser.
 */
SEC("xdp")
int floor_parse(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *pos = eth + 1;
	__u32 key = 0;
	__be16 proto;
	__u8 l4;
	int i;

	if (pos > data_end)
		return XDP_PASS;
	proto = eth->h_proto;
#pragma unroll
	for (i = 0; i < 2; i++) {
		struct floor_vlan_hdr *vlan = pos;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(vlan + 1) > data_end)
			return XDP_PASS;
		proto = vlan->proto;
		pos = vlan + 1;
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = pos;

		if ((void *)(ip + 1) > data_end || ip->ihl < 5)
			return XDP_PASS;
		key = ip->saddr;
		l4 = ip->protocol;
		pos = (void *)ip + ip->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = pos;

		if ((void *)(ip6 + 1) > data_end)
			return XDP_PASS;
		key = ip6->saddr.in6_u.u6_addr32[0] ^ ip6->saddr.in6_u.u6_addr32[1] ^
		      ip6->saddr.in6_u.u6_addr32[2] ^ ip6->saddr.in6_u.u6_addr32[3];
		l4 = ip6->nexthdr;
		pos = ip6 + 1;
	} else {
		return XDP_PASS;
	}
	if (l4 == IPPROTO_UDP || l4 == IPPROTO_TCP) {
		/* the ports lead both headers */
		struct udphdr *ports = pos;

		if ((void *)(ports + 1) > data_end)
			return XDP_PASS;
		key ^= (__u32)ports->dest << 16 | ports->source;
	}
	key ^= l4;
	return key == floor_never ? XDP_DROP : XDP_PASS;
}
