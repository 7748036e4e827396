/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Packet parsing: Ethernet, up to two VLAN tags (a deeper stack has only
 * its addresses read), IPv4 (options, fragments),
 * IPv6 (the extension header chain, fragment header included), TCP, UDP,
 * ICMP/ICMPv6. A cursor walks the packet and every header is reached
 * through sl_pull(), the one place that checks a read against data_end.
 * Whatever cannot be parsed gets a result code, and the caller
 * (datapath.h) gives it a defined verdict and a counter.
 */
#ifndef SL_BPF_PARSE_H
#define SL_BPF_PARSE_H

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

/* VLAN tags walked, at most, to reach the addresses of a frame with more
 * than SL_MAX_VLANS: such a frame gets the deep-VLAN verdict
 * (datapath.h). Past this many, its addresses are out of reach.
 */
#define SL_MAX_VLANS_DEEP	8

/* IPv6 extension headers walked before the chain counts as too long.
 * Linux itself sets no count: each header's handler hands the next one
 * back to ip6_protocol_deliver_rcu()'s resubmit loop, so what a host
 * accepts is whatever chain its frame holds, at least 8 bytes a header.
 * The bound is above what a standard Ethernet frame can hold
 * (slicelimit-rules(5)); a longer chain gets the long-chain verdict
 * (datapath.h).
 */
#define SL_MAX_IPV6_EXT		256

/* The extension chain's bytes, at most: the walk's offset is masked to
 * this for the verifier (a packet offset it can bound stays below 64 KiB
 * with the headers before the chain added); a longer chain is too long.
 */
#define SL_MAX_PKT_OFF		0x3fff

#define SL_IP_MF		0x2000	/* host byte order of frag_off */
#define SL_IP_OFFSET		0x1fff
#define SL_IP6_MF		0x0001	/* host byte order of frag_off */
#define SL_IP6_OFFSET		0xfff8

enum sl_parse_result {
	SL_PARSE_OK = 0,
	SL_PARSE_NON_IP,
	SL_PARSE_MALFORMED,	/* invalid header */
	SL_PARSE_TRUNCATED,	/* a header runs past the data the program sees */
	SL_PARSE_FRAGMENT,	/* a fragment without its ports: a later
				 * one, or a first too short for them */
	SL_PARSE_LONG_CHAIN,	/* more than SL_MAX_IPV6_EXT headers */
	SL_PARSE_CONTROL,	/* ICMP error or link control: never limited */
	SL_PARSE_MAPPED_V4,	/* IPv6 from an IPv4-mapped source: the
				 * stack drops it, so never an IPv4 client */
	SL_PARSE_DEEP_VLAN,	/* more VLAN tags than SL_MAX_VLANS: only
				 * the addresses read (none past
				 * SL_MAX_VLANS_DEEP tags) */
};

enum sl_frag_kind {
	SL_FRAG_NONE = 0,
	SL_FRAG_FIRST = 1,	/* offset 0, more fragments: holds the ports */
	SL_FRAG_LATER = 2,	/* offset > 0 */
};

/* What classification and counting need of a packet. */
struct sl_packet {
	struct sl_addr src;	/* network byte order, IPv4-mapped for v4 */
	struct sl_addr dst;
	__u32 slot;		/* SL_SLOT_* + destination port (host order) */
	__u16 dport;		/* network byte order; 0 without ports */
	__u8 syn;		/* TCP SYN without ACK */
	__u8 frag;		/* enum sl_frag_kind */
	__u32 frag_id;		/* IPv4 or IPv6 identification, network order */
	__u8 frag_proto;	/* the datagram's protocol (IPv6: the fragment
				 * header's next header), the same in every
				 * fragment */
	__u8 family;		/* 4 or 6 */
	__u8 counted;		/* a later fragment of a datagram its first
				 * fragment counted: only bytes are charged */
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

struct sl_ipv6_frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;	/* offset in 8-byte units << 3 | M */
	__be32 id;
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

/* ::ffff:0:0/96, the IPv4-mapped prefix (RFC 4291): no such source is on
 * the wire (RFC 6890), and Linux's IPv6 input drops it.
 */
static __always_inline int sl_addr_is_mapped_v4(const struct in6_addr *a)
{
	return a->in6_u.u6_addr32[0] == 0 && a->in6_u.u6_addr32[1] == 0 &&
	       a->in6_u.u6_addr32[2] == bpf_htonl(0xffff);
}

/* Returns the ethertype (network byte order) after up to SL_MAX_VLANS
 * VLAN tags, or SL_PARSE_DEEP_VLAN if more follow.
 */
static __always_inline int sl_parse_eth(struct sl_cursor *c, __be16 *proto)
{
	struct ethhdr *eth = sl_pull(c, sizeof(*eth));
	int i;

	if (!eth)
		return SL_PARSE_TRUNCATED;
	*proto = eth->h_proto;
#pragma unroll
	for (i = 0; i < SL_MAX_VLANS; i++) {
		struct sl_vlan_hdr *vlan;

		if (*proto != bpf_htons(ETH_P_8021Q) &&
		    *proto != bpf_htons(ETH_P_8021AD))
			break;
		vlan = sl_pull(c, sizeof(*vlan));
		if (!vlan)
			return SL_PARSE_TRUNCATED;
		*proto = vlan->proto;
	}
	if (*proto == bpf_htons(ETH_P_8021Q) ||
	    *proto == bpf_htons(ETH_P_8021AD))
		return SL_PARSE_DEEP_VLAN;
	return SL_PARSE_OK;
}

static __always_inline int sl_parse_ipv4(struct sl_cursor *c,
					 struct sl_packet *pkt, __u8 *l4)
{
	struct iphdr *ip = sl_pull(c, sizeof(*ip));
	__u16 frag_off;
	__u32 hdr_len;

