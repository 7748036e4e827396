// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <string.h>
#include "packet.h"
#include "sl_key.h"

size_t sl_packet_udp(uint8_t *buf, const struct sl_addr *src,
		     const struct sl_addr *dst, uint16_t sport, uint16_t dport,
		     size_t payload)
{
	struct ethhdr *eth = (struct ethhdr *)buf;
	struct udphdr *udp;
	size_t l3;

	if (payload > SL_PACKET_MAX - sizeof(*eth) - sizeof(struct ipv6hdr) -
		      sizeof(*udp))
		payload = 0;
	memset(buf, 0, SL_PACKET_MAX);
	memset(eth->h_dest, 0x02, ETH_ALEN);
	memset(eth->h_source, 0x04, ETH_ALEN);
	if (sl_addr_is_ipv4(src)) {
		struct iphdr *ip = (struct iphdr *)(eth + 1);

		eth->h_proto = htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->protocol = IPPROTO_UDP;
		ip->tot_len = htons(sizeof(*ip) + sizeof(*udp) + payload);
		memcpy(&ip->saddr, &src->byte[12], 4);
		memcpy(&ip->daddr, &dst->byte[12], 4);
		l3 = sizeof(*ip);
	} else {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)(eth + 1);

		eth->h_proto = htons(ETH_P_IPV6);
		ip6->version = 6;
		ip6->hop_limit = 64;
		ip6->nexthdr = IPPROTO_UDP;
		ip6->payload_len = htons(sizeof(*udp) + payload);
		memcpy(&ip6->saddr, src->byte, 16);
		memcpy(&ip6->daddr, dst->byte, 16);
		l3 = sizeof(*ip6);
	}
	udp = (struct udphdr *)((uint8_t *)(eth + 1) + l3);
	udp->source = htons(sport);
	udp->dest = htons(dport);
	udp->len = htons(sizeof(*udp) + payload);
	return sizeof(*eth) + l3 + sizeof(*udp) + payload;
}
