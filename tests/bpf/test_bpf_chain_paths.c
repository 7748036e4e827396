// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: bpf_fixture pkt_builder instance_fixture */
/*
 * The data path's two ways to a packet's first rule give one answer: the
 * inline one (no address prefix in the rule set, the rule among the first
 * 64: a popcount over the port class's bitmap and one sl_apply_rule) and
 * the walk (sl_rule_position, then sl_run_rules).
 *
 * A random differential search through the real object. Two private
 * instances get the same random rule set, but the second's has one more
 * rule at its end, "walk", whose source and destination prefix is
 * 100::/64. That rule turns on the source and destination prefix lookups
 * (has_src, has_dst) of the second instance, so every packet there finds
 * its first rule by the walk, while the first instance takes the inline
 * path whenever the rule set has no prefixes of its own. It changes no
 * verdict: its priority puts it after every other rule, so it moves no
 * rule's position; 100::/64 is the discard-only prefix (RFC 6666) and no
 * packet here comes from or goes to it, so no lookup returns it (an
 * orphan fragment or a frame with too many tags, which any rule whose
 * addresses match would take, finds it no more), and no packet goes to
 * its port, TCP 9. The rules' ids, which client keys and the probation
 * hash hold, are the same on both sides too (hold_walk_id_apart).
 *
 * Every packet (IPv4 and IPv6, some with extension headers; TCP, UDP and
 * ICMP echo; up to three VLAN tags; first, later and orphan fragments;
 * XDP and TC) runs through both
 * at a realistic clock (CLOCK_TAI ms), and must get the same verdict and
 * move the same rule counters; at the end of each rule set the client
 * states, the keys on probation and the global counters must be equal.
 * Each whole packet's counter deltas are also checked against a model of
 * the rule file's semantics written from slicelimit-rules(5), not from
 * the data path: the rules that counted it are the ones that match it in
 * order, up to the first that dropped it or does not continue.
 *
 * Seeded: SL_SEED=N reproduces a run; the seed is printed first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "instance/instance.h"
#include "instance/instance_maps.h"
#include "rules/rules.h"
#include "bpf_fixture.h"

#define SETS		24
#define PACKETS		125
#define MAX_SET_RULES	80
#define TAI_START	1800000000000ULL	/* ms: 2027 */

static unsigned long long seed;
static unsigned long long rng_state;
static char pkt_desc[256];	/* the packet of a report */
static const char *set_yaml;	/* the rule set of a report */

/* splitmix64: the same sequence from the same seed on every libc */
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned pick(unsigned n)
{
	return rnd() % n;
}

static bool chance(unsigned percent)
{
	return pick(100) < percent;
}

/* ---- the model of the rule file ----------------------------------------- */

struct prefix {
	int family;		/* 0: none */
	uint8_t addr[16];
	unsigned len;
};

struct model_rule {
	char name[32];
	enum { P_ANY, P_TCP, P_UDP, P_ICMP } proto;
	bool has_ports;
	unsigned lo, hi;
	struct prefix src, dst, exempt;
	bool continues;
	unsigned priority;	/* given, or its place in the file */
};

struct model_pkt {
	int family;
	uint8_t src[16], dst[16];
	int l4;			/* IPPROTO_TCP, _UDP or _ICMP (echo) */
	unsigned dport;
	bool whole;		/* its ports and addresses are read: modelled */
};

static void parse_prefix(const char *text, struct prefix *p)
{
	char buf[64], *slash;

	snprintf(buf, sizeof(buf), "%s", text);
	slash = strchr(buf, '/');
	assert_non_null(slash);
	*slash = 0;
	p->family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	assert_int_equal(inet_pton(p->family, buf, p->addr), 1);
	p->len = atoi(slash + 1);
}

/* An address of the packet's family in the prefix: a rule's IPv4
 * prefix holds no IPv6 address, and the other way round.
 */
