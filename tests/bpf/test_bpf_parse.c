// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: bpf_fixture pkt_builder instance_fixture */
/*
 * The parser (bpf/parse.h): a corpus of packets, whole and cut at every
 * header the parser must read, through XDP and TC.
 *
 * BPF_PROG_TEST_RUN tests of the real object: every packet goes through the
 * XDP or TC program of a private, unpinned instance (user/instance/instance.h) under
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
#include "state/client_view.h"
#include "util/parse.h"
#include "instance/instance.h"
#include "sl_key.h"
#include "instance/instance_maps.h"
#include "rules/rules.h"
#include "bpf_fixture.h"

/* ---- 1. packet corpus ---------------------------------------------------
 *
 * One rule, `corpus`: any protocol, port 9, one packet per hour, every IPv4
 * source one client and every IPv6 source another. The test spends both
 * allowances first, so every packet that reaches the rule is dropped: a
 * dropped row proves that the parser got through to the ports, and every
 * other row must pass with exactly its counter moved.
 */
/* bpf/parse.h's SL_MAX_IPV6_EXT: the longest chain the walk reads */
#define SL_TEST_MAX_IPV6_EXT	256

#define LIMITED_PORT	9
#define FREE_PORT	53

static const char corpus_rules[] =
	"rules:\n"
	"  - name: corpus\n"
	"    ports: 9\n"
	"    limit: 1\n"
	"    window: 1h\n"
	"    key: {ipv4_prefix: 0, ipv6_prefix: 0}\n";

/* Where a packet is counted besides `packets`. FRAG_FIRST, FRAG_ORPHAN
 * and LONG_CHAIN reach the rule too; CONTROL never does.
 */
enum counter { RULE, NON_IP, MALFORMED, FRAG_FIRST, FRAG_ORPHAN, LONG_CHAIN,
	       CONTROL, NO_RULE, FRAG_FIRST_NO_RULE, VLAN_DEEP, MAPPED_V4 };

static const char *const counter_names[] = {
	"rule", "non_ip", "malformed", "first fragment", "orphan fragment",
	"long chain", "icmp control", "no_rule", "first fragment, no rule",
	"deep vlan", "ipv4-mapped ipv6 source",
};

static bool reaches_rule(enum counter c)
{
	return c == RULE || c == FRAG_FIRST || c == FRAG_ORPHAN ||
	       c == LONG_CHAIN || c == VLAN_DEEP;
}

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
static void c_vlan3_free(struct pkt *p)
{ eth(p); vlan(p, ETH_P_8021AD); vlan(p, ETH_P_8021Q); vlan(p, ETH_P_8021Q);
  ip4(p, 5, 0); udp(p, FREE_PORT); }
static void c_vlan4_udp6(struct pkt *p)
{ eth(p); vlan(p, ETH_P_8021AD); vlan(p, ETH_P_8021Q); vlan(p, ETH_P_8021Q);
  vlan(p, ETH_P_8021Q); ip6(p); udp(p, LIMITED_PORT); }
static void c_vlan3_arp(struct pkt *p)
{ eth(p); vlan(p, ETH_P_8021AD); vlan(p, ETH_P_8021Q); vlan(p, ETH_P_8021Q);
  ethertype(p, ETH_P_ARP, 28); }
/* bpf/parse.h's SL_MAX_VLANS_DEEP: one tag more hides the addresses */
static void c_vlan9(struct pkt *p)
{ int i; eth(p); for (i = 0; i < 9; i++) vlan(p, ETH_P_8021Q);
  ip4(p, 5, 0); udp(p, LIMITED_PORT); }
static void c_udp6_mapped(struct pkt *p)
{ eth(p); ip6_from(p, "::ffff:192.0.2.1", "2001:db8::2");
  udp(p, LIMITED_PORT); payload(p, 10); }
static void c_udp6_mapped_free(struct pkt *p)
{ eth(p); ip6_from(p, "::ffff:192.0.2.1", "2001:db8::2");
  udp(p, FREE_PORT); }
