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

/* Headers are built in aligned locals and copied in: in the frame, the IP
 * header sits at offset 14, where a struct access would be misaligned.
 */
size_t sl_packet_udp(uint8_t *buf, const struct sl_addr *src,
		     const struct sl_addr *dst, uint16_t sport, uint16_t dport,
		     size_t payload)
{
	struct ethhdr eth = { .h_proto = 0 };
	struct udphdr udp = { .source = htons(sport), .dest = htons(dport) };
	size_t off = sizeof(eth);

	if (payload > SL_PACKET_MAX - sizeof(eth) - sizeof(struct ipv6hdr) -
		      sizeof(udp))
		payload = 0;
	memset(buf, 0, SL_PACKET_MAX);
	memset(eth.h_dest, 0x02, ETH_ALEN);
	memset(eth.h_source, 0x04, ETH_ALEN);
	udp.len = htons(sizeof(udp) + payload);
	if (sl_addr_is_ipv4(src)) {
		struct iphdr ip = {
			.version = 4, .ihl = 5, .ttl = 64,
			.protocol = IPPROTO_UDP,
			.tot_len = htons(sizeof(ip) + sizeof(udp) + payload),
		};

		eth.h_proto = htons(ETH_P_IP);
		memcpy(&ip.saddr, &src->byte[12], 4);
		memcpy(&ip.daddr, &dst->byte[12], 4);
		memcpy(buf + off, &ip, sizeof(ip));
		off += sizeof(ip);
	} else {
		struct ipv6hdr ip6 = {
			.version = 6, .hop_limit = 64, .nexthdr = IPPROTO_UDP,
			.payload_len = htons(sizeof(udp) + payload),
		};

		eth.h_proto = htons(ETH_P_IPV6);
		memcpy(&ip6.saddr, src->byte, 16);
		memcpy(&ip6.daddr, dst->byte, 16);
		memcpy(buf + off, &ip6, sizeof(ip6));
		off += sizeof(ip6);
	}
	memcpy(buf, &eth, sizeof(eth));
	memcpy(buf + off, &udp, sizeof(udp));
	return off + sizeof(udp) + payload;
}
