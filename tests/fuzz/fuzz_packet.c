// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_packet: arbitrary frames (14..1514 bytes) through the real BPF
 * object, XDP and TC, with BPF_PROG_TEST_RUN on a private model-clock
 * instance (user/core/instance.h) holding a small rule set of every algorithm.
 *
 * Invariants, per program run, from the counters' deltas:
 *  - the verdict is XDP_PASS/XDP_DROP (TC_ACT_OK/TC_ACT_SHOT); TC may
 *    refuse a short frame with EINVAL, a defined outcome;
 *  - packets moves by 1, and exactly one of non_ip, malformed, fragments,
 *    no_rule, or one rule's passed/dropped/shadow_dropped/exempt moves, by
 *    1: packets == the sum of them all;
 *  - a drop verdict is the rule's `dropped`, and bytes follow the verdict;
 *  - no client state is created (new_clients) for a frame that is non-IP,
 *    malformed, a fragment, exempt or matched by no rule, and at most one
 *    otherwise;
 *  - the class (non_ip, malformed, fragment, or parsed) is the one a
 *    reference parser written from parse.h's contract gives;
 *  - XDP and TC classify the frame alike (which counter, which rule).
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
#include "core/instance.h"
#include "core/instance_maps.h"
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

enum class { C_PARSED, C_NON_IP, C_MALFORMED, C_FRAGMENT };

static const char *const class_names[] = {
	"parsed", "non_ip", "malformed", "fragment",
};

static unsigned be16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

static enum class ref_l4(const uint8_t *p, size_t len, size_t off, unsigned l4)
{
	switch (l4) {
	case 6:		/* TCP: 20 bytes, data offset >= 5 */
		if (off + 20 > len || (p[off + 12] >> 4) < 5)
			return C_MALFORMED;
		return C_PARSED;
	case 17:	/* UDP */
		return off + 8 > len ? C_MALFORMED : C_PARSED;
	case 1:		/* ICMP, ICMPv6: type, code, checksum */
	case 58:
		return off + 4 > len ? C_MALFORMED : C_PARSED;
	default:
		return C_PARSED;
	}
}

static enum class ref_parse(const uint8_t *p, size_t len)
{
	size_t off = 14;
	unsigned type, i, next;

	if (len < 14)
		return C_MALFORMED;
	type = be16(p + 12);
	for (i = 0; i < 2 && (type == 0x8100 || type == 0x88a8); i++) {
		if (off + 4 > len)
			return C_MALFORMED;
		type = be16(p + off + 2);
		off += 4;
	}
	if (type == 0x0800) {
		unsigned ihl;

		if (off + 20 > len || p[off] >> 4 != 4 || (p[off] & 15) < 5)
			return C_MALFORMED;
		ihl = (p[off] & 15) * 4;
		if (off + ihl > len)
			return C_MALFORMED;
		if (be16(p + off + 6) & 0x3fff)
			return C_FRAGMENT;
		return ref_l4(p, len, off + ihl, p[off + 9]);
	}
	if (type != 0x86dd)
		return C_NON_IP;
	if (off + 40 > len || p[off] >> 4 != 6)
		return C_MALFORMED;
	next = p[off + 6];
	off += 40;
	for (i = 0; ; i++) {
		size_t ext;

		if (next == 44)
			return C_FRAGMENT;
		if (next != 0 && next != 43 && next != 60 && next != 135 &&
		    next != 51)
			return ref_l4(p, len, off, next);
		if (i == 8 || off + 2 > len)
			return C_MALFORMED;	/* a 9th extension header */
		ext = next == 51 ? (p[off + 1] + 2u) * 4 : (p[off + 1] + 1u) * 8;
		if (off + ext > len)
			return C_MALFORMED;
		next = p[off];
		off += ext;
	}
}

/* ---- one run ---- */

enum outcome { O_NON_IP, O_MALFORMED, O_FRAGMENT, O_NO_RULE, O_RULE };

struct result {
	enum outcome what;
	unsigned rule;		/* index in live[] for O_RULE */
	int kind;		/* 0 passed, 1 dropped, 2 shadow, 3 exempt */
};

static const char *const outcome_names[] = {
	"non_ip", "malformed", "fragment", "no_rule", "rule",
};

static void check_deltas(const char *prog, const struct snap *a,
			 const struct snap *b, bool drop, size_t len,
			 struct result *res)
{
	__u64 moved[4] = {
		b->g.non_ip - a->g.non_ip, b->g.malformed - a->g.malformed,
		b->g.fragments - a->g.fragments, b->g.no_rule - a->g.no_rule,
	};
	__u64 total = 0, new_clients = b->g.new_clients - a->g.new_clients;
	unsigned i, k, hits = 0;

	if (b->g.packets - a->g.packets != 1)
		die("%s: packets moved by %llu, not 1", prog,
		    (unsigned long long)(b->g.packets - a->g.packets));
	for (i = 0; i < 4; i++) {
		total += moved[i];
		if (moved[i]) {
			res->what = i;
			hits++;
		}
	}
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
			}
		}
		if (pb != (d[0] + d[2] + d[3]) * len || db != d[1] * len)
			die("%s: rule %s: bytes moved %llu passed / %llu dropped for %llu/%llu/%llu/%llu packets of %zu bytes",
			    prog, live[i].name, (unsigned long long)pb,
			    (unsigned long long)db, (unsigned long long)d[0],
			    (unsigned long long)d[1], (unsigned long long)d[2],
			    (unsigned long long)d[3], len);
	}
	if (total != 1 || hits != 1)
		die("%s: packets moved by 1 but the other counters by %llu (in %u places)",
		    prog, (unsigned long long)total, hits);
	if (drop != (res->what == O_RULE && res->kind == 1))
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
	static const enum class of[] = {
		[O_NON_IP] = C_NON_IP, [O_MALFORMED] = C_MALFORMED,
		[O_FRAGMENT] = C_FRAGMENT, [O_NO_RULE] = C_PARSED,
		[O_RULE] = C_PARSED,
	};

	if (of[got->what] != want)
		die("%s: counted as %s; the reference parser says %s", prog,
		    outcome_names[got->what], class_names[want]);
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
