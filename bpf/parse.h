/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Packet parsing: Ethernet, up to two VLAN tags, IPv4 (options), IPv6
 * (extension headers), TCP, UDP, ICMP/ICMPv6. A cursor walks the packet and
 * every header is reached through sl_pull(), the one place that checks a
 * read against data_end. Whatever cannot be parsed gets a result code, and
 * the caller gives it a defined verdict (pass) and a counter.
 */
#ifndef SL_PARSE_H
#define SL_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "slicelimit.h"

#define SL_MAX_VLANS		2
/* IPv6 extension headers skipped before giving up (malformed) */
#define SL_MAX_IPV6_EXT		8

#define SL_IP_MF		0x2000	/* host byte order of frag_off */
#define SL_IP_OFFSET		0x1fff

enum sl_parse_result {
	SL_PARSE_OK = 0,
	SL_PARSE_NON_IP,
	SL_PARSE_MALFORMED,	/* truncated or invalid header */
	SL_PARSE_FRAGMENT,
};

/* What classification and counting need of a packet. */
struct sl_packet {
	struct sl_addr src;	/* network byte order, IPv4-mapped for v4 */
	struct sl_addr dst;
	__u32 slot;		/* SL_SLOT_* + destination port (host order) */
	__u16 dport;		/* network byte order; 0 without ports */
	__u8 syn;		/* TCP SYN without ACK */
	__u8 pad;
};

struct sl_cursor {
	void *pos;
	void *end;
};

struct sl_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

struct sl_ipv6_ext_hdr {
	__u8 nexthdr;
	__u8 hdrlen;
};

/* Return a pointer to the next `len` bytes and advance past them, or NULL if
 * the packet ends first. Every packet read goes through here.
 */
static __always_inline void *sl_pull(struct sl_cursor *c, __u32 len)
{
	void *start = c->pos;

	if (start + len > c->end)
		return NULL;
	c->pos = start + len;
	return start;
}

static __always_inline void sl_addr_from_ipv4(struct sl_addr *a, __be32 ip)
{
	__builtin_memset(a->byte, 0, 10);
	a->byte[10] = 0xff;
	a->byte[11] = 0xff;
	__builtin_memcpy(&a->byte[12], &ip, 4);
}

/* Returns the ethertype (network byte order) after any VLAN tags. */
static __always_inline int sl_parse_eth(struct sl_cursor *c, __be16 *proto)
{
	struct ethhdr *eth = sl_pull(c, sizeof(*eth));
	int i;

	if (!eth)
		return SL_PARSE_MALFORMED;
	*proto = eth->h_proto;
#pragma unroll
	for (i = 0; i < SL_MAX_VLANS; i++) {
		struct sl_vlan_hdr *vlan;

		if (*proto != bpf_htons(ETH_P_8021Q) &&
		    *proto != bpf_htons(ETH_P_8021AD))
			break;
		vlan = sl_pull(c, sizeof(*vlan));
		if (!vlan)
			return SL_PARSE_MALFORMED;
		*proto = vlan->proto;
	}
	return SL_PARSE_OK;
}

static __always_inline int sl_parse_ipv4(struct sl_cursor *c,
					 struct sl_packet *pkt, __u8 *l4)
{
	struct iphdr *ip = sl_pull(c, sizeof(*ip));
	__u32 hdr_len;

	if (!ip)
		return SL_PARSE_MALFORMED;
	if (ip->version != 4 || ip->ihl < 5)
		return SL_PARSE_MALFORMED;
	/* options: ihl counts 32-bit words, at most 15 of them */
	hdr_len = ip->ihl * 4;
	if (!sl_pull(c, hdr_len - sizeof(*ip)))
		return SL_PARSE_MALFORMED;
	sl_addr_from_ipv4(&pkt->src, ip->saddr);
	sl_addr_from_ipv4(&pkt->dst, ip->daddr);
	if (ip->frag_off & bpf_htons(SL_IP_MF | SL_IP_OFFSET))
		return SL_PARSE_FRAGMENT;
	*l4 = ip->protocol;
	return SL_PARSE_OK;
}