static bool in_prefix(const struct prefix *p, int family, const uint8_t *a)
{
	unsigned i;

	if (p->family != family)
		return false;
	for (i = 0; i < p->len; i++) {
		unsigned bit = 7 - i % 8;

		if (((a[i / 8] >> bit) & 1) != ((p->addr[i / 8] >> bit) & 1))
			return false;
	}
	return true;
}

/* slicelimit-rules(5), FIELDS: protocol, ports, source, destination. */
static bool model_matches(const struct model_rule *r, const struct model_pkt *p)
{
	switch (r->proto) {
	case P_TCP:
		if (p->l4 != IPPROTO_TCP)
			return false;
		break;
	case P_UDP:
		if (p->l4 != IPPROTO_UDP)
			return false;
		break;
	case P_ICMP:
		if (p->l4 != IPPROTO_ICMP)
			return false;
		break;
	case P_ANY:
		/* with ports, TCP and UDP only */
		if (p->l4 == IPPROTO_ICMP && r->has_ports)
			return false;
		break;
	}
	if (r->has_ports && p->l4 != IPPROTO_ICMP &&
	    (p->dport < r->lo || p->dport > r->hi))
		return false;
	if (r->src.family && !in_prefix(&r->src, p->family, p->src))
		return false;
	if (r->dst.family && !in_prefix(&r->dst, p->family, p->dst))
		return false;
	return true;
}

/* ---- random rule sets --------------------------------------------------- */