	if (!ip)
		return SL_PARSE_TRUNCATED;
	if (ip->version != 4 || ip->ihl < 5)
		return SL_PARSE_MALFORMED;
	/* options: ihl counts 32-bit words, at most 15 of them */
	hdr_len = ip->ihl * 4;
	if (!sl_pull(c, hdr_len - sizeof(*ip)))
		return SL_PARSE_TRUNCATED;
	sl_addr_from_ipv4(&pkt->src, ip->saddr);
	sl_addr_from_ipv4(&pkt->dst, ip->daddr);
	pkt->family = 4;
	*l4 = ip->protocol;
	frag_off = bpf_ntohs(ip->frag_off);
	if (frag_off & (SL_IP_MF | SL_IP_OFFSET)) {
		pkt->frag_id = ip->id;
		pkt->frag_proto = ip->protocol;
		if (frag_off & SL_IP_OFFSET) {
			pkt->frag = SL_FRAG_LATER;
			return SL_PARSE_FRAGMENT;
		}
		pkt->frag = SL_FRAG_FIRST;
	}
	return SL_PARSE_OK;
}

static __always_inline int sl_ipv6_ext(__u8 next)
{
	switch (next) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_FRAGMENT:
	case IPPROTO_DSTOPTS:
	case IPPROTO_MH:
	case IPPROTO_AH:
		return 1;
	default:
		return 0;
	}
}

/* One step of the IPv6 extension chain walk, a bpf_loop body: the
 * verifier checks it once, however long the chain. The cursor is an
 * offset from `start`, a scalar the verifier can bound each round.
 */
struct sl_ext_walk {
	void *start;		/* just past the IPv6 header */
	void *end;
	struct sl_packet *pkt;
	__u32 off;
	__u8 next;
	__u8 pad[3];
	int ret;
};

static long sl_ipv6_ext_step(__u32 i, void *data)
{
	struct sl_ext_walk *w = data;
	struct sl_cursor c;
	struct sl_ipv6_ext_hdr *ext;
	struct sl_ipv6_frag_hdr *fh;
	__u32 len;

	c.pos = w->start + (w->off & SL_MAX_PKT_OFF);
	c.end = w->end;
	switch (w->next) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_MH:
	case IPPROTO_AH:
		break;
	case IPPROTO_FRAGMENT:
		if (i == SL_MAX_IPV6_EXT)
			goto long_chain;
		fh = sl_pull(&c, sizeof(*fh));
		if (!fh)
			goto truncated;
		w->off += sizeof(*fh);
		/* an atomic fragment (offset 0, no M) is the whole datagram */
		if (fh->frag_off & bpf_htons(SL_IP6_OFFSET | SL_IP6_MF)) {
			w->pkt->frag_id = fh->id;
			w->pkt->frag_proto = fh->nexthdr;
			if (fh->frag_off & bpf_htons(SL_IP6_OFFSET)) {
				w->pkt->frag = SL_FRAG_LATER;
				w->ret = SL_PARSE_FRAGMENT;
				return 1;
			}
			w->pkt->frag = SL_FRAG_FIRST;
		}
		w->next = fh->nexthdr;
		return 0;
	default:
		w->ret = SL_PARSE_OK;
		return 1;
	}
	if (i == SL_MAX_IPV6_EXT)
		goto long_chain;
	ext = sl_pull(&c, sizeof(*ext));
	if (!ext)
		goto truncated;
	/* AH counts 4-byte units past the first 8; the others 8-byte units
	 * past the first 8 (RFC 4302, RFC 8200)
	 */
	if (w->next == IPPROTO_AH)
		len = ((__u32)ext->hdrlen + 2) * 4;
	else
		len = ((__u32)ext->hdrlen + 1) * 8;
	w->next = ext->nexthdr;
	if (!sl_pull(&c, len - sizeof(*ext)))
		goto truncated;
	w->off += len;
	if (w->off > SL_MAX_PKT_OFF)
		goto long_chain;
	return 0;
