// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * BPF_PROG_TEST_RUN tests of the real object: every packet goes through the
 * XDP or TC program of a private, unpinned instance (user/core/instance.h) under
 * the model clock, and the tests read the verdict and the counters the
 * program wrote. Packets are built by small helpers that append one header
 * each and record where each header the parser must read ends, so that a
 * packet can be cut at every such boundary (and a byte short of it).
 *
 * Tables follow Katran's shape: description, input packet, expected verdict,
 * expected counter deltas. A table test checks every row, prints each
 * mismatch, and fails once at the end, so one bad row hides no other.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "core/client_view.h"
#include "core/parse.h"
#include "core/instance.h"
#include "instance_fixture.h"
#include "sl_key.h"
#include "core/instance_maps.h"
#include "rules/rules.h"

#define T0		1000000000ULL	/* model ms; far from 0 (and from u32 wrap) */
#define PKT_MAX		512
#define MAX_CUTS	32

/* ---- packet builder -------------------------------------------------- */

struct pkt {
	uint8_t b[PKT_MAX];
	unsigned len;
	unsigned next;		/* offset of the field naming the next header */
	bool next_u16;		/* that field is an ethertype, else an IP proto */
	bool frag;		/* a fragment: the parser reads no further */
	unsigned l3, l4;	/* header offsets, for finish() */
	int family;		/* AF_INET, AF_INET6, 0 */
	unsigned cut[MAX_CUTS];	/* ends of the headers the parser must read */
	unsigned nr_cut;
};

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