static const unsigned ports_low[] = { 53, 80, 443, 1000, 1001, 1002, 1003 };
static const unsigned ports_high[] = { 2000, 2001, 2002 };	/* rules past 64 */
static const char *const srcs4[] = {
	"192.0.2.1", "192.0.2.2", "192.0.2.9", "192.0.2.200", "198.51.100.7",
	"10.0.0.1",
};
static const char *const srcs6[] = {
	"2001:db8:1::1", "2001:db8:1::2", "2001:db8:1:0:1::9",
	"2001:db8:1:1::1", "2001:db8:2::5",
};
static const char *const dsts4[] = { "203.0.113.1", "203.0.113.200" };
static const char *const dsts6[] = { "2001:db8:ff::1", "2001:db8:fe::1" };
static const char *const src_prefixes[] = {
	"192.0.2.0/24", "192.0.2.0/30", "198.51.100.0/24", "0.0.0.0/0",
	"2001:db8:1::/48", "2001:db8::/32", "2001:db8:2::/64",
};
static const char *const dst_prefixes[] = {
	"203.0.113.0/24", "203.0.113.0/25", "2001:db8:ff::/48",
};
static const char *const exempt_prefixes[] = {
	"192.0.2.0/31", "10.0.0.0/8", "2001:db8:1::/64",
};
static const char *const algorithms[] = {
	"sliding", "sliding", "sliding", "fixed", "token-bucket",
	"sliding-counter", "sliding-plain", "sliding-log",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct ruleset {
	struct model_rule rule[MAX_SET_RULES];
	unsigned nr;
	unsigned order[MAX_SET_RULES];	/* file index by priority position */
	unsigned pos_of[MAX_SET_RULES];	/* priority position by file index */
	bool prefixes;		/* source or destination prefixes allowed */
	bool priorities;	/* some rules given a priority */
	char *yaml;
	size_t at, cap;
};

static void emit(struct ruleset *rs, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(rs->yaml + rs->at, rs->cap - rs->at, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && rs->at + n < rs->cap);
	rs->at += n;
}

static void random_port(unsigned pos, unsigned *lo, unsigned *hi)
{
	const unsigned *pool = ports_low;
	unsigned n = NELEM(ports_low);

	if (pos >= 64 && chance(60)) {
		pool = ports_high;
		n = NELEM(ports_high);
	}
	*lo = pool[pick(n)];
	*hi = *lo;
	if (chance(25))
		*hi = *lo + pick(3);
}

static void random_rule(struct ruleset *rs, unsigned set, unsigned pos)
{
	struct model_rule *r = &rs->rule[pos];
	const char *algo = algorithms[pick(NELEM(algorithms))];
	static const char *const proto_names[] = { "any", "tcp", "udp", "icmp" };
	unsigned unit = pick(10);	/* 0..6 packets, 7..8 bytes, 9 syn */

	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "s%u-r%u", set, pos);
	r->proto = pick(10) < 3 ? P_ANY : 1 + pick(3);
	/* in a long set, the first 64 rules leave some ports to the rest */
	if (rs->nr > 64 && pos < 64 && r->proto == P_ICMP && chance(70))
		r->proto = P_UDP;
	if (r->proto != P_ICMP && (chance(85) || (rs->nr > 64 && pos < 64))) {
		r->has_ports = true;
		random_port(pos, &r->lo, &r->hi);
	}
	if (rs->prefixes && chance(30))
		parse_prefix(src_prefixes[pick(NELEM(src_prefixes))], &r->src);
	if (rs->prefixes && chance(15))
		parse_prefix(dst_prefixes[pick(NELEM(dst_prefixes))], &r->dst);
	if (chance(15))
		parse_prefix(exempt_prefixes[pick(NELEM(exempt_prefixes))],
			     &r->exempt);
	r->continues = chance(40);
	r->priority = pos;
	if (rs->priorities && chance(30))
		r->priority = pick(3 * rs->nr);
	if (unit == 9 && r->proto != P_ANY && r->proto != P_TCP)
		unit = 0;
	if (unit >= 7 && !strcmp(algo, "sliding-log"))
		unit = 0;

	emit(rs, "  - name: %s\n    protocol: %s\n", r->name,
	     proto_names[r->proto]);
	if (r->has_ports && r->lo == r->hi)
		emit(rs, "    ports: %u\n", r->lo);
	else if (r->has_ports)
		emit(rs, "    ports: %u-%u\n", r->lo, r->hi);
	if (r->src.family) {
		char a[64];

		inet_ntop(r->src.family, r->src.addr, a, sizeof(a));
		emit(rs, "    source: %s/%u\n", a, r->src.len);
	}
	if (r->dst.family) {
		char a[64];

		inet_ntop(r->dst.family, r->dst.addr, a, sizeof(a));
		emit(rs, "    destination: %s/%u\n", a, r->dst.len);
	}
	if (r->exempt.family) {
		char a[64];

		inet_ntop(r->exempt.family, r->exempt.addr, a, sizeof(a));
		emit(rs, "    exempt: [%s/%u]\n", a, r->exempt.len);
	}
	emit(rs, "    algorithm: %s\n    window: %us\n", algo, 1 + pick(5));
	if (unit >= 7)
		emit(rs, "    unit: bytes\n    limit: %u\n", 200 + pick(2000));
	else
		emit(rs, "    limit: %u\n%s", 1 + pick(4),
		     unit == 9 ? "    unit: syn\n" : "");
	if (chance(15))
		emit(rs, "    action: shadow\n");
	if (chance(20))
		emit(rs, "    key: {ipv4_prefix: %u, ipv6_prefix: %u%s}\n",
		     chance(50) ? 24 : 32, chance(50) ? 48 : 64,
		     chance(30) ? ", per_port: true" : "");
	if (r->continues)
		emit(rs, "    continue: true\n");
	if (r->priority != pos)
		emit(rs, "    priority: %u\n", r->priority);
}

