// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_packet: arbitrary frames (14..1514 bytes) through the real BPF
 * object, XDP and TC, with BPF_PROG_TEST_RUN on a private model-clock
 * instance (user/instance/instance.h) holding a small rule set of every algorithm.
 *
 * Invariants, per program run, from the counters' deltas:
 *  - the verdict is XDP_PASS/XDP_DROP (TC_ACT_OK/TC_ACT_SHOT); TC may
 *    refuse a short frame with EINVAL, a defined outcome;
 *  - packets moves by 1, and exactly one of non_ip, malformed,
 *    icmp_control, no_rule, one rule's passed/dropped/shadow_dropped/
 *    exempt, or (a later fragment dropped with its datagram) the pair
 *    frag_later and frag_later_dropped alone moves, by 1;
 *  - a drop verdict is the rule's `dropped` or the datagram's, and bytes
 *    follow the verdict;
 *  - no client state is created (new_clients) for a frame that is non-IP,
 *    malformed, ICMP control, exempt or matched by no rule, and at most
 *    one otherwise;
 *  - the class (non_ip, malformed, icmp control, a long IPv6 chain, a
 *    fragment with or without its ports, or parsed) is the one a reference
 *    parser written from parse.h's contract gives, and the fragment and
 *    chain counters say the same;
 *  - XDP and TC classify the frame alike (which counter, which rule; a
 *    later fragment XDP dropped by a bytes limit, TC drops with its
 *    datagram).
 */
#include "fuzz_common.h"
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "instance/instance.h"
#include "instance/instance_maps.h"
#include "rules/rules.h"

#define T0		1000000000ULL	/* model ms */
#define STEP_MS		3		/* model time per input */

static const char rules_yaml[] =
	"rules:\n"
	"  - {name: dns, protocol: udp, ports: 53, limit: 3, window: 1s}\n"
	"  - {name: ssh-syn, protocol: tcp, ports: 22, unit: syn, limit: 2, window: 10s, algorithm: token-bucket}\n"
	"  - {name: web, protocol: tcp, ports: 80-443, limit: 5, window: 1s, algorithm: sliding-plain, slices: 4, key: {per_port: true}}\n"
	"  - {name: ping, protocol: icmp, limit: 2, window: 1s, algorithm: fixed, action: shadow}\n"
	"  - {name: v6, source: \"2001:db8::/32\", limit: 4, window: 2s, algorithm: sliding-counter, key: {ipv6_prefix: 48}, exempt: [\"2001:db8:1::/48\"]}\n"
	"  - {name: bytes, destination: 203.0.113.0/24, unit: bytes, limit: 3000, window: 1s}\n"
	"  - {name: log, protocol: udp, ports: 1000-2000, algorithm: sliding-log, limit: 3, window: 500ms}\n"
	"  - {name: v4, source: 0.0.0.0/0, limit: 10, window: 1s, key: {ipv4_prefix: 24}, exempt: [10.0.0.0/8, 192.0.2.128/25]}\n";

#define MAX_RULES	16

static struct sl_instance in;
static struct sl_rule live[MAX_RULES];
static unsigned nr_live;
static __u64 now_ms = T0;

struct snap {
	struct sl_global_stats g;
	struct sl_rule_stats r[MAX_RULES];
};
static struct snap last;

static void read_snap(struct snap *s)
{
	unsigned i;

	if (sl_percpu_sum_u64(&in.maps, in.maps.global_stats, 0, &s->g,
			      sizeof(s->g)))
		die("cannot read sl_global_stats");
	for (i = 0; i < nr_live; i++)
		if (sl_percpu_sum_u64(&in.maps, in.maps.rule_stats, live[i].id,
				      &s->r[i], sizeof(s->r[i])))
			die("cannot read sl_rule_stats[%u]", live[i].id);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sl_instance_opts o = { .clients = 4096, .model_clock = true };
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	int err;

	fuzz_report_open();
	fuzz_open_instance(&in, &o);
	sl_instance_set_time(&in, now_ms);
	fuzz_apply_rules(&in, "fuzz_packet.yaml", rules_yaml);
	err = sl_rules_read_live(&in.maps, &rules, &nr_live, &cfg);
	if (err || nr_live > MAX_RULES || !nr_live)
		die("sl_rules_read_live: %d, %u rules", err, nr_live);
	memcpy(live, rules, nr_live * sizeof(*rules));
	free(rules);
	read_snap(&last);
	return 0;
}

/* ---- the reference parser: parse.h's contract, restated ---- */

/* C_FIRST: a first fragment with its ports; C_FRAGMENT: a fragment
 * without them (a later one, or a first cut short).
 */
enum class { C_PARSED, C_NON_IP, C_MALFORMED, C_FRAGMENT, C_FIRST, C_CONTROL,
	     C_LONG, C_DEEP_VLAN, C_MAPPED };