static __always_inline int sl_parse_ipv6(struct sl_cursor *c,
					 struct sl_packet *pkt, __u8 *l4)
{
	struct ipv6hdr *ip6 = sl_pull(c, sizeof(*ip6));
	__u8 next;
	int i;

	if (!ip6)
		return SL_PARSE_MALFORMED;
	if (ip6->version != 6)
		return SL_PARSE_MALFORMED;
	__builtin_memcpy(pkt->src.byte, &ip6->saddr, 16);
	__builtin_memcpy(pkt->dst.byte, &ip6->daddr, 16);
	next = ip6->nexthdr;

	/* Bounded walk of the extension header chain: the verifier needs the
	 * bound, and a chain of more than SL_MAX_IPV6_EXT headers is treated
	 * as malformed. The last round only looks for the upper layer.
	 */
#pragma unroll
	for (i = 0; i <= SL_MAX_IPV6_EXT; i++) {
		struct sl_ipv6_ext_hdr *ext;
		__u32 len;

		switch (next) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
		case IPPROTO_MH:
			if (i == SL_MAX_IPV6_EXT)
				return SL_PARSE_MALFORMED;
			ext = sl_pull(c, sizeof(*ext));
			if (!ext)
				return SL_PARSE_MALFORMED;
			len = ((__u32)ext->hdrlen + 1) * 8;
			break;
		case IPPROTO_AH:
			if (i == SL_MAX_IPV6_EXT)
				return SL_PARSE_MALFORMED;
			ext = sl_pull(c, sizeof(*ext));
			if (!ext)
				return SL_PARSE_MALFORMED;
			len = ((__u32)ext->hdrlen + 2) * 4;
			break;
		case IPPROTO_FRAGMENT:
			return SL_PARSE_FRAGMENT;
		default:
			*l4 = next;
			return SL_PARSE_OK;
		}
		next = ext->nexthdr;
		if (!sl_pull(c, len - sizeof(*ext)))
			return SL_PARSE_MALFORMED;
	}
	return SL_PARSE_MALFORMED;
}

static __always_inline int sl_parse_l4(struct sl_cursor *c,
				       struct sl_packet *pkt, __u8 l4)
{
	struct tcphdr *tcp;
	struct udphdr *udp;

	switch (l4) {
	case IPPROTO_TCP:
		tcp = sl_pull(c, sizeof(*tcp));
		if (!tcp || tcp->doff < 5)
			return SL_PARSE_MALFORMED;
		pkt->dport = tcp->dest;
		pkt->slot = SL_SLOT_TCP + bpf_ntohs(tcp->dest);
		pkt->syn = tcp->syn && !tcp->ack;
		return SL_PARSE_OK;
	case IPPROTO_UDP:
		udp = sl_pull(c, sizeof(*udp));
		if (!udp)
			return SL_PARSE_MALFORMED;
		pkt->dport = udp->dest;
		pkt->slot = SL_SLOT_UDP + bpf_ntohs(udp->dest);
		return SL_PARSE_OK;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		/* type and code: enough to call it ICMP */
		if (!sl_pull(c, 4))
			return SL_PARSE_MALFORMED;
		pkt->slot = SL_SLOT_ICMP;
		return SL_PARSE_OK;
	default:
		pkt->slot = SL_SLOT_OTHER;
		return SL_PARSE_OK;
	}
}

static __always_inline int sl_parse(void *data, void *data_end,
				    struct sl_packet *pkt)
{
	struct sl_cursor c = { .pos = data, .end = data_end };
	__be16 proto;
	__u8 l4 = 0;
	int ret;

	ret = sl_parse_eth(&c, &proto);
	if (ret)
		return ret;
	if (proto == bpf_htons(ETH_P_IP))
		ret = sl_parse_ipv4(&c, pkt, &l4);
	else if (proto == bpf_htons(ETH_P_IPV6))
		ret = sl_parse_ipv6(&c, pkt, &l4);
	else
		return SL_PARSE_NON_IP;
	if (ret)
		return ret;
	return sl_parse_l4(&c, pkt, l4);
}

#endif /* SL_PARSE_H */