static void random_ruleset(struct ruleset *rs, unsigned set)
{
	unsigned i, r;

	/* a third short, a third with first rules past 64 */
	r = pick(3);
	rs->nr = r == 0 ? 1 + pick(12) : r == 1 ? 1 + pick(MAX_SET_RULES) :
		 65 + pick(MAX_SET_RULES - 64);
	rs->prefixes = chance(35);
	rs->priorities = chance(30);
	rs->at = 0;
	emit(rs, "rules:\n");
	for (i = 0; i < rs->nr; i++)
		random_rule(rs, set, i);
	/* slicelimit-rules(5): lower priority first, ties in file order */
	for (i = 0; i < rs->nr; i++) {
		unsigned j = i;

		while (j && rs->rule[rs->order[j - 1]].priority >
			    rs->rule[i].priority) {
			rs->order[j] = rs->order[j - 1];
			j--;
		}
		rs->order[j] = i;
	}
	for (i = 0; i < rs->nr; i++)
		rs->pos_of[rs->order[i]] = i;
}

/* ---- random packets ----------------------------------------------------- */

enum shape { WHOLE, FIRST_FRAG, LATER_FRAG, ORPHAN_FRAG, DEEP_VLAN };

struct datagram {		/* the last first fragment sent */
	bool v6;
	char src[64], dst[64];
	int l4;
	uint32_t id;
	bool valid;
};

static void l3(struct pkt *p, bool v6, const char *s, const char *d,
	       uint16_t frag4)
{
	if (v6)
		ip6_from(p, s, d);
	else
		ip4_from(p, s, d, 5, frag4);
}

/* The transport header of a packet that carries one: TCP with random
 * flags, UDP, or an ICMP echo request.
 */
static void l4_header(struct pkt *p, int l4, unsigned dport)
{
	static const uint8_t tcp_flags[] = { SYN, SYN, ACK, SYN | ACK, PSH | ACK };

	if (l4 == IPPROTO_TCP)
		tcp(p, dport, tcp_flags[pick(NELEM(tcp_flags))]);
	else if (l4 == IPPROTO_UDP)
		udp(p, dport);
	else
		icmp(p);
}

static void random_packet(struct pkt *p, struct model_pkt *m,
			  struct datagram *dg, uint32_t *next_id)
{
	bool v6 = chance(40);
	const char *s = v6 ? srcs6[pick(NELEM(srcs6))] : srcs4[pick(NELEM(srcs4))];
	const char *d = v6 ? dsts6[pick(NELEM(dsts6))] : dsts4[pick(NELEM(dsts4))];
	unsigned r = pick(100), tags = 0, i;
	enum shape shape = r < 70 ? WHOLE : r < 80 ? FIRST_FRAG :
			   r < 90 ? LATER_FRAG : r < 96 ? ORPHAN_FRAG : DEEP_VLAN;
	int l4 = pick(10) < 4 ? IPPROTO_TCP : pick(10) < 7 ? IPPROTO_UDP : IPPROTO_ICMP;
	unsigned dport = chance(70) ? ports_low[pick(NELEM(ports_low))] :
			 chance(70) ? ports_high[pick(NELEM(ports_high))] :
			 2003 + pick(3);

	if (shape == LATER_FRAG && !dg->valid)
		shape = ORPHAN_FRAG;
	if (shape == LATER_FRAG) {
		v6 = dg->v6;
		s = dg->src;
		d = dg->dst;
		l4 = dg->l4;
	}

	memset(p, 0, sizeof(*p));
	memset(m, 0, sizeof(*m));
	eth(p);
	tags = shape == DEEP_VLAN ? 3 : pick(10) < 7 ? 0 : 1 + pick(2);
	for (i = 0; i < tags; i++)
		vlan(p, i == 0 && tags > 1 ? ETH_P_8021AD : ETH_P_8021Q);

