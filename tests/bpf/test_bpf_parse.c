// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The parser (bpf/parse.h): a corpus of packets, whole and cut at every
 * header the parser must read, through XDP and TC.
 *
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
#include "sl_key.h"
#include "core/instance_maps.h"
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
	       CONTROL, NO_RULE, FRAG_FIRST_NO_RULE };

static const char *const counter_names[] = {
	"rule", "non_ip", "malformed", "first fragment", "orphan fragment",
	"long chain", "icmp control", "no_rule", "first fragment, no rule",
};

static bool reaches_rule(enum counter c)
{
	return c == RULE || c == FRAG_FIRST || c == FRAG_ORPHAN ||
	       c == LONG_CHAIN;
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

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_parse_corpus_xdp),
		T(test_parse_corpus_tc),
		T(test_parse_truncated_xdp),
		T(test_parse_truncated_tc),
		T(test_parse_ipv6_chain_of_8_ext_headers_parsed),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