static void c_vlan3_udp6_mapped(struct pkt *p)
{ eth(p); vlan(p, ETH_P_8021AD); vlan(p, ETH_P_8021Q); vlan(p, ETH_P_8021Q);
  ip6_from(p, "::ffff:192.0.2.1", "2001:db8::2"); udp(p, FREE_PORT); }
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
static void c_ip4_mf_free(struct pkt *p)
{ eth(p); ip4(p, 5, 0x2000); udp(p, FREE_PORT); payload(p, 24); }
static void c_ip4_mf_short(struct pkt *p)
{ eth(p); ip4(p, 5, 0x2000); proto(p, IPPROTO_TCP, 8); ip_id(p, 0x101); }
/* later fragments of datagrams whose first the test never sent */
static void c_ip4_offset(struct pkt *p)
{ eth(p); ip4(p, 5, 185); proto(p, IPPROTO_UDP, 32); ip_id(p, 0x102); }
static void c_ip4_mf_offset(struct pkt *p)
{ eth(p); ip4(p, 5, 0x2000 | 1); proto(p, IPPROTO_UDP, 32); ip_id(p, 0x103); }
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
{ eth(p); ip6(p); ip6_frag(p, 100, false); proto(p, IPPROTO_UDP, 16);
  ip_id(p, 0x104); }
static void c_ip6_frag_atomic(struct pkt *p)
{ eth(p); ip6(p); ip6_frag(p, 0, false); udp(p, LIMITED_PORT); }
static void c_ip6_frag_dst(struct pkt *p)
{ eth(p); ip6(p); ip6_frag(p, 0, true); ip6_ext(p, IPPROTO_DSTOPTS, 1);
  udp(p, LIMITED_PORT); }