	switch (shape) {
	case WHOLE:
	case DEEP_VLAN:
		l3(p, v6, s, d, 0);
		/* an extension chain the parser walks to the ports */
		for (i = v6 && chance(20) ? 1 + pick(2) : 0; i > 0; i--)
			ip6_ext(p, i == 1 ? IPPROTO_DSTOPTS : IPPROTO_HOPOPTS,
				pick(2));
		l4_header(p, l4, dport);
		break;
	case FIRST_FRAG:
		if (v6) {
			l3(p, v6, s, d, 0);
			ip6_frag(p, 0, true);
		} else {
			l3(p, v6, s, d, 0x2000);
		}
		l4_header(p, l4, dport);
		ip_id(p, *next_id);
		dg->v6 = v6;
		snprintf(dg->src, sizeof(dg->src), "%s", s);
		snprintf(dg->dst, sizeof(dg->dst), "%s", d);
		dg->l4 = l4;
		dg->id = (*next_id)++;
		dg->valid = true;
		break;
	case LATER_FRAG:
	case ORPHAN_FRAG:
		if (v6) {
			l3(p, v6, s, d, 0);
			ip6_frag(p, 3, chance(50));
		} else {
			l3(p, v6, s, d, 3 | (chance(50) ? 0x2000 : 0));
		}
		proto(p, l4 == IPPROTO_ICMP && v6 ? IPPROTO_ICMPV6 : l4, 24);
		ip_id(p, shape == LATER_FRAG ? dg->id : (*next_id)++);
		break;
	}
	payload(p, pick(400));
	finish(p);

	m->whole = shape == WHOLE || shape == FIRST_FRAG;
	m->family = v6 ? AF_INET6 : AF_INET;
	assert_int_equal(inet_pton(m->family, s, m->src), 1);
	assert_int_equal(inet_pton(m->family, d, m->dst), 1);
	m->l4 = l4;
	m->dport = dport;
	snprintf(pkt_desc, sizeof(pkt_desc), "%s %s -> %s proto %d port %u, %u tags%s",
		 shape == WHOLE ? "whole" : shape == FIRST_FRAG ? "first fragment" :
		 shape == LATER_FRAG ? "later fragment" :
		 shape == ORPHAN_FRAG ? "orphan fragment" : "deep vlan",
		 s, d, l4, dport, tags, "");
}

/* ---- the comparison ----------------------------------------------------- */

struct side {
	struct sl_instance *in;
	__u32 id[MAX_SET_RULES];
	unsigned nr_ids;	/* past the highest id of the set */
	struct sl_rule_stats last[MAX_SET_RULES];
	struct sl_rule_stats by_id[SL_MAX_RULES];
};

/* The counters of the rules of ids 0..nr-1, summed over the CPUs: one
 * batched lookup, where a lookup per rule would make the run a minute.
 */
static void read_stats(struct sl_instance *in, unsigned nr,
		       struct sl_rule_stats *out)
{
	static struct sl_rule_stats per_cpu[SL_MAX_RULES * 8];
	static __u32 keys[SL_MAX_RULES];
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	unsigned cpus = in->maps.nr_cpus, i, c, f;
	__u32 count = nr, out_batch;
	int err;

	assert_true(cpus <= 8 && nr <= SL_MAX_RULES);
	err = bpf_map_lookup_batch(in->maps.rule_stats, NULL, &out_batch, keys,
				   per_cpu, &count, &opts);
	assert_true(!err || errno == ENOENT);
	assert_int_equal(count, nr);
	for (i = 0; i < nr; i++) {
		__u64 *sum = (__u64 *)&out[i];

		memset(&out[i], 0, sizeof(out[i]));
		for (c = 0; c < cpus; c++)
			for (f = 0; f < sizeof(out[i]) / sizeof(__u64); f++)
				sum[f] += ((__u64 *)&per_cpu[i * cpus + c])[f];
	}
}

static void read_ids(struct side *s, const struct ruleset *rs)
{
	unsigned i;

	s->nr_ids = 0;
	for (i = 0; i < rs->nr; i++) {
		s->id[i] = sl_test_live_rule(s->in, rs->rule[i].name).id;
		if (s->id[i] + 1 > s->nr_ids)
			s->nr_ids = s->id[i] + 1;
	}
	read_stats(s->in, s->nr_ids, s->by_id);
	for (i = 0; i < rs->nr; i++)
		s->last[i] = s->by_id[s->id[i]];
}

