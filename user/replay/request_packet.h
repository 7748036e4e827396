/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Building request packets for BPF_PROG_TEST_RUN (replay, benchmarks). */
#ifndef SL_REPLAY_REQUEST_PACKET_H
#define SL_REPLAY_REQUEST_PACKET_H

#include <stddef.h>
#include <stdint.h>
#include "slicelimit.h"

#define SL_PACKET_MAX	128

/* An Ethernet + IPv4 or IPv6 (by the family of src) + UDP packet with
 * `payload` zero bytes, into buf (SL_PACKET_MAX bytes). Returns its length.
 * Ports in host byte order.
 */
size_t sl_packet_udp(uint8_t *buf, const struct sl_addr *src,
		     const struct sl_addr *dst, uint16_t sport, uint16_t dport,
		     size_t payload);

/* The same with another protocol: SL_PROTO_UDP, SL_PROTO_TCP (a SYN: a
 * new connection) or SL_PROTO_ICMP (an echo request, ICMPv6 for IPv6; no
 * ports).
 */
size_t sl_packet_build(uint8_t *buf, unsigned proto, const struct sl_addr *src,
		       const struct sl_addr *dst, uint16_t sport,
		       uint16_t dport, size_t payload);

#endif /* SL_REPLAY_REQUEST_PACKET_H */