static const char *const class_names[] = {
	"parsed", "non_ip", "malformed", "fragment", "first fragment",
	"icmp control", "long chain", "deep vlan", "ipv4-mapped source",
};

/* bpf/parse.h's SL_MAX_VLANS and SL_MAX_VLANS_DEEP */
#define REF_MAX_VLANS		2
#define REF_MAX_VLANS_DEEP	8

/* bpf/parse.h's SL_MAX_IPV6_EXT (its byte bound is past any frame here) */
#define REF_MAX_IPV6_EXT	256

static bool ref_icmp_control(unsigned l4, unsigned type)
{
	if (l4 == 1)
		return type == 3 || type == 5 || type == 9 || type == 10 ||
		       type == 11 || type == 12;
	return (type >= 1 && type <= 4) || (type >= 130 && type <= 137) ||
	       (type >= 141 && type <= 143) || type == 148 || type == 149 ||
	       (type >= 151 && type <= 153);
}

static unsigned be16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

/* *cut: the header ran past the frame (not an invalid field). */
static enum class ref_l4(const uint8_t *p, size_t len, size_t off, unsigned l4,
			 bool *cut)
{
	*cut = false;
	switch (l4) {
	case 6:		/* TCP: 20 bytes, data offset >= 5 */
		if (off + 20 > len) {
			*cut = true;
			return C_MALFORMED;
		}
		return (p[off + 12] >> 4) < 5 ? C_MALFORMED : C_PARSED;
	case 17:	/* UDP */
		*cut = off + 8 > len;
		return *cut ? C_MALFORMED : C_PARSED;
	case 1:		/* ICMP, ICMPv6: type, code, checksum */
	case 58:
		*cut = off + 4 > len;
		if (*cut)
			return C_MALFORMED;
		return ref_icmp_control(l4, p[off]) ? C_CONTROL : C_PARSED;
	default:
		return C_PARSED;
	}
}

/* A cut short L4 header of a first fragment: decided without its ports. */
static enum class ref_first(enum class c, bool first, bool cut)
{
	if (!first)
		return c;
	if (c == C_MALFORMED && cut)
		return C_FRAGMENT;
	return c == C_PARSED ? C_FIRST : c;
}

static bool ref_vlan(unsigned type)
{
	return type == 0x8100 || type == 0x88a8;
}

/* ::ffff:0:0/96 at p */
static bool ref_mapped(const uint8_t *p)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(p, prefix, sizeof(prefix));
}

/* More tags than the parser walks: only the addresses are read, behind
 * up to REF_MAX_VLANS_DEEP tags; `off` is past the walked ones.
 */
static enum class ref_deep_vlan(const uint8_t *p, size_t len, size_t off)
{
	unsigned type = 0x8100, i;

	for (i = REF_MAX_VLANS; i < REF_MAX_VLANS_DEEP && ref_vlan(type); i++) {
		if (off + 4 > len)
			return C_MALFORMED;
		type = be16(p + off + 2);
		off += 4;
	}
	if (type == 0x0800) {
		if (off + 20 > len || p[off] >> 4 != 4 || (p[off] & 15) < 5)
			return C_MALFORMED;
		return C_DEEP_VLAN;
	}
	if (type == 0x86dd) {
		if (off + 40 > len || p[off] >> 4 != 6)
			return C_MALFORMED;
		return ref_mapped(p + off + 8) ? C_MAPPED : C_DEEP_VLAN;
	}
	return ref_vlan(type) ? C_DEEP_VLAN : C_NON_IP;
}

static enum class ref_parse(const uint8_t *p, size_t len)
{
	size_t off = 14;
	unsigned type, i, next;
	bool first = false, cut;
	enum class c;