static void c_ip6_frag_offset_dst(struct pkt *p)
{ eth(p); ip6(p); ip6_frag(p, 100, true); proto(p, IPPROTO_DSTOPTS, 16);
  ip_id(p, 0x105); }
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
static void c_ip6_ext64(struct pkt *p) { ip6_chain(p, 64); }
/* SL_MAX_IPV6_EXT (bpf/parse.h): the longest chain walked, and one more */
static void c_ip6_ext256(struct pkt *p) { ip6_chain(p, 256); }
static void c_ip6_ext257(struct pkt *p) { ip6_chain(p, 257); }
static void c_ip6_ext257_free(struct pkt *p)
{ ip6_chain(p, 257); p->b[p->l4 + 3] = FREE_PORT; }
static void c_ip6_version4(struct pkt *p)
{ eth(p); ip6(p); p->b[p->l3] = 0x40; udp(p, LIMITED_PORT); }
static void c_ip6_nonext(struct pkt *p)
{ eth(p); ip6(p); proto(p, IPPROTO_NONE, 8); }
static void c_icmp4(struct pkt *p) { eth(p); ip4(p, 5, 0); icmp(p); }
static void c_icmp6(struct pkt *p) { eth(p); ip6(p); icmp(p); }
static void c_icmp4_frag_needed(struct pkt *p)
{ eth(p); ip4(p, 5, 0); icmp_type(p, 3); }
static void c_icmp6_ns(struct pkt *p) { eth(p); ip6(p); icmp_type(p, 135); }
static void c_icmp6_ptb(struct pkt *p) { eth(p); ip6(p); icmp_type(p, 2); }
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
	{ "three VLAN tags (over the 2 parsed)", c_vlan3, DROP, VLAN_DEEP, false },
	{ "three VLAN tags, port without rule",	c_vlan3_free, DROP, VLAN_DEEP, false },
	{ "four VLAN tags ipv6 udp",		c_vlan4_udp6, DROP, VLAN_DEEP, false },
	{ "nine VLAN tags: addresses past the walk", c_vlan9, DROP, VLAN_DEEP, false },
	{ "three VLAN tags arp",		c_vlan3_arp, PASS, NON_IP, false },
	{ "ipv6 from ::ffff:192.0.2.1",		c_udp6_mapped, DROP, MAPPED_V4, false },
	{ "ipv6 from ::ffff:192.0.2.1, port without rule", c_udp6_mapped_free, DROP, MAPPED_V4, false },
	{ "three VLAN tags, ipv6 from ::ffff:192.0.2.1", c_vlan3_udp6_mapped, DROP, MAPPED_V4, false },
	{ "802.1Q arp",				c_vlan_arp, PASS, NON_IP, false },
	{ "ipv4 options ihl 6",			c_ihl6, DROP, RULE, true },
	{ "ipv4 options ihl 10",		c_ihl10, DROP, RULE, true },
	{ "ipv4 options ihl 15",		c_ihl15, DROP, RULE, true },
	{ "ipv4 options + 802.1Q + tcp ack",	c_vlan_opts_tcp, DROP, RULE, true },
	{ "ipv4 ihl 4",				c_ihl4, PASS, MALFORMED, false },
	{ "ipv4 ihl 0",				c_ihl0, PASS, MALFORMED, false },
	{ "ipv4 ethertype, version 6",		c_ip4_version6, PASS, MALFORMED, false },
	{ "ipv4 DF only: not a fragment",	c_ip4_df, DROP, RULE, true },
	{ "ipv4 first fragment (MF)",		c_ip4_mf, DROP, FRAG_FIRST, true },
	{ "ipv4 first fragment, port without rule", c_ip4_mf_free, PASS, FRAG_FIRST_NO_RULE, true },
	{ "ipv4 first fragment too short for its ports", c_ip4_mf_short, DROP, FRAG_ORPHAN, true },
	{ "ipv4 last fragment (offset 185)",	c_ip4_offset, DROP, FRAG_ORPHAN, true },
	{ "ipv4 middle fragment (MF, offset 1)", c_ip4_mf_offset, DROP, FRAG_ORPHAN, true },
	{ "ipv4 options + MF",			c_ip4_opts_mf, DROP, FRAG_FIRST, true },
	{ "ipv6 udp, limited port",		c_udp6, DROP, RULE, true },
	{ "ipv6 udp, port without rule",	c_udp6_free, PASS, NO_RULE, true },
	{ "802.1Q ipv6 udp",			c_vlan_udp6, DROP, RULE, true },
	{ "ipv6 hop-by-hop + routing + dstopts + udp", c_ip6_hop_rt_dst, DROP, RULE, true },
	{ "ipv6 AH + udp",			c_ip6_ah, DROP, RULE, true },
	{ "ipv6 mobility header + tcp",		c_ip6_mh, DROP, RULE, true },
	{ "ipv6 7 extension headers + udp",	c_ip6_ext7, DROP, RULE, true },
	{ "ipv6 9 extension headers + udp",	c_ip6_ext9, DROP, RULE, true },
	{ "ipv6 12 extension headers + udp",	c_ip6_ext12, DROP, RULE, true },
	{ "ipv6 64 extension headers + udp",	c_ip6_ext64, DROP, RULE, false },
	{ "ipv6 256 extension headers + udp",	c_ip6_ext256, DROP, RULE, false },
	{ "ipv6 257 extension headers + udp",	c_ip6_ext257, DROP, LONG_CHAIN, false },
	{ "ipv6 257 extension headers, any port", c_ip6_ext257_free, DROP, LONG_CHAIN, false },
	{ "ipv6 first fragment",		c_ip6_frag, DROP, FRAG_FIRST, true },
	{ "ipv6 atomic fragment: a whole datagram", c_ip6_frag_atomic, DROP, RULE, true },
	{ "ipv6 first fragment + dstopts",	c_ip6_frag_dst, DROP, FRAG_FIRST, true },
	{ "ipv6 later fragment",		c_ip6_frag_offset, DROP, FRAG_ORPHAN, true },
	{ "ipv6 later fragment, dstopts next",	c_ip6_frag_offset_dst, DROP, FRAG_ORPHAN, true },
	{ "ipv6 hop-by-hop + fragment",		c_ip6_hop_frag, DROP, FRAG_FIRST, true },
	{ "ipv6 ethertype, version 4",		c_ip6_version4, PASS, MALFORMED, false },
	{ "ipv6 no next header (other proto)",	c_ip6_nonext, PASS, NO_RULE, true },
	{ "icmp echo (rule has ports)",		c_icmp4, PASS, NO_RULE, true },
	{ "icmpv6 echo (rule has ports)",	c_icmp6, PASS, NO_RULE, true },
	{ "icmp fragmentation needed",		c_icmp4_frag_needed, PASS, CONTROL, true },
	{ "icmpv6 neighbour solicitation",	c_icmp6_ns, PASS, CONTROL, true },
	{ "icmpv6 packet too big",		c_icmp6_ptb, PASS, CONTROL, true },
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
	EXPECT("fragments", g1.fragments - g0.fragments,
	       counter == FRAG_FIRST || counter == FRAG_ORPHAN ||
	       counter == FRAG_FIRST_NO_RULE);
	EXPECT("frag_first", g1.frag_first - g0.frag_first,
	       counter == FRAG_FIRST || counter == FRAG_FIRST_NO_RULE);
	EXPECT("frag_orphans", g1.frag_orphans - g0.frag_orphans,
	       counter == FRAG_ORPHAN);
	EXPECT("frag_later", g1.frag_later - g0.frag_later, 0);
	EXPECT("long_chains", g1.long_chains - g0.long_chains,
	       counter == LONG_CHAIN);
	EXPECT("long_chains_dropped", g1.long_chains_dropped - g0.long_chains_dropped,
	       counter == LONG_CHAIN && want == DROP);
	EXPECT("icmp_control", g1.icmp_control - g0.icmp_control,
	       counter == CONTROL);
	EXPECT("vlan_deep", g1.vlan_deep - g0.vlan_deep, counter == VLAN_DEEP);
	EXPECT("vlan_deep_dropped", g1.vlan_deep_dropped - g0.vlan_deep_dropped,
	       counter == VLAN_DEEP && want == DROP);
	EXPECT("mapped_v4", g1.mapped_v4 - g0.mapped_v4, counter == MAPPED_V4);
	EXPECT("no_rule", g1.no_rule - g0.no_rule,
	       counter == NO_RULE || counter == FRAG_FIRST_NO_RULE);
	EXPECT("fail_open", g1.fail_open - g0.fail_open, 0);
	EXPECT("rule dropped", r1.dropped - r0.dropped,
	       reaches_rule(counter) && want == DROP);
	EXPECT("rule passed", r1.passed - r0.passed,
	       reaches_rule(counter) && want == PASS);
	EXPECT("rule dropped_bytes", r1.dropped_bytes - r0.dropped_bytes,
	       reaches_rule(counter) && want == DROP ? len : 0);
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