static __u64 counted(const struct sl_rule_stats *s)
{
	return s->passed + s->dropped + s->shadow_dropped + s->exempt;
}

static unsigned failures;

static void report(unsigned set, unsigned n, const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!failures && getenv("SL_VERBOSE"))
		print_error("%s", set_yaml);
	if (failures++ >= 10)
		return;
	if (n < PACKETS)
		print_error("seed %llu, rule set %u, packet %u (%s): %s\n",
			    seed, set, n, pkt_desc, msg);
	else
		print_error("seed %llu, rule set %u, at its end: %s\n", seed,
			    set, msg);
}

/* The rules that counted one packet, checked against the model: those
 * that match it, in order, up to the first that dropped it or does not
 * continue; a rule that counted it as exempt has its source exempt.
 */
static void check_model(const struct ruleset *rs, const struct model_pkt *m,
			const struct sl_rule_stats *before,
			const struct sl_rule_stats *after, enum verdict v,
			unsigned set, unsigned n)
{
	bool chain_on = true;
	enum verdict want = PASS;
	unsigned pos;

	for (pos = 0; pos < rs->nr; pos++) {
		unsigned i = rs->order[pos];
		const struct model_rule *r = &rs->rule[i];
		bool match = chain_on && model_matches(r, m);
		bool moved = counted(&after[i]) != counted(&before[i]);
		bool dropped = after[i].dropped != before[i].dropped;
		bool exempt = after[i].exempt != before[i].exempt;

		if (match != moved) {
			report(set, n, "rule %s %s the packet, the model says it %s",
			       r->name, moved ? "counted" : "did not count",
			       match ? "matches" : "does not");
			return;
		}
		if (!match)
			continue;
		if (exempt != (r->exempt.family &&
			       in_prefix(&r->exempt, m->family, m->src))) {
			report(set, n, "rule %s: exempt %d", r->name, exempt);
			return;
		}
		if (dropped) {
			want = DROP;
			chain_on = false;
		} else if (!r->continues) {
			chain_on = false;
		}
	}
	if (v != want)
		report(set, n, "verdict %s, the counters say %s",
		       verdict_name(v), verdict_name(want));
}

/* Every client state of one table of `a` is in `b`, equal. */
static void compare_table(int fa, int fb, const char *what, unsigned set)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	size_t vsize;
	struct sl_client_key key, next;
	void *prev = NULL, *va, *vb;
	unsigned na = 0, nb = 0;

	if (fa < 0 || fb < 0)
		return;
	assert_int_equal(bpf_obj_get_info_by_fd(fa, &info, &info_len), 0);
	assert_int_equal(info.key_size, sizeof(key));
	vsize = info.value_size;
	if (info.type == BPF_MAP_TYPE_PERCPU_HASH ||
	    info.type == BPF_MAP_TYPE_LRU_PERCPU_HASH)
		vsize = ((vsize + 7) & ~7UL) * libbpf_num_possible_cpus();
	va = calloc(1, vsize);
	vb = calloc(1, vsize);
	assert_true(va && vb);
	while (!bpf_map_get_next_key(fa, prev, &next)) {
		key = next;
		prev = &key;
		na++;
		if (bpf_map_lookup_elem(fa, &key, va))
			continue;
		if (bpf_map_lookup_elem(fb, &key, vb)) {
			report(set, PACKETS, "%s: rule id %u's client only on the inline side",
			       what, key.rule_id);
			continue;
		}
		if (memcmp(va, vb, vsize))
			report(set, PACKETS, "%s: rule id %u's client differs",
			       what, key.rule_id);
	}
	prev = NULL;
	while (!bpf_map_get_next_key(fb, prev, &next)) {
		key = next;
		prev = &key;
		nb++;
	}
	if (na != nb)
		report(set, PACKETS, "%s: %u clients inline, %u walked", what,
		       na, nb);
	free(va);
	free(vb);
}

