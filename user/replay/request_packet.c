// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/icmp.h>
#include <linux/icmpv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <stdbool.h>
#include <string.h>
#include "replay/request_packet.h"
#include "sl_key.h"

/* Headers are built in aligned locals and copied in: in the frame, the IP
 * header sits at offset 14, where a struct access would be misaligned.
 */
size_t sl_packet_udp(uint8_t *buf, const struct sl_addr *src,
		     const struct sl_addr *dst, uint16_t sport, uint16_t dport,
		     size_t payload)
{
	return sl_packet_build(buf, SL_PROTO_UDP, src, dst, sport, dport,
			       payload);
}

size_t sl_packet_build(uint8_t *buf, unsigned proto, const struct sl_addr *src,
		       const struct sl_addr *dst, uint16_t sport,
		       uint16_t dport, size_t payload)
{
	struct ethhdr eth = { .h_proto = 0 };
	union {
		struct udphdr udp;
		struct tcphdr tcp;
		struct icmphdr icmp;
		struct icmp6hdr icmp6;
	} l4;
	size_t off = sizeof(eth), l4_len;
	bool v4 = sl_addr_is_ipv4(src);
	__u8 nexthdr;

	memset(&l4, 0, sizeof(l4));
	if (proto == SL_PROTO_TCP) {
		nexthdr = IPPROTO_TCP;
		l4_len = sizeof(l4.tcp);
		l4.tcp.source = htons(sport);
		l4.tcp.dest = htons(dport);
		l4.tcp.doff = sizeof(l4.tcp) / 4;
		l4.tcp.syn = 1;
		l4.tcp.window = htons(65535);
	} else if (proto == SL_PROTO_ICMP) {
		nexthdr = v4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
		l4_len = v4 ? sizeof(l4.icmp) : sizeof(l4.icmp6);
		if (v4)
			l4.icmp.type = ICMP_ECHO;
		else
			l4.icmp6.icmp6_type = ICMPV6_ECHO_REQUEST;
	} else {
		nexthdr = IPPROTO_UDP;
		l4_len = sizeof(l4.udp);
		l4.udp.source = htons(sport);
		l4.udp.dest = htons(dport);
	}
	if (payload > SL_PACKET_MAX - sizeof(eth) - sizeof(struct ipv6hdr) -
		      l4_len)
		payload = 0;
	if (nexthdr == IPPROTO_UDP)
		l4.udp.len = htons(sizeof(l4.udp) + payload);
	memset(buf, 0, SL_PACKET_MAX);
	memset(eth.h_dest, 0x02, ETH_ALEN);
	memset(eth.h_source, 0x04, ETH_ALEN);
	if (v4) {
		struct iphdr ip = {
			.version = 4, .ihl = 5, .ttl = 64,
			.protocol = nexthdr,
			.tot_len = htons(sizeof(ip) + l4_len + payload),
		};

		eth.h_proto = htons(ETH_P_IP);
		memcpy(&ip.saddr, &src->byte[12], 4);
		memcpy(&ip.daddr, &dst->byte[12], 4);
		memcpy(buf + off, &ip, sizeof(ip));
		off += sizeof(ip);
	} else {
		struct ipv6hdr ip6 = {
			.version = 6, .hop_limit = 64, .nexthdr = nexthdr,
			.payload_len = htons(l4_len + payload),
		};

		eth.h_proto = htons(ETH_P_IPV6);
		memcpy(&ip6.saddr, src->byte, 16);
		memcpy(&ip6.daddr, dst->byte, 16);
		memcpy(buf + off, &ip6, sizeof(ip6));
		off += sizeof(ip6);
	}
	memcpy(buf, &eth, sizeof(eth));
	memcpy(buf + off, &l4, l4_len);
	return off + l4_len + payload;
}