/* ---- 2. odd shapes under one rule --------------------------------------
 *
 * Rule `{protocol: udp, ports: 9000, limit: 5, window: 60s}` (and 9001
 * for extension chains): whatever shape a client's datagrams take, at
 * most five of them (and at least five: the limit is reached) get
 * through, through XDP and TC.
 */
#define FRAG_PORT	9000
#define CHAIN_PORT	9001
#define DATAGRAMS	30

static const char odd_rules[] =
	"rules:\n"
	"  - {name: frag, protocol: udp, ports: 9000, limit: 5, window: 60s}\n"
	"  - {name: chain, protocol: udp, ports: 9001, limit: 5, window: 60s}\n";

enum frag_part { FIRST, MIDDLE, LAST };

/* One fragment of datagram `id`, three fragments of 1,480 payload bytes
 * each at most (as at MTU 1500): the first carries the UDP header.
 */
static void fragment(struct pkt *p, bool v6, uint32_t id, enum frag_part part,
		     uint16_t dport, unsigned body)
{
	uint16_t offset = part == FIRST ? 0 : part == MIDDLE ? 185 : 370;
	bool mf = part != LAST;

	memset(p, 0, sizeof(*p));
	eth(p);
	if (v6) {
		ip6(p);
		ip6_frag(p, offset, mf);
	} else {
		ip4(p, 5, (mf ? 0x2000 : 0) | offset);
	}
	ip_id(p, id);
	if (part == FIRST) {
		udp(p, dport);
		payload(p, body - 8);
	} else {
		proto(p, IPPROTO_UDP, body);
	}
	finish(p);
}

struct tally {
	unsigned pass[3], drop[3];	/* by enum frag_part */
};

/* DATAGRAMS datagrams of three fragments each, to `dport`. */
static struct tally send_datagrams(struct fixture *f, bool tc, bool v6,
				   uint16_t dport, uint32_t id0)
{
	struct tally t = {};
	unsigned d, part;
	struct pkt p;

	for (d = 0; d < DATAGRAMS; d++) {
		for (part = FIRST; part <= LAST; part++) {
			fragment(&p, v6, id0 + d, part, dport, 200);
			if (run_len(f, tc, -1, &p, p.len) == DROP)
				t.drop[part]++;
			else
				t.pass[part]++;
		}
	}
	return t;
}

/* A datagram is one unit of `packets`: its first fragment is counted by
 * its port, its later fragments follow the first's verdict.
 */
static void fragments_follow_their_first(void **state, bool tc, bool v6)
{
	struct fixture *f = *state;
	struct sl_global_stats g0, g1;
	struct sl_rule_stats r;
	struct tally t;

	apply(f, odd_rules);
	g0 = global_stats(f);
	t = send_datagrams(f, tc, v6, FRAG_PORT, 1);
	g1 = global_stats(f);
	r = stats_of(f, "frag");
	print_message("%s %s: first fragments %u passed %u dropped, later %u passed %u dropped\n",
		      tc ? "tc" : "xdp", v6 ? "ipv6" : "ipv4", t.pass[FIRST],
		      t.drop[FIRST], t.pass[MIDDLE] + t.pass[LAST],
		      t.drop[MIDDLE] + t.drop[LAST]);
	assert_int_equal(t.pass[FIRST], 5);
	assert_int_equal(t.drop[FIRST], DATAGRAMS - 5);
	/* the same datagrams, whole or not at all */
	assert_int_equal(t.pass[MIDDLE], 5);
	assert_int_equal(t.pass[LAST], 5);
	assert_int_equal(g1.frag_first - g0.frag_first, DATAGRAMS);
	assert_int_equal(g1.frag_later - g0.frag_later, 2 * DATAGRAMS);
	assert_int_equal(g1.frag_later_dropped - g0.frag_later_dropped,
			 2 * (DATAGRAMS - 5));
	assert_int_equal(g1.frag_orphans - g0.frag_orphans, 0);
	assert_int_equal(g1.fragments - g0.fragments, 3 * DATAGRAMS);
	/* the rule saw the first fragments and the later ones it passed */
	assert_int_equal(r.dropped, DATAGRAMS - 5);
	assert_int_equal(r.passed, 3 * 5);
	assert_int_equal(clients_of(f, id_of(f, "frag")), 1);
}

