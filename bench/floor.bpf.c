// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Floors for the benchmarks, measured in the same run as slicelimit: the
 * cheapest XDP program there is, and the bare per-source counter that any
 * per-client limiter must at least do. Fed a new source every packet,
 * floor_count is the bare counter's insert path (an LRU insert, with
 * eviction once the table is full): the floor of a spoofed flood.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 262144);
	__type(key, __u32);
	__type(value, __u64);
} floor_sources SEC(".maps");

SEC("xdp")
int floor_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

SEC("xdp")
int floor_count(struct xdp_md *ctx)
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
	return XDP_DROP;
}