truncated:
	w->ret = SL_PARSE_TRUNCATED;
	return 1;
long_chain:
	w->ret = SL_PARSE_LONG_CHAIN;
	return 1;
}

/* The walk from `start` (just past the IPv6 header, whose next header is
 * `first`): a static subprogram, so that its state is on a frame of its
 * own, off the stack of the rule chain's calls (6.1 allows 512 bytes for
 * the deepest). Returns the result; *out gets the upper layer's offset
 * from `start` << 8 | its protocol.
 */
static __noinline int sl_ipv6_walk(void *start, void *end,
				   struct sl_packet *pkt, __u8 first, __u32 *out)
{
	struct sl_ext_walk w = {
		.start = start,
		.end = end,
		.pkt = pkt,
		.next = first,
		/* a chain that reaches no upper layer in the walk is too
		 * long; the last round only looks for the upper layer
		 */
		.ret = SL_PARSE_LONG_CHAIN,
	};

	if (!out)
		return SL_PARSE_MALFORMED;
	bpf_loop(SL_MAX_IPV6_EXT + 1, sl_ipv6_ext_step, &w, 0);
	*out = (w.off & SL_MAX_PKT_OFF) << 8 | w.next;
	return w.ret;
}

static __always_inline int sl_parse_ipv6(struct sl_cursor *c,
					 struct sl_packet *pkt, __u8 *l4)
{
	struct ipv6hdr *ip6 = sl_pull(c, sizeof(*ip6));
	__u32 out = 0;
	int ret;

	if (!ip6)
		return SL_PARSE_TRUNCATED;
	if (ip6->version != 6)
		return SL_PARSE_MALFORMED;
	__builtin_memcpy(pkt->src.byte, &ip6->saddr, 16);
	__builtin_memcpy(pkt->dst.byte, &ip6->daddr, 16);
	pkt->family = 6;
	/* ::ffff:a.b.c.d would be the key of the IPv4 client a.b.c.d */
	if (sl_addr_is_mapped_v4(&ip6->saddr))
		return SL_PARSE_MAPPED_V4;

	/* most packets have no extension header: no walk */
	if (!sl_ipv6_ext(ip6->nexthdr)) {
		*l4 = ip6->nexthdr;
		return SL_PARSE_OK;
	}
	/* loaded again: the checked copy is one of six values, which the
	 * verifier would walk the loop from one by one
	 */
	ret = sl_ipv6_walk(c->pos, c->end, pkt,
			   *(volatile __u8 *)&ip6->nexthdr, &out);
	c->pos += (out >> 8) & SL_MAX_PKT_OFF;
	*l4 = out & 0xff;
	return ret;
}

/* ICMP that runs the network rather than asks a service: errors (PMTU
 * discovery lives in destination-unreachable "fragmentation needed" and
 * ICMPv6 packet-too-big), and router, neighbour and multicast listener
 * discovery. Dropping them breaks every protocol to the host, so no rule
 * limits them.
 */
static __always_inline int sl_icmp4_control(__u8 type)
{
	switch (type) {
	case 3:		/* destination unreachable, fragmentation needed */
	case 5:		/* redirect */
	case 9:		/* router advertisement */
	case 10:	/* router solicitation */
	case 11:	/* time exceeded */
	case 12:	/* parameter problem */
		return 1;
	default:
		return 0;
	}
}

static __always_inline int sl_icmp6_control(__u8 type)
{
	switch (type) {
	case 1:		/* destination unreachable */
	case 2:		/* packet too big */
	case 3:		/* time exceeded */
	case 4:		/* parameter problem */
	case 130 ... 132:	/* multicast listener query, report, done */
	case 133 ... 137:	/* router and neighbour discovery, redirect */
	case 141 ... 143:	/* inverse neighbour discovery, MLDv2 report */
	case 148 ... 149:	/* SEND certification path */
	case 151 ... 153:	/* multicast router discovery */
		return 1;
	default:
		return 0;
	}
}

/* Ports, or the ICMP kind. `protocol: icmp` rules see echo requests
 * only (slot SL_SLOT_ICMP); the other informational ICMP types are
 * "other protocol" traffic that only `protocol: any` rules match.
 */