/* The keys on probation are hashed under a random seed, drawn anew by an
 * apply that removes rules: the walked side is given the inline side's
 * seed and table, so that no difference of hash collisions between the
 * two reads as one of the paths.
 */
static void share_probation(struct sl_instance *a, struct sl_instance *b)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 zero = 0, buckets = sl_map_capacity(a->maps.newcomers);
	__u32 count = buckets, out_batch, *keys;
	struct sl_newcomer_bucket *table;
	struct sl_newcomer_conf conf;
	int err;

	assert_int_equal(bpf_map_lookup_elem(a->maps.newcomer_conf, &zero,
					     &conf), 0);
	assert_int_equal(bpf_map_update_elem(b->maps.newcomer_conf, &zero,
					     &conf, BPF_ANY), 0);
	keys = calloc(buckets, sizeof(*keys));
	table = calloc(buckets, sizeof(*table));
	assert_true(keys && table);
	err = bpf_map_lookup_batch(a->maps.newcomers, NULL, &out_batch, keys,
				   table, &count, &opts);
	assert_true(!err || errno == ENOENT);
	assert_int_equal(count, buckets);
	assert_int_equal(bpf_map_update_batch(b->maps.newcomers, keys, table,
					      &count, &opts), 0);
	free(keys);
	free(table);
}

static void compare_states(struct sl_instance *a, struct sl_instance *b,
			   unsigned set)
{
	struct sl_global_stats ga = sl_test_global_stats(a);
	struct sl_global_stats gb = sl_test_global_stats(b);
	unsigned i;

	compare_table(a->maps.clients, b->maps.clients, "sl_clients", set);
	compare_table(a->maps.clients_plain, b->maps.clients_plain,
		      "sl_clients_plain", set);
	compare_table(a->maps.clients_log, b->maps.clients_log,
		      "sl_clients_log", set);
	if (sl_test_newcomers_held(a) != sl_test_newcomers_held(b))
		report(set, PACKETS, "keys on probation: %u inline, %u walked",
		       sl_test_newcomers_held(a), sl_test_newcomers_held(b));
	for (i = 0; i < sizeof(ga) / sizeof(__u64); i++)
		if (((__u64 *)&ga)[i] != ((__u64 *)&gb)[i])
			report(set, PACKETS, "global counter %u: %llu inline, "
			       "%llu walked", i,
			       (unsigned long long)((__u64 *)&ga)[i],
			       (unsigned long long)((__u64 *)&gb)[i]);
}

#define WALK_RULE "  - {name: walk, protocol: tcp, ports: 9, limit: 1,\n" \
		  "     source: 100::/64, destination: 100::/64,\n" \
		  "     priority: 4294967295}\n"
#define WALK_ID	(2 * MAX_SET_RULES + 1)

/* A new rule takes the lowest id that no live rule holds (the rules an
 * apply removes still hold theirs during it): the rules of a set get ids
 * below 2 * MAX_SET_RULES on both sides, and the same ones, as long as
 * "walk" holds an id above them. It is given one here, once: the rule
 * after as many placeholders, which are then removed.
 */
static void hold_walk_id_apart(struct sl_instance *a, struct sl_instance *b,
			       struct ruleset *rs)
{
	unsigned i;

	rs->at = 0;
	emit(rs, "rules:\n");
	for (i = 0; i < WALK_ID; i++)
		emit(rs, "  - {name: hold%u, protocol: tcp, ports: 9, limit: 1}\n",
		     i);
	emit(rs, WALK_RULE);
	sl_test_apply(b, rs->yaml);
	assert_int_equal(sl_test_live_rule(b, "walk").id, WALK_ID);
	sl_test_apply(b, "rules:\n" WALK_RULE);
	/* as many applies: a client state holds the rules' epoch */
	sl_test_apply(a, "rules: []\n");
	sl_test_apply(a, "rules: []\n");
}