	if (len < 14)
		return C_MALFORMED;
	type = be16(p + 12);
	for (i = 0; i < REF_MAX_VLANS && ref_vlan(type); i++) {
		if (off + 4 > len)
			return C_MALFORMED;
		type = be16(p + off + 2);
		off += 4;
	}
	if (ref_vlan(type))
		return ref_deep_vlan(p, len, off);
	if (type == 0x0800) {
		unsigned ihl, frag;

		if (off + 20 > len || p[off] >> 4 != 4 || (p[off] & 15) < 5)
			return C_MALFORMED;
		ihl = (p[off] & 15) * 4;
		if (off + ihl > len)
			return C_MALFORMED;
		frag = be16(p + off + 6);
		if (frag & 0x1fff)
			return C_FRAGMENT;
		c = ref_l4(p, len, off + ihl, p[off + 9], &cut);
		return ref_first(c, frag & 0x2000, cut);
	}
	if (type != 0x86dd)
		return C_NON_IP;
	if (off + 40 > len || p[off] >> 4 != 6)
		return C_MALFORMED;
	if (ref_mapped(p + off + 8))
		return C_MAPPED;
	next = p[off + 6];
	off += 40;
	for (i = 0; ; i++) {
		size_t ext;

		if (next != 0 && next != 43 && next != 44 && next != 60 &&
		    next != 135 && next != 51) {
			c = ref_l4(p, len, off, next, &cut);
			return ref_first(c, first, cut);
		}
		if (i == REF_MAX_IPV6_EXT)
			return C_LONG;
		if (next == 44) {	/* fragment header */
			unsigned fo;

			if (off + 8 > len)
				return first ? C_FRAGMENT : C_MALFORMED;
			fo = be16(p + off + 2);
			if (fo & 0xfff8)
				return C_FRAGMENT;
			if (fo & 1)
				first = true;
			next = p[off];
			off += 8;
			continue;
		}
		if (off + 2 > len)
			return first ? C_FRAGMENT : C_MALFORMED;
		ext = next == 51 ? (p[off + 1] + 2u) * 4 : (p[off + 1] + 1u) * 8;
		if (off + ext > len)
			return first ? C_FRAGMENT : C_MALFORMED;
		next = p[off];
		off += ext;
	}
}

/* ---- one run ---- */

enum outcome { O_NON_IP, O_MALFORMED, O_CONTROL, O_NO_RULE, O_FOLLOWED,
	       O_MAPPED, O_RULE };

struct result {
	enum outcome what;
	unsigned rule;		/* index in live[] for O_RULE */
	int kind;		/* 0 passed, 1 dropped, 2 shadow, 3 exempt */
	__u64 frag[5];		/* fragments, frag_first, later + orphans,
				 * long_chains, vlan_deep: moved by */
};

static const char *const outcome_names[] = {
	"non_ip", "malformed", "icmp control", "no_rule",
	"dropped with its datagram", "ipv4-mapped source", "rule",
};

static void check_deltas(const char *prog, const struct snap *a,
			 const struct snap *b, bool drop, size_t len,
			 struct result *res)
{
	__u64 later = b->g.frag_later - a->g.frag_later;
	__u64 later_dropped = b->g.frag_later_dropped - a->g.frag_later_dropped;
	__u64 moved[O_RULE] = {
		b->g.non_ip - a->g.non_ip, b->g.malformed - a->g.malformed,
		b->g.icmp_control - a->g.icmp_control,
		b->g.no_rule - a->g.no_rule, 0,
		b->g.mapped_v4 - a->g.mapped_v4,
	};
	__u64 total = 0, new_clients = b->g.new_clients - a->g.new_clients;
	unsigned i, k, hits = 0, rule_hits = 0;

	if (b->g.packets - a->g.packets != 1)
		die("%s: packets moved by %llu, not 1", prog,
		    (unsigned long long)(b->g.packets - a->g.packets));
	res->frag[0] = b->g.fragments - a->g.fragments;
	res->frag[1] = b->g.frag_first - a->g.frag_first;
	res->frag[2] = later + b->g.frag_orphans - a->g.frag_orphans;
	res->frag[3] = b->g.long_chains - a->g.long_chains;
	res->frag[4] = b->g.vlan_deep - a->g.vlan_deep;
	for (i = 0; i < nr_live; i++) {
		const struct sl_rule_stats *x = &a->r[i], *y = &b->r[i];
		__u64 d[4] = {
			y->passed - x->passed, y->dropped - x->dropped,
			y->shadow_dropped - x->shadow_dropped,
			y->exempt - x->exempt,
		};
		__u64 pb = y->passed_bytes - x->passed_bytes;
		__u64 db = y->dropped_bytes - x->dropped_bytes;

		for (k = 0; k < 4; k++) {
			total += d[k];
			if (d[k]) {
				res->what = O_RULE;
				res->rule = i;
				res->kind = k;
				hits++;
				rule_hits++;
			}
		}
		if (pb != (d[0] + d[2] + d[3]) * len || db != d[1] * len)
			die("%s: rule %s: bytes moved %llu passed / %llu dropped for %llu/%llu/%llu/%llu packets of %zu bytes",
			    prog, live[i].name, (unsigned long long)pb,
			    (unsigned long long)db, (unsigned long long)d[0],
			    (unsigned long long)d[1], (unsigned long long)d[2],
			    (unsigned long long)d[3], len);
	}
	/* a later fragment of a dropped datagram meets no rule */
	if (later == 1 && later_dropped == 1 && !rule_hits)
		moved[O_FOLLOWED] = 1;
	else if (later_dropped > (rule_hits ? 1u : 0u))
		die("%s: frag_later_dropped moved by %llu", prog,
		    (unsigned long long)later_dropped);
	for (i = 0; i < O_RULE; i++) {
		total += moved[i];
		if (moved[i]) {
			res->what = i;
			hits++;
		}
	}
	if (total != 1 || hits != 1)
		die("%s: packets moved by 1 but the other counters by %llu (in %u places)",
		    prog, (unsigned long long)total, hits);
	if (drop != (res->what == O_FOLLOWED || res->what == O_MAPPED ||
		     (res->what == O_RULE && res->kind == 1)))
		die("%s: verdict %s but counted as %s%s%s", prog,
		    drop ? "drop" : "pass", outcome_names[res->what],
		    res->what == O_RULE ? " " : "",
		    res->what == O_RULE ? live[res->rule].name : "");
	if (new_clients && (res->what != O_RULE || res->kind == 3))
		die("%s: %llu client states created for a frame counted as %s%s",
		    prog, (unsigned long long)new_clients,
		    outcome_names[res->what],
		    res->what == O_RULE ? " (exempt)" : "");
	if (new_clients > 1)
		die("%s: %llu client states created for one frame", prog,
		    (unsigned long long)new_clients);
}