static __always_inline int sl_parse_l4(struct sl_cursor *c,
				       struct sl_packet *pkt, __u8 l4)
{
	struct tcphdr *tcp;
	struct udphdr *udp;
	__u8 *type;

	switch (l4) {
	case IPPROTO_TCP:
		tcp = sl_pull(c, sizeof(*tcp));
		if (!tcp)
			return SL_PARSE_TRUNCATED;
		if (tcp->doff < 5)
			return SL_PARSE_MALFORMED;
		pkt->dport = tcp->dest;
		pkt->slot = SL_SLOT_TCP + bpf_ntohs(tcp->dest);
		pkt->syn = tcp->syn && !tcp->ack;
		return SL_PARSE_OK;
	case IPPROTO_UDP:
		udp = sl_pull(c, sizeof(*udp));
		if (!udp)
			return SL_PARSE_TRUNCATED;
		pkt->dport = udp->dest;
		pkt->slot = SL_SLOT_UDP + bpf_ntohs(udp->dest);
		return SL_PARSE_OK;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		/* type, code and checksum: enough to call it ICMP */
		type = sl_pull(c, 4);
		if (!type)
			return SL_PARSE_TRUNCATED;
		if (l4 == IPPROTO_ICMP ? sl_icmp4_control(*type) :
					 sl_icmp6_control(*type))
			return SL_PARSE_CONTROL;
		if (*type == (l4 == IPPROTO_ICMP ? 8 : 128))
			pkt->slot = SL_SLOT_ICMP;	/* echo request */
		else
			pkt->slot = SL_SLOT_OTHER;
		return SL_PARSE_OK;
	default:
		pkt->slot = SL_SLOT_OTHER;
		return SL_PARSE_OK;
	}
}

/* The addresses of a frame with more VLAN tags than SL_MAX_VLANS, behind
 * up to SL_MAX_VLANS_DEEP of them in all: nothing past them is read.
 * `pos` is the first tag past those sl_parse_eth() walked. Returns
 * SL_PARSE_DEEP_VLAN, with the addresses in *pkt when they were reached
 * (else none, all zero), or what the frame is if it ends first or
 * carries no IP. A static subprogram: its unrolled walk is verified once,
 * not once per path of the data path after it.
 */
static __noinline int sl_parse_deep_vlan(void *pos, void *end,
					 struct sl_packet *pkt)
{
	struct sl_cursor c = { .pos = pos, .end = end };
	__be16 proto = bpf_htons(ETH_P_8021Q);
	struct sl_vlan_hdr *vlan;
	struct ipv6hdr *ip6;
	struct iphdr *ip;
	int i;

	if (!pkt)
		return SL_PARSE_MALFORMED;
#pragma unroll
	for (i = SL_MAX_VLANS; i < SL_MAX_VLANS_DEEP; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) &&
		    proto != bpf_htons(ETH_P_8021AD))
			break;
		vlan = sl_pull(&c, sizeof(*vlan));
		if (!vlan)
			return SL_PARSE_TRUNCATED;
		proto = vlan->proto;
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		ip = sl_pull(&c, sizeof(*ip));
		if (!ip)
			return SL_PARSE_TRUNCATED;
		if (ip->version != 4 || ip->ihl < 5)
			return SL_PARSE_MALFORMED;
		sl_addr_from_ipv4(&pkt->src, ip->saddr);
		sl_addr_from_ipv4(&pkt->dst, ip->daddr);
		pkt->family = 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		ip6 = sl_pull(&c, sizeof(*ip6));
		if (!ip6)
			return SL_PARSE_TRUNCATED;
		if (ip6->version != 6)
			return SL_PARSE_MALFORMED;
		if (sl_addr_is_mapped_v4(&ip6->saddr))
			return SL_PARSE_MAPPED_V4;
		__builtin_memcpy(pkt->src.byte, &ip6->saddr, 16);
		__builtin_memcpy(pkt->dst.byte, &ip6->daddr, 16);
		pkt->family = 6;
	} else if (proto != bpf_htons(ETH_P_8021Q) &&
		   proto != bpf_htons(ETH_P_8021AD)) {
		return SL_PARSE_NON_IP;
	}
	return SL_PARSE_DEEP_VLAN;
}

static __always_inline int sl_parse(void *data, void *data_end,
			       struct sl_packet *pkt)
{
	struct sl_cursor c = { .pos = data, .end = data_end };
	__be16 proto;
	__u8 l4 = 0;
	int ret;

	ret = sl_parse_eth(&c, &proto);
	if (ret == SL_PARSE_DEEP_VLAN)
		return sl_parse_deep_vlan(c.pos, c.end, pkt);
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

#endif /* SL_BPF_PARSE_H */