static void test_chain_paths_inline_first_rule_equals_walk(void **state)
{
	struct fixture *f = *state;
	struct fixture walked;
	struct ruleset rs = { .cap = 1 << 20 };
	struct side a = { .in = &f->in }, b = { .in = &walked.in };
	struct datagram dg = {};
	uint32_t next_id = 1;
	unsigned set, n, i, packets = 0, inline_met = 0, past64 = 0;
	__u64 now = TAI_START;
	const char *env = getenv("SL_SEED");

	seed = env ? strtoull(env, NULL, 0) : (unsigned long long)time(NULL);
	rng_state = seed;
	print_message("seed %llu (SL_SEED=%llu reproduces this run)\n", seed,
		      seed);
	rs.yaml = malloc(rs.cap);
	assert_non_null(rs.yaml);
	assert_int_equal(sl_test_open_instance(&walked.in, 4096, now), 0);
	set_time(f, now);
	hold_walk_id_apart(a.in, b.in, &rs);

	for (set = 0; set < SETS && failures < 10; set++) {
		random_ruleset(&rs, set);
		set_yaml = rs.yaml;
		sl_test_apply(a.in, rs.yaml);
		emit(&rs, WALK_RULE);
		sl_test_apply(b.in, rs.yaml);
		share_probation(a.in, b.in);
		read_ids(&a, &rs);
		read_ids(&b, &rs);
		for (i = 0; i < rs.nr; i++)
			if (a.id[i] != b.id[i])
				fail_msg("rule %s: id %u, walked %u", rs.rule[i].name,
					 a.id[i], b.id[i]);
		dg.valid = false;

		for (n = 0; n < PACKETS; n++) {
			struct sl_rule_stats sa[MAX_SET_RULES], sb;
			struct model_pkt m;
			enum verdict va, vb;
			struct pkt p;
			bool tc;

			random_packet(&p, &m, &dg, &next_id);
			tc = chance(30) && runnable(true, &p, p.len);
			now += pick(chance(10) ? 3000 : 300);
			sl_instance_set_time(a.in, now);
			sl_instance_set_time(b.in, now);
			/* one CPU: the per-CPU front cache is the same on both */
			va = run_len(f, tc, 0, &p, p.len);
			vb = run_len(&walked, tc, 0, &p, p.len);
			packets++;
			if (va != vb)
				report(set, n, "verdict %s inline, %s walked",
				       verdict_name(va), verdict_name(vb));
			read_stats(a.in, a.nr_ids, a.by_id);
			read_stats(b.in, b.nr_ids, b.by_id);
			for (i = 0; i < rs.nr; i++) {
				sa[i] = a.by_id[a.id[i]];
				sb = b.by_id[b.id[i]];
				if (memcmp(&sa[i], &sb, sizeof(sb)))
					report(set, n, "rule %s: counters differ "
					       "(passed %llu/%llu dropped %llu/%llu)",
					       rs.rule[i].name,
					       (unsigned long long)sa[i].passed,
					       (unsigned long long)sb.passed,
					       (unsigned long long)sa[i].dropped,
					       (unsigned long long)sb.dropped);
				if (rs.pos_of[i] >= 64 &&
				    counted(&sa[i]) != counted(&a.last[i]))
					past64++;
			}
			for (i = 0; i < rs.nr && !rs.prefixes; i++)
				if (counted(&sa[i]) != counted(&a.last[i])) {
					inline_met++;
					break;
				}
			if (m.whole)
				check_model(&rs, &m, a.last, sa, va, set, n);
			memcpy(a.last, sa, rs.nr * sizeof(sa[0]));
		}
		compare_states(a.in, b.in, set);
	}
	print_message("%u rule sets, %u packets (%u met a rule of a set "
		      "without prefixes), %u counts by rules past 64\n", set,
		      packets, inline_met, past64);
	sl_instance_close(&walked.in);
	free(rs.yaml);
	if (failures)
		fail_msg("%u disagreements; seed %llu", failures, seed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_chain_paths_inline_first_rule_equals_walk, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