static void eth(struct pkt *p)
{
	uint8_t *h = put(p, ETH_HLEN);

	memcpy(h, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
	p->next = 12;
	p->next_u16 = true;
	mark(p);
}

static void vlan(struct pkt *p, uint16_t tpid)
{
	uint8_t *h;

	set_next(p, tpid);
	h = put(p, 4);
	put16(h, 100);		/* VID 100 */
	p->next = p->len - 2;
	mark(p);
}

static void ethertype(struct pkt *p, uint16_t type, unsigned body)
{
	set_next(p, type);
	put(p, body);
}

/* ihl in 32-bit words; frag is frag_off in host order (flags | offset). */
static void ip4_from(struct pkt *p, const char *s, const char *d, unsigned ihl,
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

static void ip4(struct pkt *p, unsigned ihl, uint16_t frag)
{
	ip4_from(p, src4, dst4, ihl, frag);
}

static void ip6_from(struct pkt *p, const char *s, const char *d)
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

static void ip6(struct pkt *p)
{
	ip6_from(p, src6, dst6);
}

/* Hop-by-hop, routing, destination options, mobility (8-octet units past
 * the first 8) or AH (4-octet units past the first 8); padding is Pad1.
 */
static void ip6_ext(struct pkt *p, uint8_t type, uint8_t hdrlen)
{
	unsigned n = type == IPPROTO_AH ? (hdrlen + 2) * 4 : (hdrlen + 1) * 8;
	uint8_t *h;

	set_next(p, type);
	h = put(p, n);
	h[1] = hdrlen;
	p->next = h - p->b;
	mark(p);
}

/* The parser stops at a fragment header without reading it. */
static void ip6_frag(struct pkt *p, uint16_t offset, bool mf)
{
	uint8_t *h;

	set_next(p, IPPROTO_FRAGMENT);
	p->frag = true;
	h = put(p, 8);
	put16(h + 2, offset << 3 | mf);
	p->next = h - p->b;
}

static void udp(struct pkt *p, uint16_t dport)
{
	uint8_t *h;

	set_next(p, IPPROTO_UDP);
	p->l4 = p->len;
	h = put(p, 8);
	put16(h, 40000);
	put16(h + 2, dport);
	mark(p);
}

#define FIN	0x01
#define SYN	0x02
#define RST	0x04
#define PSH	0x08
#define ACK	0x10

static void tcp_doff(struct pkt *p, uint16_t dport, uint8_t flags,
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

static void tcp(struct pkt *p, uint16_t dport, uint8_t flags)
{
	tcp_doff(p, dport, flags, 5);
}

/* Echo request. The parser reads type, code and checksum (4 bytes). */
static void icmp(struct pkt *p)
{
	bool v6 = p->family == AF_INET6;
	uint8_t *h;

	set_next(p, v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP);
	p->l4 = p->len;
	h = put(p, 4);
	h[0] = v6 ? 128 : 8;
	mark(p);
	put(p, 4);
}

static void proto(struct pkt *p, uint8_t ipproto, unsigned body)
{
	set_next(p, ipproto);
	put(p, body);
}

static void payload(struct pkt *p, unsigned n)
{
	put(p, n);
}

/* Length fields, so the packets are well formed where they claim to be.
 * Checksums stay zero: neither test-run path verifies them.
 */
static void finish(struct pkt *p)
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
static void mk(struct pkt *p, const char *s, const char *d, int l4,
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

/* ---- fixture and readers ---------------------------------------------- */

struct fixture {
	struct sl_instance in;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (sl_test_open_instance(&f->in, 4096, T0)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	sl_instance_close(&f->in);
	free(f);
	sl_test_restore_cpus();	/* give the next test every CPU */
	return 0;
}

static int group_setup(void **state)
{
	return sl_test_load_once(state, setup, teardown);
}

enum verdict { PASS, DROP };

static const char *verdict_name(enum verdict v)
{
	return v == DROP ? "drop" : "pass";
}

/* Whether BPF_PROG_TEST_RUN takes the first `len` bytes of p. XDP needs an
 * Ethernet header. An skb program needs more: the kernel rejects an skb
 * left empty once eth_type_trans() has pulled the Ethernet header, and
 * (since 12bec2bd4b76, "reject short IPv4/IPv6 inputs") one whose outer
 * ethertype is IPv4 or IPv6 but whose fixed IP header is incomplete. Those
 * cuts are covered through XDP only.
 */
static bool runnable(bool tc, const struct pkt *p, unsigned len)
{
	unsigned type = p->b[12] << 8 | p->b[13];

	if (len < ETH_HLEN)
		return false;
	if (!tc)
		return true;
	if (type == ETH_P_IP)
		return len >= ETH_HLEN + 20;
	if (type == ETH_P_IPV6)
		return len >= ETH_HLEN + 40;
	return len > ETH_HLEN;
}

/* Run `len` bytes of p on `cpu` (-1: anywhere) through XDP or TC. */
static enum verdict run_len(struct fixture *f, bool tc, int cpu,
			    const struct pkt *p, unsigned len)
{
	__u32 retval = ~0U;
	int err;

	err = sl_instance_run(&f->in, tc, cpu, p->b, len, 1, &retval, NULL);
	if (err)
		fail_msg("%s test run of %u bytes: %s", tc ? "tc" : "xdp", len,
			 strerror(-err));
	if (tc) {
		assert_true(retval == TC_ACT_OK || retval == TC_ACT_SHOT);
		return retval == TC_ACT_SHOT ? DROP : PASS;
	}
	assert_true(retval == XDP_PASS || retval == XDP_DROP);
	return retval == XDP_DROP ? DROP : PASS;
}

static enum verdict run(struct fixture *f, const struct pkt *p)
{
	return run_len(f, false, -1, p, p->len);
}

static void set_time(struct fixture *f, __u64 ms)
{
	sl_instance_set_time(&f->in, ms);
}

static void apply(struct fixture *f, const char *yaml)
{
	assert_int_equal(sl_test_apply_yaml(&f->in, yaml), 0);
}

static struct sl_global_stats global_stats(struct fixture *f)
{
	struct sl_global_stats gs;

	assert_int_equal(sl_percpu_sum_u64(&f->in.maps, f->in.maps.global_stats,
					   0, &gs, sizeof(gs)), 0);
	return gs;
}

static struct sl_rule_stats stats_of_id(struct fixture *f, __u32 id)
{
	struct sl_rule_stats rs;

	assert_int_equal(sl_percpu_sum_u64(&f->in.maps, f->in.maps.rule_stats,
					   id, &rs, sizeof(rs)), 0);
	return rs;
}

/* The live rule called `name`; fails the test when there is none. */
static struct sl_rule live_rule(struct fixture *f, const char *name)
{
	struct sl_rule *rules = NULL, found;
	struct sl_config cfg;
	unsigned nr = 0, i;

	assert_int_equal(sl_rules_read_live(&f->in.maps, &rules, &nr, &cfg), 0);
	for (i = 0; i < nr; i++)
		if (!strcmp(rules[i].name, name))
			break;
	if (i == nr) {
		free(rules);
		fail_msg("no live rule '%s'", name);
	}
	found = rules[i];
	free(rules);
	return found;
}

static __u32 id_of(struct fixture *f, const char *name)
{
	return live_rule(f, name).id;
}

static struct sl_rule_stats stats_of(struct fixture *f, const char *name)
{
	return stats_of_id(f, id_of(f, name));
}

/* Client keys held for rule `id`. */
static unsigned clients_of(struct fixture *f, __u32 id)
{
	struct sl_client_key key, next;
	void *prev = NULL;
	unsigned n = 0;

	while (!bpf_map_get_next_key(f->in.maps.clients, prev, &next)) {
		n += next.rule_id == id;
		key = next;
		prev = &key;
	}
	return n;
}

/* ---- 1. packet corpus ---------------------------------------------------
 *
 * One rule, `corpus`: any protocol, port 9, one packet per hour, every IPv4
 * source one client and every IPv6 source another. The test spends both
 * allowances first, so every packet that reaches the rule is dropped: a
 * dropped row proves that the parser got through to the ports, and every
 * other row must pass with exactly its counter moved.
 */
#define LIMITED_PORT	9
#define FREE_PORT	53

static const char corpus_rules[] =
	"rules:\n"
	"  - name: corpus\n"
	"    ports: 9\n"
	"    limit: 1\n"
	"    window: 1h\n"
	"    key: {ipv4_prefix: 0, ipv6_prefix: 0}\n";

enum counter { RULE, NON_IP, MALFORMED, FRAGMENTS, NO_RULE };

static const char *const counter_names[] = {
	"rule", "non_ip", "malformed", "fragments", "no_rule",
};

static void c_udp4(struct pkt *p)
{ eth(p); ip4(p, 5, 0); udp(p, LIMITED_PORT); payload(p, 18); }
static void c_udp4_free(struct pkt *p)
{ eth(p); ip4(p, 5, 0); udp(p, FREE_PORT); payload(p, 18); }
static void c_vlan(struct pkt *p)
{ eth(p); vlan(p, ETH_P_8021Q); ip4(p, 5, 0); udp(p, LIMITED_PORT); }
static void c_qinq(struct pkt *p)
{ eth(p); vlan(p, ETH_P_8021AD); vlan(p, ETH_P_8021Q); ip4(p, 5, 0);
  udp(p, LIMITED_PORT); }
static void c_qinq_8100(struct pkt *p)
{ eth(p); vlan(p, ETH_P_8021Q); vlan(p, ETH_P_8021Q); ip4(p, 5, 0);
  udp(p, LIMITED_PORT); }
static void c_vlan3(struct pkt *p)
{ eth(p); vlan(p, ETH_P_8021AD); vlan(p, ETH_P_8021Q); vlan(p, ETH_P_8021Q);
  ip4(p, 5, 0); udp(p, LIMITED_PORT); }
static void c_vlan_arp(struct pkt *p)
{ eth(p); vlan(p, ETH_P_8021Q); ethertype(p, ETH_P_ARP, 28); }
static void c_ihl6(struct pkt *p)
{ eth(p); ip4(p, 6, 0); udp(p, LIMITED_PORT); }
static void c_ihl10(struct pkt *p)
{ eth(p); ip4(p, 10, 0); udp(p, LIMITED_PORT); }
static void c_ihl15(struct pkt *p)
{ eth(p); ip4(p, 15, 0); udp(p, LIMITED_PORT); payload(p, 4); }
static void c_ihl4(struct pkt *p)
{ eth(p); ip4(p, 4, 0); udp(p, LIMITED_PORT); }
static void c_ihl0(struct pkt *p)
{ eth(p); ip4(p, 0, 0); udp(p, LIMITED_PORT); }
static void c_ip4_version6(struct pkt *p)
{ eth(p); ip4(p, 5, 0); p->b[p->l3] = 0x65; udp(p, LIMITED_PORT); }
static void c_ip4_df(struct pkt *p)
{ eth(p); ip4(p, 5, 0x4000); udp(p, LIMITED_PORT); }
static void c_ip4_mf(struct pkt *p)
{ eth(p); ip4(p, 5, 0x2000); udp(p, LIMITED_PORT); payload(p, 24); }
static void c_ip4_offset(struct pkt *p)
{ eth(p); ip4(p, 5, 185); proto(p, IPPROTO_UDP, 32); }
static void c_ip4_mf_offset(struct pkt *p)
{ eth(p); ip4(p, 5, 0x2000 | 1); proto(p, IPPROTO_UDP, 32); }
static void c_ip4_opts_mf(struct pkt *p)
{ eth(p); ip4(p, 8, 0x2000); udp(p, LIMITED_PORT); }
static void c_udp6(struct pkt *p)
{ eth(p); ip6(p); udp(p, LIMITED_PORT); payload(p, 10); }
static void c_udp6_free(struct pkt *p)
{ eth(p); ip6(p); udp(p, FREE_PORT); }
static void c_vlan_udp6(struct pkt *p)
{ eth(p); vlan(p, ETH_P_8021Q); ip6(p); udp(p, LIMITED_PORT); }
static void c_ip6_hop_rt_dst(struct pkt *p)
{ eth(p); ip6(p); ip6_ext(p, IPPROTO_HOPOPTS, 0);
  ip6_ext(p, IPPROTO_ROUTING, 2); ip6_ext(p, IPPROTO_DSTOPTS, 1);
  udp(p, LIMITED_PORT); }
static void c_ip6_ah(struct pkt *p)
{ eth(p); ip6(p); ip6_ext(p, IPPROTO_AH, 4); udp(p, LIMITED_PORT); }
static void c_ip6_mh(struct pkt *p)
{ eth(p); ip6(p); ip6_ext(p, IPPROTO_MH, 1); tcp(p, LIMITED_PORT, SYN); }
static void c_ip6_frag(struct pkt *p)
{ eth(p); ip6(p); ip6_frag(p, 0, true); udp(p, LIMITED_PORT); }
static void c_ip6_frag_offset(struct pkt *p)
{ eth(p); ip6(p); ip6_frag(p, 100, false); proto(p, IPPROTO_UDP, 16); }
static void c_ip6_hop_frag(struct pkt *p)
{ eth(p); ip6(p); ip6_ext(p, IPPROTO_HOPOPTS, 0); ip6_frag(p, 0, true);
  udp(p, LIMITED_PORT); }

static void ip6_chain(struct pkt *p, unsigned n)
{
	static const uint8_t types[] = { IPPROTO_HOPOPTS, IPPROTO_DSTOPTS,
					 IPPROTO_ROUTING, IPPROTO_AH };
	unsigned i;

	eth(p);
	ip6(p);
	for (i = 0; i < n; i++)
		ip6_ext(p, types[i % 4], 0);
	udp(p, LIMITED_PORT);
}

static void c_ip6_ext7(struct pkt *p) { ip6_chain(p, 7); }
static void c_ip6_ext9(struct pkt *p) { ip6_chain(p, 9); }
static void c_ip6_ext12(struct pkt *p) { ip6_chain(p, 12); }
static void c_ip6_version4(struct pkt *p)
{ eth(p); ip6(p); p->b[p->l3] = 0x40; udp(p, LIMITED_PORT); }
static void c_ip6_nonext(struct pkt *p)
{ eth(p); ip6(p); proto(p, IPPROTO_NONE, 8); }
static void c_icmp4(struct pkt *p) { eth(p); ip4(p, 5, 0); icmp(p); }
static void c_icmp6(struct pkt *p) { eth(p); ip6(p); icmp(p); }
static void c_gre4(struct pkt *p) { eth(p); ip4(p, 5, 0); proto(p, 47, 8); }
static void c_arp(struct pkt *p) { eth(p); ethertype(p, ETH_P_ARP, 28); }
static void c_arp_eth_only(struct pkt *p) { eth(p); ethertype(p, ETH_P_ARP, 0); }
static void c_lldp(struct pkt *p) { eth(p); ethertype(p, 0x88cc, 32); }
static void c_tcp_syn(struct pkt *p)
{ eth(p); ip4(p, 5, 0); tcp(p, LIMITED_PORT, SYN); }
static void c_tcp_synack(struct pkt *p)
{ eth(p); ip4(p, 5, 0); tcp(p, LIMITED_PORT, SYN | ACK); }
static void c_tcp_ack(struct pkt *p)
{ eth(p); ip4(p, 5, 0); tcp(p, LIMITED_PORT, ACK); payload(p, 100); }
static void c_tcp_free(struct pkt *p)
{ eth(p); ip4(p, 5, 0); tcp(p, FREE_PORT, SYN); }
static void c_tcp_doff4(struct pkt *p)
{ eth(p); ip4(p, 5, 0); tcp_doff(p, LIMITED_PORT, SYN, 4); }
static void c_tcp_doff0(struct pkt *p)
{ eth(p); ip4(p, 5, 0); tcp_doff(p, LIMITED_PORT, ACK, 0); }
static void c_tcp6_syn(struct pkt *p)
{ eth(p); ip6(p); tcp(p, LIMITED_PORT, SYN); }
static void c_vlan_opts_tcp(struct pkt *p)
{ eth(p); vlan(p, ETH_P_8021Q); ip4(p, 7, 0); tcp(p, LIMITED_PORT, ACK); }

struct corpus_row {
	const char *desc;
	void (*build)(struct pkt *p);
	enum verdict verdict;
	enum counter counter;	/* besides packets; RULE: reached the rule */
	bool truncate;		/* also cut at every header boundary */
};

static const struct corpus_row corpus[] = {
	{ "ipv4 udp, limited port",		c_udp4, DROP, RULE, true },
	{ "ipv4 udp, port without rule",	c_udp4_free, PASS, NO_RULE, true },
	{ "802.1Q ipv4 udp",			c_vlan, DROP, RULE, true },
	{ "QinQ 802.1ad + 802.1Q ipv4 udp",	c_qinq, DROP, RULE, true },
	{ "two 802.1Q tags ipv4 udp",		c_qinq_8100, DROP, RULE, true },
	{ "three VLAN tags (over the 2 parsed)", c_vlan3, PASS, NON_IP, false },
	{ "802.1Q arp",				c_vlan_arp, PASS, NON_IP, false },
	{ "ipv4 options ihl 6",			c_ihl6, DROP, RULE, true },
	{ "ipv4 options ihl 10",		c_ihl10, DROP, RULE, true },
	{ "ipv4 options ihl 15",		c_ihl15, DROP, RULE, true },
	{ "ipv4 options + 802.1Q + tcp ack",	c_vlan_opts_tcp, DROP, RULE, true },
	{ "ipv4 ihl 4",				c_ihl4, PASS, MALFORMED, false },
	{ "ipv4 ihl 0",				c_ihl0, PASS, MALFORMED, false },
	{ "ipv4 ethertype, version 6",		c_ip4_version6, PASS, MALFORMED, false },
	{ "ipv4 DF only: not a fragment",	c_ip4_df, DROP, RULE, true },
	{ "ipv4 first fragment (MF)",		c_ip4_mf, PASS, FRAGMENTS, true },
	{ "ipv4 last fragment (offset 185)",	c_ip4_offset, PASS, FRAGMENTS, true },
	{ "ipv4 middle fragment (MF, offset 1)", c_ip4_mf_offset, PASS, FRAGMENTS, true },
	{ "ipv4 options + MF",			c_ip4_opts_mf, PASS, FRAGMENTS, true },
	{ "ipv6 udp, limited port",		c_udp6, DROP, RULE, true },
	{ "ipv6 udp, port without rule",	c_udp6_free, PASS, NO_RULE, true },
	{ "802.1Q ipv6 udp",			c_vlan_udp6, DROP, RULE, true },
	{ "ipv6 hop-by-hop + routing + dstopts + udp", c_ip6_hop_rt_dst, DROP, RULE, true },
	{ "ipv6 AH + udp",			c_ip6_ah, DROP, RULE, true },
	{ "ipv6 mobility header + tcp",		c_ip6_mh, DROP, RULE, true },
	{ "ipv6 7 extension headers + udp",	c_ip6_ext7, DROP, RULE, true },
	{ "ipv6 9 extension headers + udp",	c_ip6_ext9, PASS, MALFORMED, false },
	{ "ipv6 12 extension headers + udp",	c_ip6_ext12, PASS, MALFORMED, false },
	{ "ipv6 first fragment",		c_ip6_frag, PASS, FRAGMENTS, true },
	{ "ipv6 later fragment",		c_ip6_frag_offset, PASS, FRAGMENTS, true },
	{ "ipv6 hop-by-hop + fragment",		c_ip6_hop_frag, PASS, FRAGMENTS, true },
	{ "ipv6 ethertype, version 4",		c_ip6_version4, PASS, MALFORMED, false },
	{ "ipv6 no next header (other proto)",	c_ip6_nonext, PASS, NO_RULE, true },
	{ "icmp echo (rule has ports)",		c_icmp4, PASS, NO_RULE, true },
	{ "icmpv6 echo (rule has ports)",	c_icmp6, PASS, NO_RULE, true },
	{ "ipv4 gre (other proto)",		c_gre4, PASS, NO_RULE, true },
	{ "arp",				c_arp, PASS, NON_IP, false },
	{ "arp, ethernet header only",		c_arp_eth_only, PASS, NON_IP, false },
	{ "lldp",				c_lldp, PASS, NON_IP, false },
	{ "tcp syn",				c_tcp_syn, DROP, RULE, true },
	{ "tcp syn+ack",			c_tcp_synack, DROP, RULE, true },
	{ "tcp ack with data",			c_tcp_ack, DROP, RULE, true },
	{ "tcp syn, port without rule",		c_tcp_free, PASS, NO_RULE, true },
	{ "tcp doff 4",				c_tcp_doff4, PASS, MALFORMED, false },
	{ "tcp doff 0",				c_tcp_doff0, PASS, MALFORMED, false },
	{ "ipv6 tcp syn",			c_tcp6_syn, DROP, RULE, true },
};

/* Run `len` bytes of p; compare verdict and every counter delta. Returns
 * 1 (and prints why) on a mismatch.
 */
static int check_one(struct fixture *f, bool tc, __u32 rule_id,
		     const char *desc, const struct pkt *p, unsigned len,
		     enum verdict want, enum counter counter)
{
	struct sl_global_stats g0 = global_stats(f), g1;
	struct sl_rule_stats r0 = stats_of_id(f, rule_id), r1;
	enum verdict got = run_len(f, tc, -1, p, len);
	char what[160];
	int bad = 0;

	g1 = global_stats(f);
	r1 = stats_of_id(f, rule_id);
	snprintf(what, sizeof(what), "%s: %s, %u of %u bytes", tc ? "tc" : "xdp",
		 desc, len, p->len);
#define EXPECT(field, delta, expected)					\
	do {								\
		if ((delta) != (expected)) {				\
			print_error("%s: %s moved by %lld, expected %d\n", \
				    what, field, (long long)(delta),	\
				    (int)(expected));			\
			bad = 1;					\
		}							\
	} while (0)
	if (got != want) {
		print_error("%s: verdict %s, expected %s\n", what,
			    verdict_name(got), verdict_name(want));
		bad = 1;
	}
	EXPECT("packets", g1.packets - g0.packets, 1);
	EXPECT("non_ip", g1.non_ip - g0.non_ip, counter == NON_IP);
	EXPECT("malformed", g1.malformed - g0.malformed, counter == MALFORMED);
	EXPECT("fragments", g1.fragments - g0.fragments, counter == FRAGMENTS);
	EXPECT("no_rule", g1.no_rule - g0.no_rule, counter == NO_RULE);
	EXPECT("fail_open", g1.fail_open - g0.fail_open, 0);
	EXPECT("rule dropped", r1.dropped - r0.dropped,
	       counter == RULE && want == DROP);
	EXPECT("rule passed", r1.passed - r0.passed,
	       counter == RULE && want == PASS);
	EXPECT("rule dropped_bytes", r1.dropped_bytes - r0.dropped_bytes,
	       counter == RULE && want == DROP ? len : 0);
#undef EXPECT
	if (bad)
		print_error("%s: counted as %s\n", what, counter_names[counter]);
	return bad;
}

/* Apply the corpus rule and spend the IPv4 and the IPv6 allowance. */
static __u32 corpus_prepare(struct fixture *f)
{
	struct pkt p = {};

	apply(f, corpus_rules);
	c_udp4(&p);
	finish(&p);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	memset(&p, 0, sizeof(p));
	c_udp6(&p);
	finish(&p);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	return id_of(f, "corpus");
}

static void corpus_whole(void **state, bool tc)
{
	struct fixture *f = *state;
	__u32 id = corpus_prepare(f);
	unsigned i, bad = 0;

	for (i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
		const struct corpus_row *row = &corpus[i];
		struct pkt p = {};

		row->build(&p);
		finish(&p);
		if (!runnable(tc, &p, p.len))
			continue;
		bad += check_one(f, tc, id, row->desc, &p, p.len, row->verdict,
				 row->counter);
	}
	assert_int_equal(bad, 0);
}

/* Every packet the parser must read in full, cut at the end of each header
 * but the last and one byte short of every header end: pass, counted
 * malformed. Cuts the test run refuses (see runnable()) are skipped.
 */
static void corpus_truncated(void **state, bool tc)
{
	struct fixture *f = *state;
	__u32 id = corpus_prepare(f);
	unsigned i, j, bad = 0, runs = 0, skipped = 0;

	for (i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
		const struct corpus_row *row = &corpus[i];
		unsigned lens[2 * MAX_CUTS], nr = 0, prev = 0;
		struct pkt p = {};

		if (!row->truncate)
			continue;
		row->build(&p);
		finish(&p);
		assert_true(p.nr_cut >= 2);
		for (j = 0; j < p.nr_cut; j++) {
			unsigned end = p.cut[j];

			if (end - 1 != prev)
				lens[nr++] = end - 1;
			if (j + 1 < p.nr_cut)
				lens[nr++] = end;
			prev = end;
		}
		for (j = 0; j < nr; j++) {
			if (!runnable(tc, &p, lens[j])) {
				skipped += lens[j] >= ETH_HLEN;
				continue;
			}
			bad += check_one(f, tc, id, row->desc, &p, lens[j],
					 PASS, MALFORMED);
			runs++;
		}
	}
	print_message("%u cuts run, %u refused by the %s test run\n", runs,
		      skipped, tc ? "skb" : "xdp");
	assert_true(runs > 100);
	assert_int_equal(bad, 0);
}

static void test_parse_corpus_xdp(void **state) { corpus_whole(state, false); }
static void test_parse_corpus_tc(void **state) { corpus_whole(state, true); }
static void test_parse_truncated_xdp(void **state) { corpus_truncated(state, false); }
static void test_parse_truncated_tc(void **state) { corpus_truncated(state, true); }

/* SL_MAX_IPV6_EXT (bpf/parse.h) is "extension headers skipped before giving
 * up"; only "a chain longer than this is treated as malformed". A chain of
 * exactly 8 must therefore reach the transport header.
 */
static void test_parse_ipv6_chain_of_8_ext_headers_parsed(void **state)
{
	struct fixture *f = *state;
	__u32 id = corpus_prepare(f);
	struct pkt p = {};

	ip6_chain(&p, 8);
	finish(&p);
	assert_int_equal(check_one(f, false, id, "ipv6 8 extension headers + udp",
				   &p, p.len, DROP, RULE), 0);
}

/* ---- 2. classification -------------------------------------------------- */

struct class_row {
	const char *desc;
	const char *src, *dst;
	int l4;
	uint16_t dport;
	const char *rule;	/* NULL: no rule, no_rule counter */
};

/* Which rule's counters moved for one packet (NULL: none, and no_rule
 * moved); fails the test if more than one did.
 */
static const char *matched(struct fixture *f, bool tc, const struct pkt *p)
{
	struct sl_rule *rules = NULL;
	struct sl_rule_stats before[64], after;
	struct sl_global_stats g0 = global_stats(f), g1;
	struct sl_config cfg;
	const char *hit = NULL;
	static char name[32];
	unsigned nr = 0, i;

	assert_int_equal(sl_rules_read_live(&f->in.maps, &rules, &nr, &cfg), 0);
	assert_true(nr <= 64);
	for (i = 0; i < nr; i++)
		before[i] = stats_of_id(f, rules[i].id);
	run_len(f, tc, -1, p, p->len);
	g1 = global_stats(f);
	for (i = 0; i < nr; i++) {
		after = stats_of_id(f, rules[i].id);
		if (after.passed + after.dropped + after.exempt +
		    after.shadow_dropped == before[i].passed +
		    before[i].dropped + before[i].exempt +
		    before[i].shadow_dropped)
			continue;
		if (hit)
			fail_msg("both '%s' and '%s' counted one packet", hit,
				 rules[i].name);
		snprintf(name, sizeof(name), "%s", rules[i].name);
		hit = name;
	}
	free(rules);
	assert_int_equal(g1.no_rule - g0.no_rule, hit ? 0 : 1);
	assert_int_equal(g1.malformed + g1.non_ip + g1.fragments,
			 g0.malformed + g0.non_ip + g0.fragments);
	return hit;
}

static void check_classes(struct fixture *f, const struct class_row *rows,
			  unsigned n)
{
	unsigned i, bad = 0;
	int tc;

	for (tc = 0; tc <= 1; tc++)
		for (i = 0; i < n; i++) {
			const struct class_row *r = &rows[i];
			const char *got;
			struct pkt p;

			mk(&p, r->src, r->dst, r->l4, r->dport, SYN, 0);
			got = matched(f, tc, &p);
			if ((got == NULL) != (r->rule == NULL) ||
			    (got && strcmp(got, r->rule))) {
				print_error("%s: %s: matched %s, expected %s\n",
					    tc ? "tc" : "xdp", r->desc,
					    got ? got : "no rule",
					    r->rule ? r->rule : "no rule");
				bad++;
			}
		}
	assert_int_equal(bad, 0);
}

#define ROWS(a) a, sizeof(a) / sizeof(a[0])
#define UDP IPPROTO_UDP
#define TCP IPPROTO_TCP
#define ICMP IPPROTO_ICMP

static void test_classify_protocol_and_ports(void **state)
{
	static const struct class_row rows[] = {
		{ "udp 53", "192.0.2.1", "203.0.113.1", UDP, 53, "dns" },
		{ "udp6 53", "2001:db8::1", "2001:db8::2", UDP, 53, "dns" },
		{ "tcp 53", "192.0.2.1", "203.0.113.1", TCP, 53, NULL },
		{ "tcp 80", "192.0.2.1", "203.0.113.1", TCP, 80, "web" },
		{ "udp 80", "192.0.2.1", "203.0.113.1", UDP, 80, NULL },
		{ "tcp 7999", "192.0.2.1", "203.0.113.1", TCP, 7999, NULL },
		{ "tcp 8000", "192.0.2.1", "203.0.113.1", TCP, 8000, "range" },
		{ "tcp 8050", "192.0.2.1", "203.0.113.1", TCP, 8050, "range" },
		{ "tcp6 8100", "2001:db8::1", "2001:db8::2", TCP, 8100, "range" },
		{ "tcp 8101", "192.0.2.1", "203.0.113.1", TCP, 8101, NULL },
		{ "udp 8050", "192.0.2.1", "203.0.113.1", UDP, 8050, NULL },
		{ "icmp", "192.0.2.1", "203.0.113.1", ICMP, 0, "ping" },
		{ "icmpv6", "2001:db8::1", "2001:db8::2", ICMP, 0, "ping" },
		{ "udp 7, protocol any", "192.0.2.1", "203.0.113.1", UDP, 7, "any-7" },
		{ "tcp 7, protocol any", "192.0.2.1", "203.0.113.1", TCP, 7, "any-7" },
		{ "tcp 0", "192.0.2.1", "203.0.113.1", TCP, 0, NULL },
		{ "udp 65535", "192.0.2.1", "203.0.113.1", UDP, 65535, "high" },
		{ "udp 65534", "192.0.2.1", "203.0.113.1", UDP, 65534, NULL },
	};
	struct fixture *f = *state;

	apply(f, "rules:\n"
		 "  - {name: dns, protocol: udp, ports: 53, limit: 3}\n"
		 "  - {name: web, protocol: tcp, ports: 80, limit: 3}\n"
		 "  - {name: range, protocol: tcp, ports: 8000-8100, limit: 3}\n"
		 "  - {name: ping, protocol: icmp, limit: 3}\n"
		 "  - {name: any-7, ports: 7, limit: 3}\n"
		 "  - {name: high, protocol: udp, ports: 65535, limit: 3}\n");
	check_classes(f, ROWS(rows));
}

static void test_classify_source_and_destination_prefixes(void **state)
{
	static const struct class_row rows[] = {
		{ "v4 source in /24", "198.51.100.7", "192.0.2.1", UDP, 1000, "src4" },
		{ "v4 source outside /24", "198.51.101.7", "192.0.2.1", UDP, 1000, NULL },
		{ "v4 destination host", "192.0.2.1", "203.0.113.7", UDP, 1000, "dst4" },
		{ "v4 destination next host", "192.0.2.1", "203.0.113.8", TCP, 1000, NULL },
		{ "v4 both: first rule wins", "198.51.100.7", "203.0.113.7", UDP, 1000, "src4" },
		{ "v6 source in /48", "2001:db8:aa:1::5", "2001:db8::1", UDP, 1000, "src6" },
		{ "v6 source outside /48", "2001:db8:ab::5", "2001:db8::1", UDP, 1000, NULL },
		{ "v6 destination in /64", "2001:db8::1", "2001:db8:bb::9", TCP, 1000, "dst6" },
		{ "v6 destination outside /64", "2001:db8::1", "2001:db8:bb:1::9", UDP, 1000, NULL },
		{ "v4 source and destination", "10.1.1.1", "10.255.3.3", UDP, 1000, "both" },
		{ "v4 destination outside", "10.1.1.1", "10.254.3.3", UDP, 1000, NULL },
		{ "v4 source outside", "11.1.1.1", "10.255.3.3", UDP, 1000, NULL },
		{ "v4 in /16 not /24", "198.51.7.7", "192.0.2.1", TCP, 22, "wide" },
		{ "v4 in /24 and /16, tcp", "198.51.100.7", "192.0.2.1", TCP, 22, "wide" },
	};
	struct fixture *f = *state;

	/* "wide" is only reachable for TCP inside the /24 through the /24's
	 * LPM entry: the longest match must carry covering prefixes' rules.
	 */
	apply(f, "rules:\n"
		 "  - {name: src4, protocol: udp, source: 198.51.100.0/24, limit: 3}\n"
		 "  - {name: dst4, destination: 203.0.113.7, protocol: udp, limit: 3}\n"
		 "  - {name: src6, source: '2001:db8:aa::/48', limit: 3}\n"
		 "  - {name: dst6, destination: '2001:db8:bb::/64', limit: 3}\n"
		 "  - {name: both, source: 10.0.0.0/8, destination: 10.255.0.0/16, limit: 3}\n"
		 "  - {name: wide, protocol: tcp, source: 198.51.0.0/16, limit: 3}\n");
	check_classes(f, ROWS(rows));
}

static void test_classify_priority_first_match_wins(void **state)
{
	static const struct class_row rows[] = {
		{ "narrow beats earlier broad", "10.1.2.3", "192.0.2.1", UDP, 53, "narrow" },
		{ "outside narrow's source", "192.0.2.9", "192.0.2.1", UDP, 53, "broad" },
		{ "outside narrow's port", "10.1.2.3", "192.0.2.1", UDP, 54, "broad" },
		{ "only wide matches tcp", "10.1.2.3", "192.0.2.1", TCP, 80, "wide" },
		{ "equal priority: file order", "192.0.2.9", "192.0.2.1", TCP, 80, "tie-a" },
		{ "icmp from 10/8", "10.1.2.3", "192.0.2.1", ICMP, 0, "wide" },
	};
	static const struct class_row swapped[] = {
		{ "narrow now after broad", "10.1.2.3", "192.0.2.1", UDP, 53, "broad" },
		{ "tie order follows file", "192.0.2.9", "192.0.2.1", TCP, 80, "tie-b" },
	};
	struct fixture *f = *state;
	struct sl_rule_stats narrow, broad;

	apply(f, "rules:\n"
		 "  - {name: broad, priority: 20, protocol: udp, limit: 3}\n"
		 "  - {name: narrow, priority: 10, protocol: udp, ports: 53, source: 10.0.0.0/8, limit: 3}\n"
		 "  - {name: wide, priority: 30, source: 10.0.0.0/8, limit: 3}\n"
		 "  - {name: tie-a, priority: 40, protocol: tcp, limit: 3}\n"
		 "  - {name: tie-b, priority: 40, protocol: tcp, limit: 3}\n");
	check_classes(f, ROWS(rows));

	apply(f, "rules:\n"
		 "  - {name: broad, priority: 20, protocol: udp, limit: 3}\n"
		 "  - {name: narrow, priority: 30, protocol: udp, ports: 53, source: 10.0.0.0/8, limit: 3}\n"
		 "  - {name: tie-b, priority: 40, protocol: tcp, limit: 3}\n"
		 "  - {name: tie-a, priority: 40, protocol: tcp, limit: 3}\n");
	narrow = stats_of(f, "narrow");
	broad = stats_of(f, "broad");
	check_classes(f, ROWS(swapped));
	/* the two overlapping rules: only the winner's counters move */
	assert_int_equal(stats_of(f, "narrow").passed + stats_of(f, "narrow").dropped,
			 narrow.passed + narrow.dropped);
	assert_int_equal(stats_of(f, "broad").passed + stats_of(f, "broad").dropped,
			 broad.passed + broad.dropped + 2);
}

struct exempt_row {
	const char *desc;
	const char *src;
	uint16_t dport;
	unsigned sends;
	const char *rule;
	unsigned exempt, passed, dropped;	/* rule counter deltas */
};

static void test_classify_exempt_never_dropped(void **state)
{
	static const struct exempt_row rows[] = {
		{ "in api's /8, inside web's /24", "10.1.2.3", 53, 5, "api", 5, 0, 0 },
		{ "in api's /8", "10.9.9.9", 53, 5, "api", 5, 0, 0 },
		{ "in api's v6 /48", "2001:db8:e::1", 53, 4, "api", 4, 0, 0 },
		{ "api: not exempt", "192.0.2.1", 53, 3, "api", 0, 1, 2 },
		{ "api: v6 not exempt", "2001:db8:f::1", 53, 3, "api", 0, 1, 2 },
		{ "web exempts its /24", "10.1.2.200", 54, 4, "web", 4, 0, 0 },
		{ "web: api's /8 is not web's", "10.9.9.9", 54, 3, "web", 0, 1, 2 },
		{ "other exempts nothing", "10.1.2.3", 55, 3, "other", 0, 1, 2 },
	};
	struct fixture *f = *state;
	unsigned i, j, bad = 0;

	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 1,\n"
		 "     exempt: [10.0.0.0/8, '2001:db8:e::/48']}\n"
		 "  - {name: web, protocol: udp, ports: 54, limit: 1, exempt: [10.1.2.0/24]}\n"
		 "  - {name: other, protocol: udp, ports: 55, limit: 1}\n");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct exempt_row *r = &rows[i];
		bool v6 = strchr(r->src, ':');
		struct sl_rule_stats s0 = stats_of(f, r->rule), s1;
		unsigned drops = 0;
		struct pkt p;

		mk(&p, r->src, v6 ? "2001:db8::53" : "192.0.2.53", UDP,
		   r->dport, 0, 0);
		for (j = 0; j < r->sends; j++)
			drops += run(f, &p) == DROP;
		s1 = stats_of(f, r->rule);
		if (s1.exempt - s0.exempt != r->exempt ||
		    s1.passed - s0.passed != r->passed ||
		    s1.dropped - s0.dropped != r->dropped ||
		    drops != r->dropped) {
			print_error("%s: exempt +%llu passed +%llu dropped +%llu (verdict drops %u), expected +%u +%u +%u\n",
				    r->desc,
				    (unsigned long long)(s1.exempt - s0.exempt),
				    (unsigned long long)(s1.passed - s0.passed),
				    (unsigned long long)(s1.dropped - s0.dropped),
				    drops, r->exempt, r->passed, r->dropped);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void test_classify_no_match_counts_no_rule(void **state)
{
	struct fixture *f = *state;
	struct sl_global_stats g0, g1;
	struct pkt p;

	/* a fresh instance has no rules: every IP packet is no_rule */
	g0 = global_stats(f);
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	assert_int_equal(run(f, &p), PASS);
	mk(&p, "2001:db8::1", "2001:db8::2", TCP, 443, SYN, 0);
	assert_int_equal(run(f, &p), PASS);
	g1 = global_stats(f);
	assert_int_equal(g1.no_rule - g0.no_rule, 2);
	assert_int_equal(g1.packets - g0.packets, 2);

	apply(f, "rules:\n  - {name: dns, protocol: udp, ports: 53, limit: 1}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 5353, 0, 0);
	assert_null(matched(f, false, &p));
	mk(&p, "192.0.2.1", "203.0.113.1", ICMP, 0, 0, 0);
	assert_null(matched(f, true, &p));
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	assert_non_null(matched(f, false, &p));
	assert_string_equal(matched(f, true, &p), "dns");
}

/* ---- 3. enforcement under the model clock ------------------------------ */

/* Send one packet every `gap` ms from `start` for `windows` windows of
 * `window` ms, alternating over `ncpus` CPUs (0: anywhere); count accepts
 * per window into acc[].
 */
static void send_steady(struct fixture *f, const struct pkt *p, __u64 start,
			unsigned gap, unsigned window, unsigned windows,
			int ncpus, unsigned *acc)
{
	unsigned t, n = 0;

	memset(acc, 0, windows * sizeof(*acc));
	for (t = 0; t < window * windows; t += gap, n++) {
		int cpu = ncpus ? (int)(n % ncpus) : -1;

		set_time(f, start + t);
		if (run_len(f, false, cpu, p, p->len) == PASS)
			acc[t / window]++;
	}
}

static void test_limit_double_rate_cut_to_limit(void **state)
{
	struct fixture *f = *state;
	unsigned acc[6], w;
	struct sl_rule_stats s;
	struct pkt p;

	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 10, window: 1s, slices: 10}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	/* 20 per window: twice the limit */
	send_steady(f, &p, T0, 50, 1000, 6, 0, acc);
	for (w = 0; w < 6; w++)
		if (acc[w] != 10)
			fail_msg("window %u: %u accepted, expected 10", w, acc[w]);
	s = stats_of(f, "api");
	assert_int_equal(s.passed, 60);
	assert_int_equal(s.dropped, 60);
}

static void test_limit_at_or_below_limit_never_dropped(void **state)
{
	static const unsigned gaps[] = { 100, 111, 250 };	/* 10, 9, 4 /s */
	struct fixture *f = *state;
	unsigned acc[5], i;
	__u64 start = T0;
	struct pkt p;

	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 10, window: 1s}\n");
	for (i = 0; i < 3; i++) {
		char src[32];

		snprintf(src, sizeof(src), "192.0.2.%u", i + 1);
		mk(&p, src, "203.0.113.1", UDP, 53, 0, 0);
		send_steady(f, &p, start, gaps[i], 1000, 5, 0, acc);
		start += 5000;
	}
	assert_int_equal(stats_of(f, "api").dropped, 0);
	assert_int_equal(stats_of(f, "api").passed, 50 + 46 + 20);
}

static void test_limit_window_slides_with_model_clock(void **state)
{
	struct fixture *f = *state;
	struct pkt p;

	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 3, window: 10s}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	set_time(f, T0);
	assert_int_equal(run(f, &p), PASS);
	set_time(f, T0 + 4000);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	set_time(f, T0 + 9999);
	assert_int_equal(run(f, &p), DROP);
	/* the accept at T0 leaves the window; the two at T0+4s do not */
	set_time(f, T0 + 10000);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	set_time(f, T0 + 13999);
	assert_int_equal(run(f, &p), DROP);
	set_time(f, T0 + 14000);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	/* a whole window of silence: the full allowance again */
	set_time(f, T0 + 40000);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
}

static void test_limit_shadow_counts_never_drops(void **state)
{
	struct fixture *f = *state;
	struct sl_rule_stats s;
	unsigned i;
	struct pkt p;

	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 3, action: shadow}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 64);
	for (i = 0; i < 10; i++)
		assert_int_equal(run_len(f, i % 2, -1, &p, p.len), PASS);
	s = stats_of(f, "api");
	assert_int_equal(s.passed, 3);
	assert_int_equal(s.shadow_dropped, 7);
	assert_int_equal(s.dropped, 0);
	assert_int_equal(s.dropped_bytes, 0);
	assert_int_equal(s.passed_bytes, 10 * 64);
}

static void test_limit_syn_counts_only_syn_without_ack(void **state)
{
	struct fixture *f = *state;
	struct sl_rule_stats s;
	struct pkt syn, ack, synack, fin, rst;
	unsigned i;

	apply(f, "rules:\n"
		 "  - {name: conn, protocol: tcp, ports: 443, limit: 2, unit: syn}\n");
	mk(&syn, "192.0.2.1", "203.0.113.1", TCP, 443, SYN, 0);
	mk(&ack, "192.0.2.1", "203.0.113.1", TCP, 443, ACK | PSH, 200);
	mk(&synack, "192.0.2.1", "203.0.113.1", TCP, 443, SYN | ACK, 0);
	mk(&fin, "192.0.2.1", "203.0.113.1", TCP, 443, FIN | ACK, 0);
	mk(&rst, "192.0.2.1", "203.0.113.1", TCP, 443, RST, 0);
	/* traffic on established connections spends nothing */
	for (i = 0; i < 5; i++)
		assert_int_equal(run(f, &ack), PASS);
	assert_int_equal(run(f, &synack), PASS);
	assert_int_equal(run(f, &syn), PASS);
	assert_int_equal(run(f, &syn), PASS);
	assert_int_equal(run(f, &syn), DROP);
	/* over the SYN limit: everything else still passes */
	assert_int_equal(run(f, &ack), PASS);
	assert_int_equal(run(f, &synack), PASS);
	assert_int_equal(run(f, &fin), PASS);
	assert_int_equal(run(f, &rst), PASS);
	assert_int_equal(run_len(f, true, -1, &ack, ack.len), PASS);
	assert_int_equal(run_len(f, true, -1, &syn, syn.len), DROP);
	s = stats_of(f, "conn");
	assert_int_equal(s.dropped, 2);
	assert_int_equal(s.passed, 5 + 1 + 2 + 5);
}

static void test_limit_bytes_counts_bytes(void **state)
{
	struct fixture *f = *state;
	struct sl_rule_stats s;
	struct pkt p, small;

	apply(f, "rules:\n"
		 "  - {name: bulk, protocol: udp, ports: 53, limit: 300, unit: bytes, window: 10s}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 100);
	mk(&small, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 60);
	assert_int_equal(p.len, 100);
	/* 300 bytes: three 100-byte frames, not 300 packets */
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run_len(f, true, -1, &p, p.len), PASS);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	assert_int_equal(run(f, &small), DROP);
	s = stats_of(f, "bulk");
	assert_int_equal(s.passed, 3);
	assert_int_equal(s.passed_bytes, 300);
	assert_int_equal(s.dropped, 2);
	assert_int_equal(s.dropped_bytes, 160);
	/* the window moves on: the bytes are available again */
	set_time(f, T0 + 10000);
	assert_int_equal(run(f, &small), PASS);
}

/* "Reject the request that goes over the limit" (design study): a frame
 * whose bytes would take the window past the limit is dropped, so the
 * bytes accepted in a window never exceed the limit.
 */
static void test_limit_bytes_never_exceed_limit(void **state)
{
	static const struct {
		unsigned limit, frame;
	} rows[] = {
		{ 250, 100 },		/* 2 fit; a third makes 300 */
		{ 100, 500 },		/* none fits */
		{ 1000, 64 },		/* 15 fit (960); a 16th makes 1024 */
	};
	struct fixture *f = *state;
	unsigned i, j, bad = 0;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		unsigned accepted = 0;
		char yaml[200];
		struct pkt p;

		snprintf(yaml, sizeof(yaml),
			 "rules:\n  - {name: bulk, protocol: udp, ports: 53, limit: %u, unit: bytes, window: 10s}\n",
			 rows[i].limit);
		apply(f, yaml);
		mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, rows[i].frame);
		set_time(f, T0 + i * 100000);
		for (j = 0; j < 20; j++)
			accepted += run(f, &p) == PASS ? p.len : 0;
		if (accepted > rows[i].limit) {
			print_error("limit %u bytes, %u-byte frames: %u bytes accepted in one window\n",
				    rows[i].limit, rows[i].frame, accepted);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void test_limit_key_ipv4_prefix_24_shares_allowance(void **state)
{
	static const struct {
		const char *src;
		uint16_t dport;
		enum verdict want;
	} rows[] = {
		{ "192.0.2.1", 3000, PASS }, { "192.0.2.2", 3000, PASS },
		{ "192.0.2.1", 3000, PASS }, { "192.0.2.200", 3000, PASS },
		{ "192.0.2.2", 3000, DROP }, { "192.0.2.77", 3000, DROP },
		{ "192.0.3.1", 3000, PASS },		/* the next /24 */
		{ "2001:db8:1:2::1", 3000, PASS }, { "2001:db8:1:3::1", 3000, PASS },
		{ "2001:db8:1:ffff::1", 3000, PASS }, { "2001:db8:1:4::9", 3000, PASS },
		{ "2001:db8:1:5::9", 3000, DROP },	/* same /48 */
		{ "2001:db8:2::1", 3000, PASS },
		/* default key /32: separate allowances of 1 */
		{ "192.0.2.1", 3001, PASS }, { "192.0.2.2", 3001, PASS },
		{ "192.0.2.1", 3001, DROP },
	};
	struct fixture *f = *state;
	unsigned i;

	apply(f, "rules:\n"
		 "  - {name: net, protocol: udp, ports: 3000, limit: 4,\n"
		 "     key: {ipv4_prefix: 24, ipv6_prefix: 48}}\n"
		 "  - {name: host, protocol: udp, ports: 3001, limit: 1}\n");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool v6 = strchr(rows[i].src, ':');
		struct pkt p;

		mk(&p, rows[i].src, v6 ? "2001:db8::53" : "203.0.113.1", UDP,
		   rows[i].dport, 0, 0);
		if (run(f, &p) != rows[i].want)
			fail_msg("row %u: %s -> %u: expected %s", i, rows[i].src,
				 rows[i].dport, verdict_name(rows[i].want));
	}
	/* 192.0.2.0/24, 192.0.3.0/24, 2001:db8:1::/48, 2001:db8:2::/48 */
	assert_int_equal(clients_of(f, id_of(f, "net")), 4);
	assert_int_equal(clients_of(f, id_of(f, "host")), 2);
}

/* A per-address rule that continues into a per-/24 aggregate rule: each
 * address keeps its own allowance, and the /24 as a whole its own, so a
 * flood that rotates addresses inside one prefix is still limited. A drop
 * by the first rule does not count against the second.
 */
static void test_limit_continue_stacks_prefix_rule_on_address_rule(void **state)
{
	struct fixture *f = *state;
	struct sl_rule_stats host, net;
	unsigned i, passed = 0;
	char src[32];
	struct pkt p;

	apply(f, "rules:\n"
		 "  - {name: host, protocol: udp, ports: 3000, limit: 5, continue: true}\n"
		 "  - {name: net, protocol: udp, ports: 3000, limit: 8,\n"
		 "     key: {ipv4_prefix: 24}}\n"
		 "  - {name: other, protocol: udp, ports: 3000-3001, limit: 1}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 3000, 0, 0);
	for (i = 0; i < 10; i++)
		passed += run(f, &p) == PASS;
	assert_int_equal(passed, 5);		/* host's limit, 5 of net's 8 */
	mk(&p, "192.0.2.2", "203.0.113.1", UDP, 3000, 0, 0);
	for (passed = 0, i = 0; i < 10; i++)
		passed += run(f, &p) == PASS;
	assert_int_equal(passed, 3);		/* what the /24 has left */
	/* a rotating flood: one packet from each of 100 addresses */
	for (passed = 0, i = 0; i < 100; i++) {
		snprintf(src, sizeof(src), "198.51.100.%u", i + 1);
		mk(&p, src, "203.0.113.1", UDP, 3000, 0, 0);
		passed += run(f, &p) == PASS;
	}
	assert_int_equal(passed, 8);		/* the /24's limit */
	host = stats_of(f, "host");
	net = stats_of(f, "net");
	assert_int_equal(host.passed, 5 + 5 + 100);
	assert_int_equal(host.dropped, 5 + 5);
	assert_int_equal(net.passed, 5 + 3 + 8);
	assert_int_equal(net.dropped, 2 + 92);
	/* net does not continue: the third rule never sees these packets */
	assert_int_equal(stats_of(f, "other").passed, 0);
}

/* The clock stepping back (an NTP step of TAI; the model clock here)
 * must not forget the counts: an abusive client stays limited. Neither a
 * step back nor forward may reject a client well within its limit.
 */
static void test_limit_clock_steps_keep_counts(void **state)
{
	static const char *const algos[] = {
		"sliding", "sliding-plain", "fixed", "sliding-log",
		"sliding-counter", "token-bucket",
	};
	struct fixture *f = *state;
	unsigned a, i, passed;
	char yaml[256];
	struct pkt abusive, steady;
	__u64 t;

	mk(&abusive, "192.0.2.66", "203.0.113.1", UDP, 3000, 0, 0);
	mk(&steady, "192.0.2.77", "203.0.113.1", UDP, 3000, 0, 0);
	for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
		snprintf(yaml, sizeof(yaml),
			 "rules:\n  - {name: %s, protocol: udp, ports: 3000, "
			 "limit: 10, window: 60s, algorithm: %s}\n", algos[a],
			 algos[a]);
		apply(f, yaml);
		t = T0 + 30000;
		set_time(f, t);
		for (passed = 0, i = 0; i < 20; i++)
			passed += run(f, &abusive) == PASS;
		if (passed != 10)
			fail_msg("%s: %u of 20 passed before the step", algos[a], passed);
		set_time(f, t - 5000);	/* back 5 s */
		if (run(f, &abusive) != DROP)
			fail_msg("%s: a step back of 5 s forgot the abusive client's count",
				 algos[a]);
		/* the count itself, not only the kernel's cached verdict */
		{
			struct sl_rule rule = live_rule(f, algos[a]);
			struct sl_client_view v;
			struct sl_client_key key;
			struct sl_addr who;

			assert_int_equal(sl_parse_addr("192.0.2.66", &who), 0);
			sl_client_key_make(&key, &rule, &who, htons(3000));
			assert_int_equal(sl_client_view_read(&f->in.maps, &rule, &key,
							     t - 5000, &v), 0);
			if (v.used < 10)
				fail_msg("%s: after a step back of 5 s the count is %llu, not 10",
					 algos[a], (unsigned long long)v.used);
		}
		/* one request every 12 s (half the limit rate) for 3 minutes,
		 * with a step back of 3 s and, later, forward of 3 s
		 */
		for (i = 0; i < 15; i++) {
			__u64 at = t + 1000 + i * 12000;

			if (i >= 5)
				at -= 3000;
			if (i >= 10)
				at += 6000;
			set_time(f, at);
			if (run(f, &steady) != PASS)
				fail_msg("%s: request %u of a client at half its limit "
					 "rejected after a clock step", algos[a], i);
		}
	}
}

static void test_limit_per_port_keys_separate_ports(void **state)
{
	static const struct {
		uint16_t dport;
		enum verdict want;
	} rows[] = {
		{ 1000, PASS }, { 1000, PASS }, { 1000, DROP },
		{ 1001, PASS }, { 1001, PASS }, { 1001, DROP },	/* own count */
		{ 1010, PASS },
		{ 2000, PASS }, { 2000, PASS }, { 2001, DROP },	/* shared */
	};
	struct fixture *f = *state;
	unsigned i;

	apply(f, "rules:\n"
		 "  - {name: per-port, protocol: udp, ports: 1000-1010, limit: 2,\n"
		 "     key: {per_port: true}}\n"
		 "  - {name: shared, protocol: udp, ports: 2000-2010, limit: 2}\n");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pkt p;

		mk(&p, "192.0.2.1", "203.0.113.1", UDP, rows[i].dport, 0, 0);
		if (run(f, &p) != rows[i].want)
			fail_msg("row %u: port %u: expected %s", i,
				 rows[i].dport, verdict_name(rows[i].want));
	}
	assert_int_equal(clients_of(f, id_of(f, "per-port")), 3);
	assert_int_equal(clients_of(f, id_of(f, "shared")), 1);
}

/* ---- 4. across CPUs ----------------------------------------------------- */

static void test_limit_two_cpus_node_total_at_limit(void **state)
{
	struct fixture *f = *state;
	struct sl_rule_stats *per_cpu;
	unsigned acc[5], w, i;
	__u32 id;
	struct pkt p;

	if (f->in.maps.nr_cpus < 2 || CPU_COUNT(&sl_test_initial_cpus) < 2 ||
	    !CPU_ISSET(0, &sl_test_initial_cpus) || !CPU_ISSET(1, &sl_test_initial_cpus))
		skip();
	apply(f, "rules:\n"
		 "  - {name: api, protocol: udp, ports: 53, limit: 10, window: 1s, slices: 10}\n");
	mk(&p, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	/* 2x the limit, alternating CPU 0 and 1 */
	send_steady(f, &p, T0, 50, 1000, 5, 2, acc);
	for (w = 0; w < 5; w++)
		if (acc[w] != 10)
			fail_msg("window %u: %u accepted on 2 CPUs, expected 10",
				 w, acc[w]);

	/* a burst at one instant, alternating CPUs: still the limit */
	set_time(f, T0 + 20000);
	for (i = 0, w = 0; i < 40; i++)
		w += run_len(f, false, i & 1, &p, p.len) == PASS;
	assert_int_equal(w, 10);

	/* both CPUs really counted: each holds part of the accepts */
	id = id_of(f, "api");
	per_cpu = calloc(f->in.maps.nr_cpus, sizeof(*per_cpu));
	assert_non_null(per_cpu);
	assert_int_equal(bpf_map_lookup_elem(f->in.maps.rule_stats, &id, per_cpu), 0);
	assert_true(per_cpu[0].passed >= 20);
	assert_true(per_cpu[1].passed >= 20);
	assert_int_equal(per_cpu[0].passed + per_cpu[1].passed, 60);
	free(per_cpu);
}

/* Every CPU floods one client at the same instant (the model clock stands
 * still), started together: the one shared state lets through at most one
 * unit per CPU beyond the limit (include/sl_algo.h), and never fewer than
 * the limit (no accept is lost).
 */
#define SL_RACE_LIMIT	20000

struct racer {
	struct fixture *f;
	const struct pkt *p;
	pthread_barrier_t *start;
	int cpu;
	__u32 packets;
	int err;
};

static void *race_one_cpu(void *arg)
{
	struct racer *r = arg;
	__u32 retval, done;

	pthread_barrier_wait(r->start);
	/* short runs, so that every CPU is inside the program at once */
	for (done = 0; done < r->packets && !r->err; done += 64)
		r->err = sl_instance_run(&r->f->in, false, r->cpu, r->p->b,
					 r->p->len, 64, &retval, NULL);
	return NULL;
}

static void test_limit_concurrent_cpus_at_most_one_extra_each(void **state)
{
	struct fixture *f = *state;
	struct racer *r;
	pthread_t *th;
	pthread_barrier_t start;
	struct sl_rule_stats s;
	struct pkt p;
	int ncpu = 0, cpu, i;
	__u64 sent = 0;

	r = calloc(CPU_SETSIZE, sizeof(*r));
	th = calloc(CPU_SETSIZE, sizeof(*th));
	assert_non_null(r);
	assert_non_null(th);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &sl_test_initial_cpus))
			r[ncpu++].cpu = cpu;
	if (ncpu < 2)
		skip();
	apply(f, "rules:\n"
		 "  - {name: race, protocol: udp, ports: 53, limit: 20000, window: 1h}\n");
	mk(&p, "192.0.2.77", "203.0.113.1", UDP, 53, 0, 0);
	assert_int_equal(pthread_barrier_init(&start, NULL, ncpu), 0);
	for (i = 0; i < ncpu; i++) {
		r[i].f = f;
		r[i].p = &p;
		r[i].start = &start;
		/* twice the limit in all, rounded up to whole runs of 64 */
		r[i].packets = (2 * SL_RACE_LIMIT / ncpu + 63) / 64 * 64;
		sent += r[i].packets;
		assert_int_equal(pthread_create(&th[i], NULL, race_one_cpu, &r[i]), 0);
	}
	for (i = 0; i < ncpu; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(r[i].err, 0);
	}
	pthread_barrier_destroy(&start);
	s = stats_of(f, "race");
	/* one JSON line: make bench-cpus records it */
	print_message("{\"cpus\": %d, \"sent\": %llu, \"passed\": %llu, "
		      "\"limit\": %d}\n", ncpu, (unsigned long long)sent,
		      (unsigned long long)s.passed, SL_RACE_LIMIT);
	assert_int_equal(s.passed + s.dropped, sent);
	assert_true(s.passed >= (__u64)SL_RACE_LIMIT);
	assert_true(s.passed <= (__u64)SL_RACE_LIMIT + ncpu - 1);
	free(th);
	free(r);
}

