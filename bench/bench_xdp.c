// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ns/packet of slicelimit's data path with BPF_PROG_TEST_RUN, side by side
 * with three floors: XDP_DROP alone, a bare per-source counter in an LRU
 * per-CPU hash, and the parse any classifier does (Ethernet, VLAN, IP, L4,
 * then XDP_PASS; bench/floor.bpf.c). Every case is set up first (each state in its own private
 * instance), then all are measured in interleaved rounds, so that noise
 * from a shared machine falls on all of them alike. We print the median,
 * min and max over ROUNDS of the kernel's per-packet mean over REPEAT
 * packets, on CPU 0, and the median's ratio to each floor. Then the
 * new-source path (a spoofed flood's): one run per packet, each from a
 * source never seen, beside the bare counter's insert; before and with
 * probation (include/sl_newcomer.h).
 *
 * --rounds, --packets and --clients shrink the run for slow machines (the
 * many-CPU bed in bench/cpus/ runs it under TCG); --json prints one object
 * with the same figures on stdout for a script, and the human report on
 * stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>
#include <unistd.h>
#include "state/aggregate.h"
#include "util/parse.h"
#include "instance/instance.h"
#include "replay/request_packet.h"
#include "util/progress.h"
#include "rules/rules.h"
#include "sl_algo.h"
#include "sl_key.h"
#include <sodium.h>
#include "sync/engine.h"
#include "sync/wire.h"
#include "floor.skel.h"
#include "slicelimit.skel.h"

#define MAX_ROUNDS	7
#define REPEAT		1000000
#define MAX_CASES	24

struct bench_case {
	const char *name;
	int prog_fd;
	uint8_t pkt[SL_PACKET_MAX];
	size_t len;
	__u32 verdict;
	double ns[MAX_ROUNDS];
};

/* Rounds of every measurement and packets per case and round: the defaults,
 * or less (--rounds, --packets).
 */
static int nr_rounds = MAX_ROUNDS;
static unsigned packets = REPEAT;

/* The sync figures, kept for --json. */
static struct {
	double first_ms, median_ms, min_ms, max_ms;
	__u64 first_datagrams, first_bytes, datagrams, bytes;
} sync_res;

static struct bench_case cases[MAX_CASES];
static int nr_cases;

/* The floors, the first cases (add_cases): every ratio is over one. */
enum { CASE_DROP, CASE_COUNTER, CASE_PARSE, NR_FLOORS };

/* --case: only the per-packet cases whose name holds it, beside the
 * floors, for a profile of one path; NULL: every case and section.
 */
static const char *only_case;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void addr(const char *s, struct sl_addr *a)
{
	if (sl_parse_addr(s, a))
		abort();
}

static int apply_yaml(struct sl_instance *in, const char *yaml)
{
	struct sl_ruleset rs;
	int err;

	err = sl_rules_load_buffer("bench", yaml, strlen(yaml), &rs);
	if (!err)
		err = sl_rules_apply(&in->maps, &rs);
	sl_rules_free(&rs);
	return err;
}

/* A UDP packet from src to port; `warm` copies first so it is over limit. */
static void add_case(const char *name, int fd, const char *src, __u16 port,
		     __u32 verdict, struct sl_instance *warm)
{
	struct bench_case *c = &cases[nr_cases];
	struct sl_addr s, d;
	int i;

	if (only_case && nr_cases >= NR_FLOORS && !strstr(name, only_case))
		return;
	nr_cases++;
	addr(src, &s);
	addr(strchr(src, ':') ? "2001:db8:ffff::1" : "192.0.2.1", &d);
	c->name = name;
	c->prog_fd = fd;
	c->verdict = verdict;
	c->len = sl_packet_udp(c->pkt, &s, &d, 1234, port, 18);
	for (i = 0; warm && i < 64; i++)
		sl_instance_run(warm, false, 0, c->pkt, c->len, 1, NULL, NULL);
}

/* `times` packets in a row from each of n sources (10.x.y.z). */
static int touch_clients(struct sl_instance *in, unsigned first, unsigned n,
			 __u16 port, unsigned times)
{
	struct sl_addr src, dst;
	uint8_t pkt[SL_PACKET_MAX];
	unsigned i, k;
	size_t len;

	addr("192.0.2.1", &dst);
	addr("10.0.0.0", &src);
	for (i = first; i < first + n; i++) {
		__u32 v = htonl(0x0a000000 + 1 + i);

		memcpy(&src.byte[12], &v, 4);
		len = sl_packet_udp(pkt, &src, &dst, 1234, port, 18);
		/* single runs: a repeat re-links the program into the XDP
		 * dispatcher, which can wait for an RCU grace period
		 */
		for (k = 0; k < times; k++)
			if (sl_instance_run(in, false, 0, pkt, len, 1, NULL, NULL))
				return -1;
	}
	return 0;
}

/* Clients 10.0.0.1 .. n with a state each: a new key's first packet
 * only puts it on probation, its second gives it a state.
 */
static int fill_clients(struct sl_instance *in, unsigned n, __u16 port)
{
	return touch_clients(in, 0, n, port, 2);
}

/* The new-source path: every packet from a source never seen before, as
 * in a spoofed random-source flood. One run per packet (a repeat would
 * replay a known source), the median of new_packets() per round; each
 * table is first filled from userspace with NEW_PREFILL entries, more
 * than it holds, so that every measured packet meets a full table, as it
 * does in a flood (filled from userspace: 1.2 million runs would take
 * longer than the rest of the benchmark).
 * The cases run interleaved, like the others, and side by side with the
 * floors: XDP_DROP run the same way (what one run costs) and the bare
 * counter's insert (floor_count's LRU insert with eviction).
 */
#define NEW_PREFILL	300000u

struct new_case {
	const char *name;
	int prog_fd;
	__u8 net;		/* sources net.x.y.z, never repeated */
	__u32 verdict;
	int (*fill)(void *ctx);	/* the table full before the first round */
	void *ctx;
	__u32 next;		/* the next source's host part */
	double ns[MAX_ROUNDS];
};

static struct new_case new_cases[4];
static int nr_new_cases;

/* Packets per case and round: a fiftieth of --packets' (20,000 by default). */
static unsigned new_packets(void)
{
	return packets / 50;
}

/* The bare counter's table: NEW_PREFILL sources 200.x.y.z. */
static int fill_floor(void *ctx)
{
	struct floor_bpf *fl = ctx;
	int fd = bpf_map__fd(fl->maps.floor_sources), cpus = libbpf_num_possible_cpus();
	__u64 *zero = calloc(cpus > 0 ? cpus : 1, sizeof(__u64));
	__u32 i, key;

	if (!zero)
		return -ENOMEM;
	for (i = 0; i < NEW_PREFILL; i++) {
		key = htonl(200u << 24 | i);
		if (bpf_map_update_elem(fd, &key, zero, BPF_ANY)) {
			free(zero);
			return -errno;
		}
	}
	free(zero);
	return 0;
}

static int fill_states(void *ctx);

/* The client table full of known clients, as where probation protects
 * them, and every probation way taken, by entries as young as the
 * measured ones.
 */
static int fill_probation(void *ctx)
{
	struct sl_instance *in = ctx;
	struct sl_newcomer_bucket b;
	__u32 i, w, buckets = sl_map_capacity(in->maps.newcomers);

	if (fill_states(in))
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	for (i = 0; i < buckets; i++) {
		for (w = 0; w < SL_NEWCOMER_WAYS; w++) {
			b.tag[w] = (i * SL_NEWCOMER_WAYS + w) | 1;
			b.units[w] = 1;
			b.first_ms[w] = 1000000;
		}
		if (bpf_map_update_elem(in->maps.newcomers, &i, &b, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* NEW_PREFILL client states 200.x.y.z under the instance's first rule. */
static int fill_states(void *ctx)
{
	struct sl_instance *in = ctx;
	struct sl_client zero_state;
	struct sl_client_key key;
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	__u32 i, v;
	unsigned nr;

	if (sl_rules_read_live(&in->maps, &rules, &nr, &cfg) || !nr)
		return -ENOENT;
	memset(&zero_state, 0, sizeof(zero_state));
	memset(&key, 0, sizeof(key));
	key.rule_id = rules[0].id;
	free(rules);
	key.addr.byte[10] = key.addr.byte[11] = 0xff;
	for (i = 0; i < NEW_PREFILL; i++) {
		v = htonl(200u << 24 | i);
		memcpy(&key.addr.byte[12], &v, 4);
		if (bpf_map_update_elem(in->maps.clients, &key, &zero_state, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* n packets from fresh sources through c; the median duration, or -1. */
static double fresh_sources_ns(struct new_case *c, unsigned n, double *buf)
{
	struct sl_addr src, dst;
	uint8_t pkt[SL_PACKET_MAX];
	unsigned i;

	addr("192.0.2.1", &dst);
	addr("10.0.0.0", &src);
	for (i = 0; i < n; i++) {
		__u32 v = htonl((__u32)c->net << 24 | (++c->next & 0xffffff));
		size_t len;

		memcpy(&src.byte[12], &v, 4);
		len = sl_packet_udp(pkt, &src, &dst, 1234, 5000, 18);
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt,
			    .data_size_in = len);
		if (bpf_prog_test_run_opts(c->prog_fd, &opts) ||
		    opts.retval != c->verdict) {
			fprintf(stderr, "%s: run failed or verdict %u, expected %u\n",
				c->name, opts.retval, c->verdict);
			return -1;
		}
		buf[i] = opts.duration;
	}
	qsort(buf, n, sizeof(*buf), cmp_double);
	return buf[n / 2];
}

static void add_new_case(const char *name, int fd, __u8 net, __u32 verdict,
			 int (*fill)(void *), void *ctx)
{
	new_cases[nr_new_cases++] = (struct new_case){
		.name = name, .prog_fd = fd, .net = net, .verdict = verdict,
		.fill = fill, .ctx = ctx };
}

/* Fill, then nr_rounds interleaved rounds; each case's medians sorted. */
static int run_new_sources(void)
{
	double *buf = calloc(new_packets(), sizeof(double));
	int r, i;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < nr_new_cases; i++)
		if (new_cases[i].fill && new_cases[i].fill(new_cases[i].ctx)) {
			fprintf(stderr, "%s: cannot fill its table\n",
				new_cases[i].name);
			goto err;
		}
	for (r = 0; r < nr_rounds; r++)
		for (i = 0; i < nr_new_cases; i++) {
			new_cases[i].ns[r] = fresh_sources_ns(&new_cases[i],
							      new_packets(), buf);
			if (new_cases[i].ns[r] < 0)
				goto err;
		}
	for (i = 0; i < nr_new_cases; i++)
		qsort(new_cases[i].ns, nr_rounds, sizeof(double), cmp_double);
	free(buf);
	return 0;
err:
	free(buf);
	return -EINVAL;
}

static void print_new_sources(void)
{
	const double *drop = new_cases[0].ns, *insert = new_cases[1].ns;
	int i;

	printf("\nnew sources, one run per packet, median of %u per round, %d interleaved rounds,\n"
	       "every table first filled with %u entries (full, as in a flood)\n\n",
	       new_packets(), nr_rounds, NEW_PREFILL);
	printf("%-52s %8s %8s %8s %10s %10s\n", "case", "median", "min", "max",
	       "x XDP_DROP", "x insert");
	for (i = 0; i < nr_new_cases; i++) {
		const double *ns = new_cases[i].ns;

		printf("%-52s %6.0fns %6.0fns %6.0fns %10.2f %10.2f\n",
		       new_cases[i].name, ns[nr_rounds / 2], ns[0],
		       ns[nr_rounds - 1], ns[nr_rounds / 2] / drop[nr_rounds / 2],
		       ns[nr_rounds / 2] / insert[nr_rounds / 2]);
	}
}

/* The data path's goals (docs/MEASUREMENTS.md): each a case's
 * median over a floor's median from the same run.
 */
enum goal_floor { FLOOR_DROP, FLOOR_COUNTER, FLOOR_PARSE, FLOOR_INSERT };

static const struct goal {
	const char *path;
	const char *name;	/* a case, or with FLOOR_INSERT a new source case */
	enum goal_floor floor;
	double at_most;
} goals[] = {
	{ "over limit, production (TAI) clock", "over limit: sliding, TAI clock",
	  FLOOR_COUNTER, 1.5 },
	{ "over limit, model clock", "over limit: sliding", FLOOR_COUNTER, 1.3 },
	{ "accept (under limit), TAI clock", "under limit (accept), sliding, TAI clock",
	  FLOOR_COUNTER, 3.0 },
	{ "no rule matched", "no rule matched", FLOOR_PARSE, 1.25 },
	{ "new client (insert)", "new source: probation (ways full), sliding",
	  FLOOR_INSERT, 1.5 },
};

static const char *const floor_names[] = { "x XDP_DROP", "x counter",
					    "x parse-only floor", "x counter insert" };

/* The case a per-packet goal's ratio is over. */
static const int floor_case[] = {
	[FLOOR_DROP] = CASE_DROP, [FLOOR_COUNTER] = CASE_COUNTER,
	[FLOOR_PARSE] = CASE_PARSE,
};

/* A goal's ratio, or -1 if its case did not run (--case). */
static double goal_ratio(const struct goal *g)
{
	int i, m = nr_rounds / 2;

	if (g->floor == FLOOR_INSERT) {
		if (only_case)
			return -1;	/* the new sources did not run */
		for (i = 0; i < nr_new_cases; i++)
			if (!strcmp(new_cases[i].name, g->name))
				return new_cases[i].ns[m] / new_cases[1].ns[m];
		return -1;
	}
	for (i = 0; i < nr_cases; i++)
		if (!strcmp(cases[i].name, g->name))
			return cases[i].ns[m] / cases[floor_case[g->floor]].ns[m];
	return -1;
}

static void print_goals(void)
{
	size_t i;

	printf("\ngoals, medians over the floors of this run\n\n");
	printf("%-40s %10s %8s %-18s %s\n", "path", "ratio", "goal", "floor",
	       "met");
	for (i = 0; i < sizeof(goals) / sizeof(goals[0]); i++) {
		double r = goal_ratio(&goals[i]);

		if (r < 0)
			continue;
		printf("%-40s %10.2f %8.2f %-18s %s\n", goals[i].path, r,
		       goals[i].at_most, floor_names[goals[i].floor],
		       r <= goals[i].at_most ? "yes" : "no");
	}
}

static json_object *goals_json(void)
{
	json_object *a = json_object_new_array(), *c;
	size_t i;

	for (i = 0; i < sizeof(goals) / sizeof(goals[0]); i++) {
		double r = goal_ratio(&goals[i]);

		if (r < 0)
			continue;
		c = json_object_new_object();
		json_object_object_add(c, "path", json_object_new_string(goals[i].path));
		json_object_object_add(c, "case", json_object_new_string(goals[i].name));
		json_object_object_add(c, "floor", json_object_new_string(floor_names[goals[i].floor]));
		json_object_object_add(c, "ratio", json_object_new_double(r));
		json_object_object_add(c, "at_most", json_object_new_double(goals[i].at_most));
		json_object_object_add(c, "met", json_object_new_boolean(r <= goals[i].at_most));
		json_object_array_add(a, c);
	}
	return a;
}

/* An aggregation pass: every client's tally, read with batched lookups
 * (what top, metrics and a round that walks every client do).
 */
struct agg {
	const struct sl_rule *rule;
	__u64 now, clients, used;
};

static int agg_one(void *ctx, const struct sl_client_key *key,
		   const void *state, __u32 value_size)
{
	struct agg *a = ctx;
	struct sl_params p;
	struct sl_tally t;

	sl_params_from_rule(&p, a->rule);
	sl_tally_state(&t, state, &p, a->now);
	a->clients++;
	a->used += t.used;
	return 0;
}

static double aggregate_ms(struct sl_instance *in, __u64 *clients)
{
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	struct timespec t0, t1;
	struct agg a = { .now = 1000000 };
	unsigned nr;

	if (sl_rules_read_live(&in->maps, &rules, &nr, &cfg) || !nr)
		return -1;
	a.rule = &rules[0];
	clock_gettime(CLOCK_MONOTONIC, &t0);
	sl_for_each_client(&in->maps, agg_one, &a);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	free(rules);
	*clients = a.clients;
	return (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
}

/* A sync round (user/sync/engine.c) over the aggregation instance: the time to
 * find the changed clients and encode their units, and the bytes one
 * node sends per peer. Datagrams are counted, not sent.
 */
struct wire_count {
	__u64 datagrams, bytes;
};

static int count_datagram(void *ctx, unsigned peer, const uint8_t *msg,
			  size_t len)
{
	struct wire_count *w = ctx;

	(void)peer;
	(void)msg;
	w->datagrams++;
	w->bytes += len;
	return 0;
}

static double sync_round_ms(struct sl_sync_engine *s, __u64 now,
			    struct wire_count *w)
{
	struct timespec t0, t1;

	memset(w, 0, sizeof(*w));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (sl_sync_collect(s, now, count_datagram, w))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
}

/* The study's load: 5,000 requests/s per node, so 1,000 per 0.2 s round,
 * from 1,000 different clients (the worst case: every request a change)
 * among the 200,000 the table holds; then one round.
 */
static void bench_sync(struct sl_instance *agg)
{
	struct sl_sync_opts o = {
		.layout = SL_LAYOUT_DELAYED_SYNC, .node = 1,
		.interval_ms = 200, .incarnation = 1,
	};
	double first, rounds[MAX_ROUNDS];
	struct wire_count w0, w;
	uint8_t pub1[SL_WIRE_KEY], sec1[SL_WIRE_KEY];
	uint8_t pub2[SL_WIRE_KEY], sec2[SL_WIRE_KEY];
	struct sl_sync_engine *s;
	__u64 now = 1000000;
	int r;

	/* one peer, node 2: the round seals each datagram for it, as the
	 * service does for every peer (so the figures are per peer)
	 */
	sl_wire_keypair(pub1, sec1);
	sl_wire_keypair(pub2, sec2);
	if (sl_wire_keys_init(&o.keys, 1, sec1) ||
	    sl_wire_keys_add(&o.keys, sec1, 2, pub2, NULL)) {
		fprintf(stderr, "bench_sync: cannot make the nodes' keys\n");
		return;
	}
	s = sl_sync_new(&agg->maps, &o);
	sodium_memzero(sec1, sizeof(sec1));
	if (!s) {
		perror("sl_sync_new");
		return;
	}
	first = sync_round_ms(s, now, &w0);
	for (r = 0; r < nr_rounds; r++) {
		now += 200;
		sl_instance_set_time(agg, now);
		touch_clients(agg, 1000 * r, 1000, 5000, 1);
		rounds[r] = sync_round_ms(s, now, &w);
	}
	qsort(rounds, nr_rounds, sizeof(double), cmp_double);
	sync_res.first_ms = first;
	sync_res.first_datagrams = w0.datagrams;
	sync_res.first_bytes = w0.bytes;
	sync_res.median_ms = rounds[nr_rounds / 2];
	sync_res.min_ms = rounds[0];
	sync_res.max_ms = rounds[nr_rounds - 1];
	sync_res.datagrams = w.datagrams;
	sync_res.bytes = w.bytes;
	printf("%-40s %6.1fms (all 200,000 clients changed: %llu datagrams, %llu bytes per peer)\n",
	       "sync round, first", first, (unsigned long long)w0.datagrams,
	       (unsigned long long)w0.bytes);
	printf("%-40s %6.1fms median, %.1f min, %.1f max (1,000 changed of 200,000: "
	       "%llu datagrams, %llu bytes per peer per round; at 5 rounds/s "
	       "%llu bytes/s to each peer, %llu bytes/s to 7 peers)\n",
	       "sync round, study load", rounds[nr_rounds / 2], rounds[0],
	       rounds[nr_rounds - 1], (unsigned long long)w.datagrams,
	       (unsigned long long)w.bytes, (unsigned long long)w.bytes * 5,
	       (unsigned long long)w.bytes * 5 * 7);
	sl_sync_free(s);
}

/* The kernel's own account of a map's memory (fdinfo "memlock"). */
static unsigned long long map_memlock(int fd)
{
	unsigned long long v = 0;
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static const char base_rules[] =
	"rules:\n"
	"  - { name: sliding, protocol: udp, ports: 5000, limit: 10 }\n"
	"  - { name: fixed, protocol: udp, ports: 5001, limit: 10, algorithm: fixed }\n"
	"  - { name: bucket, protocol: udp, ports: 5002, limit: 10, algorithm: token-bucket }\n"
	"  - { name: plain, protocol: udp, ports: 5003, limit: 10, algorithm: sliding-plain }\n"
	"  - { name: log, protocol: udp, ports: 5004, limit: 10, algorithm: sliding-log }\n"
	"  - { name: counter, protocol: udp, ports: 5005, limit: 10, algorithm: sliding-counter }\n"
	"  - { name: open, protocol: udp, ports: 6000, limit: 4000000000 }\n"
	"  - { name: watch, protocol: udp, ports: 7000, limit: 10, action: shadow }\n";

/* --json: one object with the case medians, the aggregation and sync
 * figures, and every map of the aggregation instance (200,000 clients, the
 * default table) with its fdinfo memlock, so that a script can add up the
 * client tables of whatever layout it is given.
 */
static void print_json(const struct sl_instance *agg, double new_ns,
		       const double *agg_ms, __u64 agg_clients, FILE *out)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	json_object *c, *maps = json_object_new_array();
	struct bpf_map *m;
	int i;

	json_object_object_add(o, "cpus", json_object_new_int(agg->maps.nr_cpus));
	json_object_object_add(o, "rounds", json_object_new_int(nr_rounds));
	json_object_object_add(o, "packets", json_object_new_int64(packets));
	for (i = 0; i < nr_cases; i++) {
		const double *ns = cases[i].ns;

		c = json_object_new_object();
		json_object_object_add(c, "name", json_object_new_string(cases[i].name));
		json_object_object_add(c, "median_ns", json_object_new_double(ns[nr_rounds / 2]));
		json_object_object_add(c, "min_ns", json_object_new_double(ns[0]));
		json_object_object_add(c, "max_ns", json_object_new_double(ns[nr_rounds - 1]));
		json_object_object_add(c, "x_drop", json_object_new_double(
			ns[nr_rounds / 2] / cases[CASE_DROP].ns[nr_rounds / 2]));
		json_object_object_add(c, "x_counter", json_object_new_double(
			ns[nr_rounds / 2] / cases[CASE_COUNTER].ns[nr_rounds / 2]));
		json_object_object_add(c, "x_parse", json_object_new_double(
			ns[nr_rounds / 2] / cases[CASE_PARSE].ns[nr_rounds / 2]));
		json_object_array_add(a, c);
	}
	json_object_object_add(o, "cases", a);
	a = json_object_new_array();
	for (i = 0; i < nr_new_cases; i++) {
		const double *ns = new_cases[i].ns;

		c = json_object_new_object();
		json_object_object_add(c, "name", json_object_new_string(new_cases[i].name));
		json_object_object_add(c, "median_ns", json_object_new_double(ns[nr_rounds / 2]));
		json_object_object_add(c, "min_ns", json_object_new_double(ns[0]));
		json_object_object_add(c, "max_ns", json_object_new_double(ns[nr_rounds - 1]));
		json_object_object_add(c, "x_drop", json_object_new_double(
			ns[nr_rounds / 2] / new_cases[0].ns[nr_rounds / 2]));
		json_object_object_add(c, "x_insert", json_object_new_double(
			ns[nr_rounds / 2] / new_cases[1].ns[nr_rounds / 2]));
		json_object_array_add(a, c);
	}
	json_object_object_add(o, "new_sources", a);
	json_object_object_add(o, "new_client_ns", json_object_new_double(new_ns));
	json_object_object_add(o, "goals", goals_json());
	c = json_object_new_object();
	json_object_object_add(c, "clients", json_object_new_int64(agg_clients));
	json_object_object_add(c, "median_ms", json_object_new_double(agg_ms[nr_rounds / 2]));
	json_object_object_add(c, "min_ms", json_object_new_double(agg_ms[0]));
	json_object_object_add(c, "max_ms", json_object_new_double(agg_ms[nr_rounds - 1]));
	json_object_object_add(o, "aggregation", c);
	c = json_object_new_object();
	json_object_object_add(c, "first_ms", json_object_new_double(sync_res.first_ms));
	json_object_object_add(c, "first_datagrams", json_object_new_int64(sync_res.first_datagrams));
	json_object_object_add(c, "first_bytes", json_object_new_int64(sync_res.first_bytes));
	json_object_object_add(c, "median_ms", json_object_new_double(sync_res.median_ms));
	json_object_object_add(c, "min_ms", json_object_new_double(sync_res.min_ms));
	json_object_object_add(c, "max_ms", json_object_new_double(sync_res.max_ms));
	json_object_object_add(c, "datagrams", json_object_new_int64(sync_res.datagrams));
	json_object_object_add(c, "bytes", json_object_new_int64(sync_res.bytes));
	json_object_object_add(o, "sync_round", c);
	bpf_object__for_each_map(m, agg->skel->obj) {
		int fd = bpf_map__fd(m);

		if (fd < 0)
			continue;
		c = json_object_new_object();
		json_object_object_add(c, "name", json_object_new_string(bpf_map__name(m)));
		json_object_object_add(c, "type", json_object_new_string(
			libbpf_bpf_map_type_str(bpf_map__type(m)) ?: "?"));
		json_object_object_add(c, "max_entries", json_object_new_int64(bpf_map__max_entries(m)));
		json_object_object_add(c, "key_size", json_object_new_int64(bpf_map__key_size(m)));
		json_object_object_add(c, "value_size", json_object_new_int64(bpf_map__value_size(m)));
		json_object_object_add(c, "memlock", json_object_new_int64(map_memlock(fd)));
		json_object_array_add(maps, c);
	}
	json_object_object_add(o, "maps", maps);
	fprintf(out, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: bench_xdp [--rounds N] [--packets N] [--clients N] [--json]\n"
"  --rounds N    interleaved rounds of every measurement, 1..%d (default %d)\n"
"  --packets N   packets per case and round, 1000..%d (default %d)\n"
"  --clients N   client table of the instances that hold at most 21,000\n"
"                clients, 32768..%d (default %d); the 100,000- and\n"
"                200,000-client instances keep the default\n"
"  --json        one JSON object on stdout; the report goes to stderr\n"
"  --case TEXT   only the per-packet cases whose name holds TEXT, beside\n"
"                the floors (to profile one path); no other section\n",
		MAX_ROUNDS, MAX_ROUNDS, REPEAT, REPEAT, SL_DEFAULT_CLIENTS,
		SL_DEFAULT_CLIENTS);
}

/* The options into the globals, io_small and *json: -1, or the exit
 * status.
 */
static int parse_args(int argc, char **argv,
		      struct sl_instance_opts *io_small, FILE **json)
{
	static const struct option longopts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "packets", required_argument, NULL, 'p' },
		{ "clients", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "case", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int opt;

	while ((opt = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			if (sl_parse_uint(optarg, 1, MAX_ROUNDS, &v)) {
				fprintf(stderr, "--rounds: %s: not in 1..%d\n",
					optarg, MAX_ROUNDS);
				return 2;
			}
			nr_rounds = v;
			break;
		case 'p':
			if (sl_parse_uint(optarg, 1000, REPEAT, &v)) {
				fprintf(stderr, "--packets: %s: not in 1000..%d\n",
					optarg, REPEAT);
				return 2;
			}
			packets = v;
			break;
		case 'c':
			if (sl_parse_uint(optarg, 32768, SL_DEFAULT_CLIENTS, &v)) {
				fprintf(stderr, "--clients: %s: not in 32768..%d\n",
					optarg, SL_DEFAULT_CLIENTS);
				return 2;
			}
			io_small->clients = v;
			break;
		case 'C':
			only_case = optarg;
			break;
		case 'j':
			/* the report goes on, to stderr: the JSON alone on stdout */
			*json = fdopen(dup(STDOUT_FILENO), "w");
			if (!*json || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
				perror("--json");
				return 1;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/* The measured instances: base, and the 100,000-client (big), 1,000-rule
 * (many), 1,000-client (small), 200,000-client (agg) and TAI-clock ones,
 * and one without probation (open: every new key gets a state at once,
 * the path before probation).
 */
struct bench {
	struct floor_bpf *fl;
	struct sl_instance base, big, many, small, agg, tai, open;
};

/* No probation: sl_newcomer_conf with no buckets. */
static int no_probation(struct sl_instance *in)
{
	struct sl_newcomer_conf off = { 0 };
	__u32 zero = 0;

	return bpf_map_update_elem(in->maps.newcomer_conf, &zero, &off, BPF_ANY);
}

static int bench_open(struct bench *b, const struct sl_instance_opts *io_small)
{
	struct sl_instance_opts io = { .model_clock = true }, prod = { 0 };

	prod.clients = io_small->clients;
	b->fl = floor_bpf__open_and_load();
	if (!b->fl || sl_instance_open(&b->base, io_small) ||
	    sl_instance_open(&b->big, &io) ||
	    sl_instance_open(&b->many, io_small) ||
	    sl_instance_open(&b->small, io_small) ||
	    sl_instance_open(&b->agg, &io) || sl_instance_open(&b->tai, &prod) ||
	    sl_instance_open(&b->open, io_small) || no_probation(&b->open)) {
		fprintf(stderr, "cannot load the programs (root? bpffs?)\n");
		return -ENOENT;
	}
	sl_instance_set_time(&b->base, 1000000);
	sl_instance_set_time(&b->big, 1000000);
	sl_instance_set_time(&b->many, 1000000);
	sl_instance_set_time(&b->small, 1000000);
	sl_instance_set_time(&b->agg, 1000000);
	sl_instance_set_time(&b->open, 1000000);
	return 0;
}

static int bench_rules(struct bench *b)
{
	char *yaml;
	int i, err;

	/* 1,000 rules, the measured one last by priority */
	yaml = malloc(1000 * 96 + 64);
	if (!yaml)
		return -ENOMEM;
	strcpy(yaml, "rules:\n");
	for (i = 0; i < 999; i++)
		sprintf(yaml + strlen(yaml),
			"  - { name: r%d, protocol: udp, ports: %d, limit: 10 }\n",
			i, 10000 + i);
	strcat(yaml, "  - { name: sliding, protocol: udp, ports: 5000, limit: 10 }\n");
	err = apply_yaml(&b->base, base_rules) || apply_yaml(&b->big, base_rules) ||
	      apply_yaml(&b->open, base_rules) ||
	      apply_yaml(&b->many, yaml) || apply_yaml(&b->small, base_rules) ||
	      apply_yaml(&b->agg, base_rules) || apply_yaml(&b->tai, base_rules) ||
	      fill_clients(&b->big, 100000, 5000) ||
	      fill_clients(&b->small, 1000, 5000) ||
	      fill_clients(&b->agg, 200000, 5000);
	free(yaml);
	if (err) {
		fprintf(stderr, "cannot set up the benchmark's rules and clients\n");
		return -EINVAL;
	}
	return 0;
}

static void add_cases(struct bench *b)
{
	int fd = bpf_program__fd(b->base.skel->progs.sl_xdp);

	add_case("floor: XDP_DROP only", bpf_program__fd(b->fl->progs.floor_drop),
		 "198.51.100.7", 5000, XDP_DROP, NULL);
	add_case("floor: per-source LRU per-CPU count",
		 bpf_program__fd(b->fl->progs.floor_count), "198.51.100.7", 5000,
		 XDP_DROP, NULL);
	add_case("floor: parse only (Eth, VLAN, IP, L4), XDP_PASS",
		 bpf_program__fd(b->fl->progs.floor_parse), "198.51.100.7", 5000,
		 XDP_PASS, NULL);
	add_case("no rule matched", fd, "198.51.100.7", 9999, XDP_PASS, NULL);
	add_case("under limit (accept), sliding", fd, "198.51.100.7", 6000,
		 XDP_PASS, NULL);
	add_case("over limit: sliding", fd, "198.51.100.7", 5000, XDP_DROP, &b->base);
	add_case("over limit: fixed", fd, "198.51.100.7", 5001, XDP_DROP, &b->base);
	add_case("over limit: token-bucket", fd, "198.51.100.7", 5002, XDP_DROP, &b->base);
	add_case("over limit: sliding-plain", fd, "198.51.100.7", 5003, XDP_DROP, &b->base);
	add_case("over limit: sliding-log", fd, "198.51.100.7", 5004, XDP_DROP, &b->base);
	add_case("over limit: sliding-counter", fd, "198.51.100.7", 5005, XDP_DROP, &b->base);
	add_case("over limit: sliding, IPv6", fd, "2001:db8::7", 5000, XDP_DROP, &b->base);
	add_case("over limit: sliding, shadow", fd, "198.51.100.7", 7000, XDP_PASS, &b->base);
	add_case("over limit: sliding, 1,000 clients",
		 bpf_program__fd(b->small.skel->progs.sl_xdp), "198.51.100.7", 5000,
		 XDP_DROP, &b->small);
	add_case("over limit: sliding, 100,000 clients",
		 bpf_program__fd(b->big.skel->progs.sl_xdp), "198.51.100.7", 5000,
		 XDP_DROP, &b->big);
	/* the production clock (TAI), which the model clock never reads */
	add_case("over limit: sliding, TAI clock",
		 bpf_program__fd(b->tai.skel->progs.sl_xdp), "198.51.100.7", 5000,
		 XDP_DROP, &b->tai);
	add_case("under limit (accept), sliding, TAI clock",
		 bpf_program__fd(b->tai.skel->progs.sl_xdp), "198.51.100.7", 6000,
		 XDP_PASS, NULL);
	add_case("over limit: sliding, 1,000 rules",
		 bpf_program__fd(b->many.skel->progs.sl_xdp), "198.51.100.7", 5000,
		 XDP_DROP, &b->many);

	add_new_case("floor: XDP_DROP only", bpf_program__fd(b->fl->progs.floor_drop),
		     11, XDP_DROP, NULL, NULL);
	add_new_case("floor: bare counter's insert (LRU, full)",
		     bpf_program__fd(b->fl->progs.floor_count), 12, XDP_DROP,
		     fill_floor, b->fl);
	add_new_case("new source: probation (ways full), sliding", fd, 13,
		     XDP_PASS, fill_probation, &b->base);
	add_new_case("new source: a state at once (LRU, full), sliding",
		     bpf_program__fd(b->open.skel->progs.sl_xdp), 14, XDP_PASS,
		     fill_states, &b->open);
}

/* Every case, nr_rounds interleaved rounds; each case's durations sorted. */
static int run_cases(bool quiet)
{
	struct sl_progress progress;
	int r, i;

	/* on a terminal, and not with --json: how far the rounds are */
	memset(&progress, 0, sizeof(progress));
	if (!quiet) {
		sl_progress_start(&progress, "bench_xdp",
				  (size_t)nr_rounds * nr_cases);
		progress.unit = "measurements";
	}
	for (r = 0; r < nr_rounds; r++) {
		for (i = 0; i < nr_cases; i++) {
			struct bench_case *c = &cases[i];

			sl_progress_update(&progress, (size_t)r * nr_cases + i);
			LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = c->pkt,
				    .data_size_in = c->len, .repeat = packets);

			if (bpf_prog_test_run_opts(c->prog_fd, &opts)) {
				perror(c->name);
				return -errno;
			}
			if (opts.retval != c->verdict) {
				fprintf(stderr, "%s: verdict %u, expected %u\n",
					c->name, opts.retval, c->verdict);
				return -EINVAL;
			}
			c->ns[r] = opts.duration;
		}
	}
	sl_progress_end(&progress);
	for (i = 0; i < nr_cases; i++)
		qsort(cases[i].ns, nr_rounds, sizeof(double), cmp_double);
	return 0;
}

static void print_cases(void)
{
	int i;

	printf("BPF_PROG_TEST_RUN, UDP packets, CPU 0, %d interleaved rounds x %u packets per case\n\n",
	       nr_rounds, packets);
	printf("%-48s %8s %8s %8s %10s %10s %10s\n", "case", "median", "min",
	       "max", "x XDP_DROP", "x counter", "x parse");
	for (i = 0; i < nr_cases; i++)
		printf("%-48s %6.0fns %6.0fns %6.0fns %10.2f %10.2f %10.2f\n",
		       cases[i].name, cases[i].ns[nr_rounds / 2], cases[i].ns[0],
		       cases[i].ns[nr_rounds - 1],
		       cases[i].ns[nr_rounds / 2] / cases[CASE_DROP].ns[nr_rounds / 2],
		       cases[i].ns[nr_rounds / 2] / cases[CASE_COUNTER].ns[nr_rounds / 2],
		       cases[i].ns[nr_rounds / 2] / cases[CASE_PARSE].ns[nr_rounds / 2]);
}

/* The client table's size, and each algorithm's state. */
static void print_client_table(const struct sl_instance *base)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	unsigned long long mem = map_memlock(base->maps.clients);

	bpf_obj_get_info_by_fd(base->maps.clients, &info, &ilen);
	printf("\nclient table: %u entries, %d CPUs, value %u bytes (one per "
	       "client, shared by the CPUs), key %u bytes: %llu bytes in all "
	       "(fdinfo memlock), %.0f bytes per client\n",
	       info.max_entries, base->maps.nr_cpus, info.value_size,
	       info.key_size, mem, (double)mem / info.max_entries);
	printf("state by algorithm: sliding, fixed, token-bucket share %zu bytes "
	       "(sl_clients, preallocated LRU); sliding-plain and sliding-counter %zu "
	       "(sl_clients_plain), sliding-log %zu (sl_clients_log), each LRU within 64 MiB\n",
	       sizeof(struct sl_client), sizeof(struct sl_client_plain),
	       sizeof(struct sl_client_log));
	printf("design study: 12 slices x 48 bytes = 576 bytes per client\n");
}

int main(int argc, char **argv)
{
	struct sl_instance_opts io_small = { .model_clock = true };
	double new_ns, agg_ms[MAX_ROUNDS];
	__u64 agg_clients = 0;
	struct bench b;
	FILE *json = NULL;
	int r;

	memset(&b, 0, sizeof(b));
	r = parse_args(argc, argv, &io_small, &json);
	if (r >= 0)
		return r;
	if (sl_pin_to_cpu(0))
		return 1;
	if (bench_open(&b, &io_small) || bench_rules(&b))
		return 1;
	add_cases(&b);
	if (run_cases(json != NULL))
		return 1;
	print_cases();
	if (only_case) {
		print_goals();
		goto out;
	}

	if (run_new_sources())
		return 1;
	print_new_sources();
	print_goals();
	new_ns = new_cases[2].ns[nr_rounds / 2];
	for (r = 0; r < nr_rounds; r++)
		agg_ms[r] = aggregate_ms(&b.agg, &agg_clients);
	qsort(agg_ms, nr_rounds, sizeof(double), cmp_double);
	printf("%-40s %6.1fms median, %.1f min, %.1f max (%llu clients, "
	       "batched lookups, %d CPUs)\n",
	       "aggregation pass", agg_ms[nr_rounds / 2], agg_ms[0],
	       agg_ms[nr_rounds - 1], (unsigned long long)agg_clients,
	       b.agg.maps.nr_cpus);
	bench_sync(&b.agg);
	print_client_table(&b.base);
	if (json) {
		fflush(stdout);
		print_json(&b.agg, new_ns, agg_ms, agg_clients, json);
		fclose(json);
	}
out:
	sl_instance_close(&b.open);
	sl_instance_close(&b.tai);
	sl_instance_close(&b.agg);
	sl_instance_close(&b.small);
	sl_instance_close(&b.many);
	sl_instance_close(&b.big);
	sl_instance_close(&b.base);
	floor_bpf__destroy(b.fl);
	return 0;
}