static void test_parse_fragments_follow_their_first_ipv4_xdp(void **state)
{ fragments_follow_their_first(state, false, false); }
static void test_parse_fragments_follow_their_first_ipv6_xdp(void **state)
{ fragments_follow_their_first(state, false, true); }
static void test_parse_fragments_follow_their_first_ipv4_tc(void **state)
{ fragments_follow_their_first(state, true, false); }
static void test_parse_fragments_follow_their_first_ipv6_tc(void **state)
{ fragments_follow_their_first(state, true, true); }

/* The later fragments of a datagram to a port without a rule follow it
 * through: they are not orphans counted under another port's rule.
 */
static void test_parse_fragments_of_free_port_pass_uncounted(void **state)
{
	struct fixture *f = *state;
	struct sl_global_stats g0, g1;
	struct tally t;

	apply(f, odd_rules);
	g0 = global_stats(f);
	t = send_datagrams(f, false, false, FREE_PORT, 1);
	g1 = global_stats(f);
	assert_int_equal(t.pass[FIRST] + t.pass[MIDDLE] + t.pass[LAST],
			 3 * DATAGRAMS);
	assert_int_equal(g1.no_rule - g0.no_rule, 3 * DATAGRAMS);
	assert_int_equal(g1.frag_orphans - g0.frag_orphans, 0);
	assert_int_equal(stats_of(f, "frag").passed, 0);
}

/* Later fragments whose first was never seen (reordered, or evicted from
 * sl_frags): each is one unit under the first rule of its protocol that
 * its addresses match, whatever the port; never passed uncounted.
 */
static void orphans_counted(void **state, bool v6)
{
	struct fixture *f = *state;
	struct sl_global_stats g0, g1;
	unsigned i, pass = 0;
	struct pkt p;

	apply(f, odd_rules);
	g0 = global_stats(f);
	for (i = 0; i < DATAGRAMS; i++) {
		fragment(&p, v6, 1000 + i, i % 2 ? MIDDLE : LAST, 0, 200);
		pass += run(f, &p) == PASS;
	}
	g1 = global_stats(f);
	assert_int_equal(pass, 5);
	assert_int_equal(g1.frag_orphans - g0.frag_orphans, DATAGRAMS);
	assert_int_equal(stats_of(f, "frag").passed, 5);
	assert_int_equal(stats_of(f, "frag").dropped, DATAGRAMS - 5);

	/* a protocol no rule is of: nothing to count it under */
	memset(&p, 0, sizeof(p));
	eth(&p);
	if (v6) {
		ip6(&p);
		ip6_frag(&p, 100, false);
	} else {
		ip4(&p, 5, 100);
	}
	ip_id(&p, 5000);
	proto(&p, IPPROTO_TCP, 64);
	finish(&p);
	g0 = global_stats(f);
	assert_int_equal(run(f, &p), PASS);
	g1 = global_stats(f);
	assert_int_equal(g1.no_rule - g0.no_rule, 1);
}

static void test_parse_orphan_fragments_counted_ipv4(void **state)
{ orphans_counted(state, false); }
static void test_parse_orphan_fragments_counted_ipv6(void **state)
{ orphans_counted(state, true); }

/* The rules an orphan can meet are rebuilt per CPU after an apply: once
 * the udp rule is gone, a udp orphan meets no rule; once it is back at
 * another position, it is counted there again.
 */
static void test_parse_orphan_rules_follow_an_apply(void **state)
{
	struct fixture *f = *state;
	struct sl_global_stats g0, g1;
	struct pkt p;

	apply(f, odd_rules);
	fragment(&p, false, 2000, LAST, 0, 200);
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(stats_of(f, "frag").passed, 1);
	apply(f, "rules:\n  - {name: web, protocol: tcp, ports: 443, limit: 1}\n");
	g0 = global_stats(f);
	assert_int_equal(run(f, &p), PASS);
	g1 = global_stats(f);
	assert_int_equal(g1.no_rule - g0.no_rule, 1);
	assert_int_equal(stats_of(f, "web").passed, 0);
	apply(f, "rules:\n  - {name: web, protocol: tcp, ports: 443, limit: 1}\n"
		 "  - {name: dns, protocol: udp, ports: 53, limit: 1, window: 60s}\n");
	assert_int_equal(run(f, &p), PASS);
	assert_int_equal(run(f, &p), DROP);
	assert_int_equal(stats_of(f, "dns").dropped, 1);
	assert_int_equal(stats_of(f, "web").passed, 0);
}