static void check_class(const char *prog, enum class want,
			const struct result *got)
{
	bool decided = got->what == O_NO_RULE || got->what == O_RULE ||
		       got->what == O_FOLLOWED;
	bool ok;

	switch (want) {
	case C_NON_IP:
		ok = got->what == O_NON_IP;
		break;
	case C_MALFORMED:
		ok = got->what == O_MALFORMED;
		break;
	case C_CONTROL:
		ok = got->what == O_CONTROL;
		break;
	case C_MAPPED:
		ok = got->what == O_MAPPED;
		break;
	default:
		ok = decided && got->what != O_FOLLOWED;
		if (want == C_FRAGMENT)
			ok = decided;
		break;
	}
	/* what the fragment and chain counters say of the frame */
	ok = ok && got->frag[0] == (want == C_FIRST || want == C_FRAGMENT) &&
	     got->frag[1] == (want == C_FIRST) &&
	     got->frag[2] == (want == C_FRAGMENT) &&
	     got->frag[3] == (want == C_LONG) &&
	     got->frag[4] == (want == C_DEEP_VLAN);
	if (!ok)
		die("%s: counted as %s (fragments/first/later/long/vlan %llu/%llu/%llu/%llu/%llu); the reference parser says %s",
		    prog, outcome_names[got->what],
		    (unsigned long long)got->frag[0],
		    (unsigned long long)got->frag[1],
		    (unsigned long long)got->frag[2],
		    (unsigned long long)got->frag[3],
		    (unsigned long long)got->frag[4], class_names[want]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct result rx = { 0 }, rt = { 0 };
	enum class want;
	struct snap now;
	__u32 retval = ~0U;
	int err;

	if (size < 14 || size > 1514)
		return -1;
	now_ms += STEP_MS;
	sl_instance_set_time(&in, now_ms);
	want = ref_parse(data, size);

	err = sl_instance_run(&in, false, -1, data, size, 1, &retval, NULL);
	if (err)
		die("xdp: test run of %zu bytes: %s", size, strerror(-err));
	if (retval != XDP_PASS && retval != XDP_DROP)
		die("xdp: verdict %u", retval);
	read_snap(&now);
	check_deltas("xdp", &last, &now, retval == XDP_DROP, size, &rx);
	check_class("xdp", want, &rx);
	last = now;

	retval = ~0U;
	err = sl_instance_run(&in, true, -1, data, size, 1, &retval, NULL);
	if (err == -EINVAL)
		return 0;	/* a frame the skb test run refuses */
	if (err)
		die("tc: test run of %zu bytes: %s", size, strerror(-err));
	if (retval != TC_ACT_OK && retval != TC_ACT_SHOT)
		die("tc: verdict %u", retval);
	read_snap(&now);
	check_deltas("tc", &last, &now, retval == TC_ACT_SHOT, size, &rt);
	check_class("tc", want, &rt);
	last = now;
	/* XDP's drop of a later fragment by a bytes limit marked its datagram
	 * dropped: TC's run of the same frame follows that
	 */
	if (rx.what == O_RULE && rx.kind == 1 && rt.what == O_FOLLOWED &&
	    want == C_FRAGMENT)
		return 0;
	if (rx.what != rt.what || (rx.what == O_RULE && rx.rule != rt.rule))
		die("xdp counted the frame as %s %s, tc as %s %s",
		    outcome_names[rx.what],
		    rx.what == O_RULE ? live[rx.rule].name : "",
		    outcome_names[rt.what],
		    rt.what == O_RULE ? live[rt.rule].name : "");
	if (rx.what == O_RULE && (rx.kind == 3) != (rt.kind == 3))
		die("xdp and tc disagree on the exemption (rule %s)",
		    live[rx.rule].name);
	return 0;
}
