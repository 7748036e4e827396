/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Test packets built one header at a time (the tests/bpf/test_bpf_*
 * binaries): each helper appends one header and records where each
 * header the parser must read ends, so that a packet can be cut at every
 * such boundary (and a byte short of it). user/replay/request_packet.h is
 * not this: it builds only well-formed Ethernet + IP + TCP/UDP/ICMP
 * frames, where these tests also need VLAN tags, IPv4 options and
 * fragments, IPv6 extension chains, bad versions and short headers.
 */
#ifndef SL_TEST_PKT_BUILDER_H
#define SL_TEST_PKT_BUILDER_H

#include <stdbool.h>
#include <stdint.h>

#define PKT_MAX		4096	/* long extension chains */
#define MAX_CUTS	320

struct pkt {
	uint8_t b[PKT_MAX];
	unsigned len;
	unsigned next;		/* offset of the field naming the next header */
	bool next_u16;		/* that field is an ethertype, else an IP proto */
	bool frag;		/* a fragment: the parser reads no further */
	unsigned l3, l4;	/* header offsets, for finish() */
	unsigned fh;		/* IPv6 fragment header offset, 0 without */
	int family;		/* AF_INET, AF_INET6, 0 */
	unsigned cut[MAX_CUTS];	/* ends of the headers the parser must read */
	unsigned nr_cut;
};

#define FIN	0x01
#define SYN	0x02
#define RST	0x04
#define PSH	0x08
#define ACK	0x10

void eth(struct pkt *p);
void vlan(struct pkt *p, uint16_t tpid);
void ethertype(struct pkt *p, uint16_t type, unsigned body);
void ip4_from(struct pkt *p, const char *s, const char *d, unsigned ihl,
	      uint16_t frag);
void ip4(struct pkt *p, unsigned ihl, uint16_t frag);
void ip6_from(struct pkt *p, const char *s, const char *d);
void ip6(struct pkt *p);
void ip6_ext(struct pkt *p, uint8_t type, uint8_t hdrlen);
void ip6_frag(struct pkt *p, uint16_t offset, bool mf);
void udp(struct pkt *p, uint16_t dport);
void tcp_doff(struct pkt *p, uint16_t dport, uint8_t flags,
	      unsigned doff);
void tcp(struct pkt *p, uint16_t dport, uint8_t flags);
void ip_id(struct pkt *p, uint32_t id);
void icmp(struct pkt *p);
void icmp_type(struct pkt *p, uint8_t type);
void proto(struct pkt *p, uint8_t ipproto, unsigned body);
void payload(struct pkt *p, unsigned n);
void finish(struct pkt *p);
void mk(struct pkt *p, const char *s, const char *d, int l4,
	uint16_t dport, uint8_t flags, unsigned size);

#endif /* SL_TEST_PKT_BUILDER_H */