/* Unit bytes: every fragment is charged its bytes; the one over the
 * limit is dropped, and the rest of its datagram with it.
 */
static void test_parse_fragments_charged_their_bytes(void **state)
{
	struct fixture *f = *state;
	struct sl_global_stats g0, g1;
	enum verdict v[4];
	struct pkt p;
	char rules[160];
	unsigned len;

	fragment(&p, false, 7, FIRST, FRAG_PORT, 200);
	len = p.len;
	snprintf(rules, sizeof(rules),
		 "rules:\n  - {name: frag, protocol: udp, ports: 9000, unit: bytes, limit: %u, window: 60s}\n",
		 2 * len + len / 2);
	apply(f, rules);
	g0 = global_stats(f);
	v[0] = run(f, &p);
	fragment(&p, false, 7, MIDDLE, FRAG_PORT, 200);
	assert_int_equal(p.len, len);
	v[1] = run(f, &p);
	v[2] = run(f, &p);	/* over the limit: the datagram is cut */
	fragment(&p, false, 7, LAST, FRAG_PORT, 200);
	v[3] = run(f, &p);
	g1 = global_stats(f);
	assert_int_equal(v[0], PASS);
	assert_int_equal(v[1], PASS);
	assert_int_equal(v[2], DROP);
	assert_int_equal(v[3], DROP);
	assert_int_equal(g1.frag_later_dropped - g0.frag_later_dropped, 2);
	assert_int_equal(stats_of(f, "frag").passed_bytes, 2 * len);
}

static void ip6_dstopts_chain(struct pkt *p, unsigned n, uint16_t dport)
{
	unsigned i;

	memset(p, 0, sizeof(*p));
	eth(p);
	ip6(p);
	for (i = 0; i < n; i++)
		ip6_ext(p, IPPROTO_DSTOPTS, 0);
	udp(p, dport);
	payload(p, 32);
	finish(p);
}

/* 12 destination-options headers (scapy's IPv6ExtHdrDestOpt() * 12) hide
 * nothing: the walk reaches the port.
 */
static void dstopts_chain_counted(void **state, bool tc)
{
	struct fixture *f = *state;
	unsigned i, pass = 0;
	struct pkt p;

	apply(f, odd_rules);
	ip6_dstopts_chain(&p, 12, CHAIN_PORT);
	for (i = 0; i < DATAGRAMS; i++)
		pass += run_len(f, tc, -1, &p, p.len) == PASS;
	assert_int_equal(pass, 5);
	assert_int_equal(stats_of(f, "chain").dropped, DATAGRAMS - 5);
}

static void test_parse_12_dstopts_chain_counted_xdp(void **state)
{ dstopts_chain_counted(state, false); }
static void test_parse_12_dstopts_chain_counted_tc(void **state)
{ dstopts_chain_counted(state, true); }

/* One header more than the walk: dropped under a rule that matches its
 * addresses whatever it carries; passed where no rule could match.
 */
static void test_parse_chain_over_walk_dropped_when_a_rule_matches(void **state)
{
	struct fixture *f = *state;
	struct sl_global_stats g0, g1;
	struct pkt p;

	apply(f, odd_rules);
	ip6_dstopts_chain(&p, SL_TEST_MAX_IPV6_EXT, CHAIN_PORT);
	assert_int_equal(run(f, &p), PASS);	/* the walk's longest: counted */
	assert_int_equal(stats_of(f, "chain").passed, 1);
	ip6_dstopts_chain(&p, SL_TEST_MAX_IPV6_EXT + 1, CHAIN_PORT);
	g0 = global_stats(f);
	assert_int_equal(run(f, &p), DROP);
	assert_int_equal(run_len(f, true, -1, &p, p.len), DROP);
	g1 = global_stats(f);
	assert_int_equal(g1.long_chains - g0.long_chains, 2);
	assert_int_equal(g1.long_chains_dropped - g0.long_chains_dropped, 2);

	/* rules only for another source: nothing to hide from */
	apply(f, "rules:\n  - {name: other, protocol: udp, source: 198.51.100.0/24, limit: 1}\n");
	g0 = global_stats(f);
	assert_int_equal(run(f, &p), PASS);
	g1 = global_stats(f);
	assert_int_equal(g1.long_chains - g0.long_chains, 1);
	assert_int_equal(g1.long_chains_dropped - g0.long_chains_dropped, 0);
	assert_int_equal(g1.no_rule - g0.no_rule, 1);
}

