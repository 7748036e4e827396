// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The packet builder of tests/lib/pkt_builder.h. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/if_ether.h>
#include <cmocka.h>

#include "pkt_builder.h"

static const char *src4 = "192.0.2.1", *dst4 = "203.0.113.1";
static const char *src6 = "2001:db8::1", *dst6 = "2001:db8:ffff::1";

static uint8_t *put(struct pkt *p, unsigned n)
{
	uint8_t *h = p->b + p->len;

	assert_true(p->len + n <= PKT_MAX);
	memset(h, 0, n);
	p->len += n;
	return h;
}

static void put16(uint8_t *at, uint16_t v)
{
	at[0] = v >> 8;
	at[1] = v & 0xff;
}

static void set_next(struct pkt *p, unsigned v)
{
	if (p->next_u16)
		put16(p->b + p->next, v);
	else
		p->b[p->next] = v;
}

/* The parser must see everything up to here. */
static void mark(struct pkt *p)
{
	if (!p->frag) {
		assert_true(p->nr_cut < MAX_CUTS);
		p->cut[p->nr_cut++] = p->len;
	}
}

static void addr(int family, const char *text, void *out)
{
	assert_int_equal(inet_pton(family, text, out), 1);
}

void eth(struct pkt *p)
{
	uint8_t *h = put(p, ETH_HLEN);

	memcpy(h, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
	p->next = 12;
	p->next_u16 = true;
	mark(p);
}

void vlan(struct pkt *p, uint16_t tpid)
{
	uint8_t *h;

	set_next(p, tpid);
	h = put(p, 4);
	put16(h, 100);		/* VID 100 */
	p->next = p->len - 2;
	mark(p);
}

void ethertype(struct pkt *p, uint16_t type, unsigned body)
{
	set_next(p, type);
	put(p, body);
}

/* ihl in 32-bit words; frag is frag_off in host order (flags | offset). */
void ip4_from(struct pkt *p, const char *s, const char *d, unsigned ihl,
	      uint16_t frag)
{
	uint8_t *h;

	set_next(p, ETH_P_IP);
	p->l3 = p->len;
	p->family = AF_INET;
	h = put(p, 20);
	h[0] = 0x40 | (ihl & 0xf);
	h[8] = 64;
	put16(h + 6, frag);
	addr(AF_INET, s, h + 12);
	addr(AF_INET, d, h + 16);
	p->next = p->l3 + 9;
	p->next_u16 = false;
	mark(p);
	if (ihl > 5) {		/* options: NOPs, then End of Options */
		h = put(p, (ihl - 5) * 4);
		memset(h, 1, (ihl - 5) * 4 - 1);
		mark(p);
	}
	if (frag & 0x3fff)
		p->frag = true;
}

void ip4(struct pkt *p, unsigned ihl, uint16_t frag)
{
	ip4_from(p, src4, dst4, ihl, frag);
}

void ip6_from(struct pkt *p, const char *s, const char *d)
{
	uint8_t *h;

	set_next(p, ETH_P_IPV6);
	p->l3 = p->len;
	p->family = AF_INET6;
	h = put(p, 40);
	h[0] = 0x60;
	h[7] = 64;
	addr(AF_INET6, s, h + 8);
	addr(AF_INET6, d, h + 24);
	p->next = p->l3 + 6;
	p->next_u16 = false;
	mark(p);
}

void ip6(struct pkt *p)
{
	ip6_from(p, src6, dst6);
}

/* Hop-by-hop, routing, destination options, mobility (8-octet units past
 * the first 8) or AH (4-octet units past the first 8); padding is Pad1.
 */
void ip6_ext(struct pkt *p, uint8_t type, uint8_t hdrlen)
{
	unsigned n = type == IPPROTO_AH ? (hdrlen + 2) * 4 : (hdrlen + 1) * 8;
	uint8_t *h;

	set_next(p, type);
	h = put(p, n);
	h[1] = hdrlen;
	p->next = h - p->b;
	mark(p);
}

/* A fragment header (offset in 8-byte units). The parser walks past a
 * first fragment's (offset 0, M) to its ports; the cuts stop here all
 * the same: a first fragment cut short is decided as one without ports.
 */
void ip6_frag(struct pkt *p, uint16_t offset, bool mf)
{
	uint8_t *h;

	set_next(p, IPPROTO_FRAGMENT);
	p->frag = true;
	h = put(p, 8);
	put16(h + 2, offset << 3 | mf);
	p->fh = h - p->b;
	p->next = h - p->b;
}

/* The datagram's identification: the IPv6 fragment header's, or the
 * IPv4 header's (16 bits).
 */
void ip_id(struct pkt *p, uint32_t id)
{
	uint8_t *h;

	if (p->fh) {
		h = p->b + p->fh + 4;
		put16(h, id >> 16);
		put16(h + 2, id & 0xffff);
	} else {
		put16(p->b + p->l3 + 4, id & 0xffff);
	}
}

void udp(struct pkt *p, uint16_t dport)
{
	uint8_t *h;

	set_next(p, IPPROTO_UDP);
	p->l4 = p->len;
	h = put(p, 8);
	put16(h, 40000);
	put16(h + 2, dport);
	mark(p);
}

void tcp_doff(struct pkt *p, uint16_t dport, uint8_t flags,
	      unsigned doff)
{
	uint8_t *h;

	set_next(p, IPPROTO_TCP);
	p->l4 = p->len;
	h = put(p, 20);
	put16(h, 40000);
	put16(h + 2, dport);
	h[12] = doff << 4;
	h[13] = flags;
	put16(h + 14, 65535);
	mark(p);
}

void tcp(struct pkt *p, uint16_t dport, uint8_t flags)
{
	tcp_doff(p, dport, flags, 5);
}

/* ICMP or ICMPv6 (by the family) of a type. The parser reads type, code
 * and checksum (4 bytes).
 */
void icmp_type(struct pkt *p, uint8_t type)
{
	bool v6 = p->family == AF_INET6;
	uint8_t *h;

	set_next(p, v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP);
	p->l4 = p->len;
	h = put(p, 4);
	h[0] = type;
	mark(p);
	put(p, 4);
}

/* Echo request. */
void icmp(struct pkt *p)
{
	icmp_type(p, p->family == AF_INET6 ? 128 : 8);
}

void proto(struct pkt *p, uint8_t ipproto, unsigned body)
{
	set_next(p, ipproto);
	put(p, body);
}

void payload(struct pkt *p, unsigned n)
{
	put(p, n);
}

/* Length fields, so the packets are well formed where they claim to be.
 * Checksums stay zero: neither test-run path verifies them.
 */
void finish(struct pkt *p)
{
	if (p->family == AF_INET && p->b[p->l3] >> 4 == 4)
		put16(p->b + p->l3 + 2, p->len - p->l3);
	else if (p->family == AF_INET6)
		put16(p->b + p->l3 + 4, p->len - p->l3 - 40);
	if (p->l4 && p->b[p->next] == IPPROTO_UDP)
		put16(p->b + p->l4 + 4, p->len - p->l4);
}

/* Ethernet + IPv4 or IPv6 (by the form of s) + TCP, UDP or ICMP, padded to
 * `size` bytes when size is larger.
 */
void mk(struct pkt *p, const char *s, const char *d, int l4,
	uint16_t dport, uint8_t flags, unsigned size)
{
	memset(p, 0, sizeof(*p));
	eth(p);
	if (strchr(s, ':'))
		ip6_from(p, s, d);
	else
		ip4_from(p, s, d, 5, 0);
	if (l4 == IPPROTO_TCP)
		tcp(p, dport, flags);
	else if (l4 == IPPROTO_UDP)
		udp(p, dport);
	else
		icmp(p);
	if (size > p->len)
		payload(p, size - p->len);
	finish(p);
}