/* ---- 5. atomic rule replacement ----------------------------------------- */

static void test_apply_replace_keeps_ids_and_clients(void **state)
{
	struct fixture *f = *state;
	struct pkt x53, x54;
	struct sl_rule_stats s;
	__u32 keep_id, gone_id, fresh_id, late_id;
	unsigned i;

	apply(f, "rules:\n"
		 "  - {name: keep, protocol: udp, ports: 53, limit: 3, window: 1h}\n"
		 "  - {name: gone, protocol: udp, ports: 54, limit: 3, window: 1h}\n");
	mk(&x53, "192.0.2.1", "203.0.113.1", UDP, 53, 0, 0);
	mk(&x54, "192.0.2.1", "203.0.113.1", UDP, 54, 0, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(run(f, &x53), PASS);
	assert_int_equal(run(f, &x53), DROP);	/* caches "blocked" */
	assert_int_equal(run(f, &x54), PASS);
	assert_int_equal(run(f, &x54), PASS);
	keep_id = id_of(f, "keep");
	gone_id = id_of(f, "gone");
	assert_int_not_equal(keep_id, gone_id);
	assert_int_equal(clients_of(f, gone_id), 1);

	/* B: keep moves down and gets a larger limit; gone is removed */
	set_time(f, T0 + 1000);
	apply(f, "rules:\n"
		 "  - {name: fresh, protocol: udp, ports: 55, limit: 3, window: 1h}\n"
		 "  - {name: keep, protocol: udp, ports: 53, limit: 5, window: 1h}\n");
	assert_int_equal(id_of(f, "keep"), keep_id);
	assert_int_equal(live_rule(f, "keep").limit, 5);
	fresh_id = id_of(f, "fresh");
	assert_int_not_equal(fresh_id, keep_id);
	/* a new rule never takes the id of a live or just removed one */
	assert_int_not_equal(fresh_id, gone_id);
	assert_int_equal(clients_of(f, gone_id), 0);
	assert_int_equal(clients_of(f, keep_id), 1);
	s = stats_of_id(f, keep_id);
	assert_int_equal(s.passed, 3);
	assert_int_equal(s.dropped, 1);
	s = stats_of_id(f, fresh_id);
	assert_int_equal(s.passed + s.dropped + s.passed_bytes, 0);
	/* the client's 3 still count against the new 5, and the cached
	 * "blocked" of the old rule set is void
	 */
	assert_int_equal(run(f, &x53), PASS);
	assert_int_equal(run(f, &x53), PASS);
	assert_int_equal(run(f, &x53), DROP);
	/* port 54 has no rule now */
	assert_null(matched(f, false, &x54));

	/* C: a rule on port 54 again: new stats, a full allowance */
	apply(f, "rules:\n"
		 "  - {name: fresh, protocol: udp, ports: 55, limit: 3, window: 1h}\n"
		 "  - {name: keep, protocol: udp, ports: 53, limit: 5, window: 1h}\n"
		 "  - {name: late, protocol: udp, ports: 54, limit: 3, window: 1h}\n");
	/* ids are handed out lowest free first, so late takes gone's old
	 * id: the case where stale stats or client counts would show
	 */
	late_id = id_of(f, "late");
	s = stats_of_id(f, late_id);
	assert_int_equal(s.passed + s.dropped + s.exempt + s.passed_bytes, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(run(f, &x54), PASS);
	assert_int_equal(run(f, &x54), DROP);
	assert_int_equal(id_of(f, "keep"), keep_id);
	assert_int_equal(run(f, &x53), DROP);	/* keep's state survived C */
}

static void test_apply_1024_rules_classify(void **state)
{
	static const struct {
		unsigned from;		/* whose source; 9999: outside 10/8 */
		unsigned port;
		int rule;		/* -1: no rule */
	} rows[] = {
		{ 0, 10000, 0 }, { 1, 10001, 1 }, { 63, 11022, 63 },
		{ 64, 10064, 64 }, { 65, 11022, 65 }, { 511, 10511, 511 },
		{ 512, 11000, 512 }, { 1000, 11000, 1000 }, { 1022, 11022, 1022 },
		{ 1022, 11021, 1023 },	/* below its range: the catch-all */
		{ 700, 10699, 1023 },
		{ 9999, 10500, 1023 }, { 9999, 11022, 1023 },
	};
	struct fixture *f = *state;
	size_t cap = 128 * SL_MAX_RULES, len = 0;
	char *yaml = malloc(cap), name[16], src[32];
	struct sl_rule *live = NULL;
	struct sl_config cfg;
	unsigned i, nr = 0, bad = 0;

	/* rule i < 1023: udp from 10.(i/256).(i%256).0/24 to ports
	 * 10000+i..11022, so port 11022 is in all of their ranges and only
	 * the source tells them apart; rule 1023: every udp packet.
	 */
	assert_non_null(yaml);
	len += snprintf(yaml + len, cap - len, "rules:\n");
	for (i = 0; i < SL_MAX_RULES - 1; i++)
		len += snprintf(yaml + len, cap - len,
				"  - {name: r%04u, protocol: udp, ports: %u-11022, source: 10.%u.%u.0/24, limit: 3}\n",
				i, 10000 + i, i >> 8, i & 255);
	len += snprintf(yaml + len, cap - len,
			"  - {name: r1023, protocol: udp, limit: 3}\n");
	assert_true(len < cap);
	apply(f, yaml);
	free(yaml);
	assert_int_equal(sl_rules_read_live(&f->in.maps, &live, &nr, &cfg), 0);
	assert_int_equal(nr, SL_MAX_RULES);
	assert_int_equal(cfg.nr_rules, SL_MAX_RULES);
	assert_true(cfg.has_src);
	free(live);

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sl_rule_stats s0, s1;
		__u32 id;
		struct pkt p;

		if (rows[i].from == 9999)
			snprintf(src, sizeof(src), "192.0.2.1");
		else
			snprintf(src, sizeof(src), "10.%u.%u.9",
				 rows[i].from >> 8, rows[i].from & 255);
		snprintf(name, sizeof(name), "r%04d", rows[i].rule);
		id = id_of(f, name);
		s0 = stats_of_id(f, id);
		mk(&p, src, "203.0.113.1", UDP, rows[i].port, 0, 0);
		assert_int_equal(run(f, &p), PASS);
		s1 = stats_of_id(f, id);
		if (s1.passed != s0.passed + 1) {
			print_error("%s -> %u: %s did not count it\n", src,
				    rows[i].port, name);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_parse_corpus_xdp),
		T(test_parse_corpus_tc),
		T(test_parse_truncated_xdp),
		T(test_parse_truncated_tc),
		T(test_parse_ipv6_chain_of_8_ext_headers_parsed),
		T(test_classify_protocol_and_ports),
		T(test_classify_source_and_destination_prefixes),
		T(test_classify_priority_first_match_wins),
		T(test_classify_exempt_never_dropped),
		T(test_classify_no_match_counts_no_rule),
		T(test_limit_double_rate_cut_to_limit),
		T(test_limit_at_or_below_limit_never_dropped),
		T(test_limit_window_slides_with_model_clock),
		T(test_limit_shadow_counts_never_drops),
		T(test_limit_syn_counts_only_syn_without_ack),
		T(test_limit_bytes_counts_bytes),
		T(test_limit_bytes_never_exceed_limit),
		T(test_limit_key_ipv4_prefix_24_shares_allowance),
		T(test_limit_per_port_keys_separate_ports),
		T(test_limit_continue_stacks_prefix_rule_on_address_rule),
		T(test_limit_clock_steps_keep_counts),
		T(test_limit_two_cpus_node_total_at_limit),
		T(test_limit_concurrent_cpus_at_most_one_extra_each),
		T(test_apply_replace_keeps_ids_and_clients),
		T(test_apply_1024_rules_classify),
	};
#undef T

	/* SL_TEST_FILTER=test_limit_concurrent*: one test (make bench-cpus) */
	if (getenv("SL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("SL_TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