/* IPv6 from ::ffff:198.51.100.20 is dropped and counted, and never
 * charged to the IPv4 client 198.51.100.20: that one keeps its whole
 * allowance.
 */
static const char mapped_rules[] =
	"rules:\n"
	"  - {name: web, protocol: udp, ports: 9000, limit: 5, window: 60s}\n";

static void test_parse_ipv4_mapped_source_dropped_never_charged(void **state)
{
	struct fixture *f = *state;
	struct sl_global_stats g0, g1;
	unsigned i, pass = 0;
	struct pkt v6 = {}, v4 = {};

	apply(f, mapped_rules);
	eth(&v6);
	ip6_from(&v6, "::ffff:198.51.100.20", "2001:db8::2");
	udp(&v6, 9000);
	finish(&v6);
	eth(&v4);
	ip4_from(&v4, "198.51.100.20", "192.0.2.2", 5, 0);
	udp(&v4, 9000);
	finish(&v4);

	g0 = global_stats(f);
	for (i = 0; i < DATAGRAMS; i++) {
		assert_int_equal(run_len(f, i & 1, -1, &v6, v6.len), DROP);
	}
	g1 = global_stats(f);
	assert_int_equal(g1.mapped_v4 - g0.mapped_v4, DATAGRAMS);
	assert_int_equal(clients_of(f, id_of(f, "web")), 0);
	assert_int_equal(stats_of(f, "web").dropped, 0);
	for (i = 0; i < DATAGRAMS; i++)
		pass += run(f, &v4) == PASS;
	assert_int_equal(pass, 5);
}

/* Three and four VLAN tags (one and two more than the parser walks) are
 * dropped under a rule that matches their addresses, whatever their port;
 * passed, and counted, where no rule could match.
 */
static void deep_vlan_dropped(void **state, unsigned tags)
{
	struct fixture *f = *state;
	struct sl_global_stats g0, g1;
	unsigned i;
	struct pkt p = {};

	apply(f, "rules:\n  - {name: web, protocol: udp, source: 198.51.100.0/24, ports: 9000, limit: 5, window: 60s}\n");
	eth(&p);
	for (i = 0; i < tags; i++)
		vlan(&p, i ? ETH_P_8021Q : ETH_P_8021AD);
	ip4_from(&p, "198.51.100.20", "192.0.2.2", 5, 0);
	udp(&p, 9000);
	finish(&p);
	g0 = global_stats(f);
	for (i = 0; i < DATAGRAMS; i++)
		assert_int_equal(run_len(f, i & 1, -1, &p, p.len), DROP);
	g1 = global_stats(f);
	assert_int_equal(g1.vlan_deep - g0.vlan_deep, DATAGRAMS);
	assert_int_equal(g1.vlan_deep_dropped - g0.vlan_deep_dropped, DATAGRAMS);
	assert_int_equal(stats_of(f, "web").dropped, DATAGRAMS);

	/* a rule only for another source: nothing to hide from */
	apply(f, "rules:\n  - {name: other, protocol: udp, source: 203.0.113.0/24, limit: 1}\n");
	g0 = global_stats(f);
	assert_int_equal(run(f, &p), PASS);
	g1 = global_stats(f);
	assert_int_equal(g1.vlan_deep - g0.vlan_deep, 1);
	assert_int_equal(g1.vlan_deep_dropped - g0.vlan_deep_dropped, 0);
	assert_int_equal(g1.no_rule - g0.no_rule, 1);
}

static void test_parse_3_vlan_tags_dropped_when_a_rule_matches(void **state)
{ deep_vlan_dropped(state, 3); }
static void test_parse_4_vlan_tags_dropped_when_a_rule_matches(void **state)
{ deep_vlan_dropped(state, 4); }

/* ---- 3. ICMP ------------------------------------------------------------
 *
 * `protocol: icmp` limits echo requests; errors (PMTU discovery) and
 * neighbour, router and multicast listener discovery are never limited,
 * by an `icmp` rule or by an `any` rule.
 */
struct icmp_row {
	const char *desc;
	bool v6;
	uint8_t type;
	bool limited;		/* an echo request */
};

static const struct icmp_row icmp_rows[] = {
	{ "icmp echo request",			false, 8, true },
	{ "icmpv6 echo request",		true, 128, true },
	{ "icmp destination unreachable / fragmentation needed", false, 3, false },
	{ "icmp time exceeded",			false, 11, false },
	{ "icmp redirect",			false, 5, false },
	{ "icmpv6 packet too big",		true, 2, false },
	{ "icmpv6 destination unreachable",	true, 1, false },
	{ "icmpv6 time exceeded",		true, 3, false },
	{ "icmpv6 router solicitation",		true, 133, false },
	{ "icmpv6 router advertisement",	true, 134, false },
	{ "icmpv6 neighbour solicitation",	true, 135, false },
	{ "icmpv6 neighbour advertisement",	true, 136, false },
	{ "icmpv6 redirect",			true, 137, false },
	{ "icmpv6 multicast listener report v2", true, 143, false },
};

static void icmp_control_never_limited(void **state, const char *rules)
{
	struct fixture *f = *state;
	unsigned i, j, bad = 0;

	apply(f, rules);
	for (i = 0; i < sizeof(icmp_rows) / sizeof(icmp_rows[0]); i++) {
		const struct icmp_row *row = &icmp_rows[i];
		struct sl_global_stats g0 = global_stats(f), g1;
		unsigned pass = 0;
		struct pkt p = {};

		eth(&p);
		if (row->v6)
			ip6_from(&p, "2001:db8::77", "2001:db8:ffff::1");
		else
			ip4_from(&p, "192.0.2.77", "203.0.113.1", 5, 0);
		icmp_type(&p, row->type);
		finish(&p);
		for (j = 0; j < 10; j++) {
			pass += run(f, &p) == PASS;
			pass += run_len(f, true, -1, &p, p.len) == PASS;
		}
		g1 = global_stats(f);
		/* XDP and TC count into the same client: 3 of 20 */
		if (pass != (row->limited ? 3 : 20) ||
		    g1.icmp_control - g0.icmp_control != (row->limited ? 0 : 20)) {
			print_error("%s: %u of 20 passed, icmp_control +%llu\n",
				    row->desc, pass,
				    (unsigned long long)(g1.icmp_control - g0.icmp_control));
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void test_parse_icmp_control_never_limited_by_icmp_rule(void **state)
{
	icmp_control_never_limited(state,
		"rules:\n  - {name: ping, protocol: icmp, limit: 3, window: 60s}\n");
}

static void test_parse_icmp_control_never_limited_by_any_rule(void **state)
{
	icmp_control_never_limited(state,
		"rules:\n  - {name: all, limit: 3, window: 60s}\n");
}

/* Other ICMP (echo replies, say) is no echo request: `icmp` rules leave
 * it, `any` rules count it.
 */
static void test_parse_icmp_echo_reply_left_by_icmp_rules_counted_by_any(void **state)
{
	struct fixture *f = *state;
	struct pkt p = {};
	unsigned i, pass = 0;

	apply(f, "rules:\n  - {name: ping, protocol: icmp, limit: 3, window: 60s}\n");
	eth(&p);
	ip6(&p);
	icmp_type(&p, 129);
	finish(&p);
	for (i = 0; i < 10; i++)
		pass += run(f, &p) == PASS;
	assert_int_equal(pass, 10);
	apply(f, "rules:\n  - {name: all, limit: 3, window: 60s}\n");
	for (pass = 0, i = 0; i < 10; i++)
		pass += run(f, &p) == PASS;
	assert_int_equal(pass, 3);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_parse_corpus_xdp),
		T(test_parse_corpus_tc),
		T(test_parse_truncated_xdp),
		T(test_parse_truncated_tc),
		T(test_parse_fragments_follow_their_first_ipv4_xdp),
		T(test_parse_fragments_follow_their_first_ipv6_xdp),
		T(test_parse_fragments_follow_their_first_ipv4_tc),
		T(test_parse_fragments_follow_their_first_ipv6_tc),
		T(test_parse_fragments_of_free_port_pass_uncounted),
		T(test_parse_orphan_fragments_counted_ipv4),
		T(test_parse_orphan_fragments_counted_ipv6),
		T(test_parse_orphan_rules_follow_an_apply),
		T(test_parse_fragments_charged_their_bytes),
		T(test_parse_12_dstopts_chain_counted_xdp),
		T(test_parse_12_dstopts_chain_counted_tc),
		T(test_parse_chain_over_walk_dropped_when_a_rule_matches),
		T(test_parse_ipv4_mapped_source_dropped_never_charged),
		T(test_parse_3_vlan_tags_dropped_when_a_rule_matches),
		T(test_parse_4_vlan_tags_dropped_when_a_rule_matches),
		T(test_parse_icmp_control_never_limited_by_icmp_rule),
		T(test_parse_icmp_control_never_limited_by_any_rule),
		T(test_parse_icmp_echo_reply_left_by_icmp_rules_counted_by_any),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
