// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* replay: a trace through the real BPF program under the model clock. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include "cli/commands.h"
#include "util/log.h"
#include "util/parse.h"
#include "instance/instance.h"
#include "util/progress.h"
#include "replay/replay.h"
#include "cli/cmd_replay.h"
#include "replay/nodes.h"
#include "rules/rules.h"
#include "sync/engine.h"

static const char replay_help[] =
"Usage: slicelimit replay [TRACE|-] [RULE OPTIONS | --rules FILE]\n"
"                         [--decisions] [--json]\n"
"       slicelimit replay [TRACE|-] [RULE OPTIONS | --rules FILE]\n"
"                         --nodes N [--sync-interval DUR] [--layout NAME]\n"
"                         [--assign lcg:SEED] [--json]\n"
"\n"
"Run a trace through the real BPF program (BPF_PROG_TEST_RUN) with a model\n"
"clock, in a private copy that does not touch the attached one. Each\n"
"request becomes a packet from its client on its CPU.\n"
"\n"
"TRACE (default: standard input) has one request per line:\n"
"  T_MS CLIENT [CPU] [proto=tcp|udp|icmp] [port=N] [dst=ADDR]\n"
"whitespace or commas between columns; '#' starts a comment.\n"
"T_MS is the model clock in ms, non-decreasing, at most 10000000000000\n"
"(10^13, about 317 years); windows and slices are aligned to multiples of\n"
"their length from T_MS = 0, as a live node aligns them to the TAI epoch.\n"
"CPU picks the CPU that decides the request (one state per client for all\n"
"CPUs, so the figures do not depend on it). The fields, in any order\n"
"after CLIENT, are what rules match on: proto (default udp; tcp is a SYN,\n"
"a new connection; icmp an echo request), port, the destination port\n"
"0..65535 (default 9; not with icmp), and dst, the destination address\n"
"(default 192.0.2.1, or 2001:db8::1 for an IPv6 client; the client's\n"
"family). A rule that decides no request of the trace is named in a\n"
"warning.\n"
"\n"
"Rule options (one ad-hoc rule matching every request; the same checks\n"
"as a rule file's fields of these names):\n"
"  --algorithm NAME      sliding (default), sliding-plain, fixed,\n"
"                        token-bucket, sliding-log, sliding-counter\n"
"  --limit N             units per window, 1..4294967295 (required)\n"
"  --window DUR          1ms..12d: 60s (default), 500ms, 0.2s, 1m\n"
"  --slices N            sliding 1..3600 and sliding-plain 1..64 (default\n"
"                        12), sliding-counter 1..63 (default 1: two\n"
"                        windows); at most the window in ms\n"
"  --bucket-capacity N   token-bucket only, 1..4294967295 (default: the\n"
"                        limit)\n"
"  --refill-per-s R      token-bucket only, units per second, e.g. 0.5\n"
"                        (default: limit / window)\n"
"  --rules FILE          a rule file instead (the first rule's window is\n"
"                        the one max_in_window uses)\n"
"\n"
"Across nodes:\n"
"  --nodes N             N nodes (1..32), each its own copy of the program\n"
"                        and its own sync engine, exchanging the real sealed\n"
"                        messages in memory\n"
"  --sync-interval DUR   200ms (default): a round runs at the first request\n"
"                        an interval or more after the last round\n"
"  --layout NAME         bounded (default: each node its share of what the\n"
"                        fleet has left, per round), delayed-sync,\n"
"                        split-quota, predictive, or central (one state\n"
"                        shared by every node)\n"
"  --assign lcg:SEED     pick each request's node with the design study's\n"
"                        generator; else the trace's third column is the\n"
"                        node (0..N-1), and a fourth the CPU (fields\n"
"                        after them as above)\n"
"  A line 'T_MS sync' runs a round at T_MS; a trace with such lines gives\n"
"  the whole schedule and --sync-interval is not used. 'T_MS cut NODE'\n"
"  and 'T_MS heal NODE' take a node off the mesh and back; 'T_MS join\n"
"  NODE' starts its service at T_MS (until then it decides alone).\n"
"\n"
"Output per client: sent, accepted, rejected, max_in_window (the most\n"
"accepts in any interval (t - window, t]). --decisions adds one line per\n"
"request: time, client, accept/reject, remaining, retry-after ms (with\n"
"--nodes, as the node that decided sees them).\n"
"On a terminal (stderr), a long replay redraws one progress line there\n"
"twice a second, cleared at the end; not with --json or --decisions.\n"
"With --json one object: {\"clients\": [{client, sent, accepted, rejected,\n"
"max_in_window}], \"unmatched_rules\": [names of the rules that decided no\n"
"request]}, with --decisions also \"decisions\": [{t_ms, client, accepted,\n"
"rule, remaining, retry_after_ms}]. With --nodes also the sync traffic:\n"
"rounds, messages (datagrams node to node; central: requests, each a touch\n"
"of the shared state), bytes; in JSON \"nodes\", \"layout\",\n"
"\"sync_interval_ms\", \"rounds\", \"messages\", \"bytes\".\n"
"\n"
"Example, the design study's Model B at 90 requests/s:\n"
"  seq 0 5399 | awk '{print int($1*1000/90), \"10.0.0.1\"}' |\n"
"    slicelimit replay --limit 600 --window 60s --nodes 8 --assign lcg:20260730\n";

struct decisions {
	json_object *arr;	/* --json */
};

static void print_decision(void *ctx, const struct sl_trace_req *r,
			   bool accepted, const struct sl_rule *rule,
			   const struct sl_client_view *v)
{
	struct decisions *d = ctx;
	char addr[64];

	sl_format_prefix(&r->client, 128, addr, sizeof(addr));
	if (d->arr) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "t_ms", json_object_new_int64(r->t_ms));
		json_object_object_add(o, "client", json_object_new_string(addr));
		json_object_object_add(o, "accepted", json_object_new_boolean(accepted));
		json_object_object_add(o, "rule", rule ?
			json_object_new_string(rule->name) : NULL);
		json_object_object_add(o, "remaining", json_object_new_int64(v->remaining));
		json_object_object_add(o, "retry_after_ms",
				       json_object_new_int64(v->retry_after_ms));
		json_object_array_add(d->arr, o);
	} else {
		printf("%llu %s %s remaining %llu retry_after_ms %llu\n",
		       (unsigned long long)r->t_ms, addr,
		       accepted ? "accept" : "reject",
		       (unsigned long long)v->remaining,
		       (unsigned long long)v->retry_after_ms);
	}
}

/* A numeric flag in [min, max]; the error names the flag and its range. */
static int flag_uint(const char *flag, const char *arg, uint64_t min,
		     uint64_t max, uint64_t *out)
{
	if (!sl_parse_uint(arg, min, max, out))
		return 0;
	pr_error("--%s: '%s' is not a whole number %llu..%llu", flag, arg,
		 (unsigned long long)min, (unsigned long long)max);
	return -EINVAL;
}

/* The ad-hoc rule's flags, parsed straight into their values; what
 * depends on more than one flag (slices of an algorithm without slices, a
 * bucket's refill) is the rule file's own check, in sl_rule_from_fields.
 */
struct adhoc_rule {
	struct sl_rule_fields f;
	unsigned slices;
	uint64_t bucket_capacity;
	bool set;
};

enum { O_ALGO = 256, O_LIMIT, O_WINDOW, O_SLICES, O_CAP, O_REFILL,
       O_RULES, O_DECISIONS, O_NODES, O_INTERVAL, O_LAYOUT, O_ASSIGN };

static int parse_rule_option(int c, const char *flag, const char *arg,
			     struct adhoc_rule *a)
{
	uint64_t v;

	a->set = true;
	switch (c) {
	case O_ALGO:
		if (!sl_parse_algorithm(arg, &a->f.algorithm))
			return 0;
		pr_error("--algorithm: '%s' is not one of %s, %s, %s, %s, %s, %s",
			 arg, sl_algorithm_name(0), sl_algorithm_name(1),
			 sl_algorithm_name(2), sl_algorithm_name(3),
			 sl_algorithm_name(4), sl_algorithm_name(5));
		return -EINVAL;
	case O_LIMIT:
		return flag_uint(flag, arg, 1, UINT32_MAX, &a->f.limit);
	case O_WINDOW:
		if (sl_parse_duration_ms(arg, &v) || v < 1 ||
		    v > SL_MAX_WINDOW_MS) {
			pr_error("--window: '%s' is not a duration from 1ms to 12d (60s, 500ms, 0.2s, 1m)",
				 arg);
			return -EINVAL;
		}
		a->f.window = arg;
		return 0;
	case O_SLICES:
		/* the most any algorithm takes; each its own bound after */
		if (flag_uint(flag, arg, 1, 3600, &v))
			return -EINVAL;
		a->slices = v;
		a->f.slices = &a->slices;
		return 0;
	case O_CAP:
		a->f.bucket_capacity = &a->bucket_capacity;
		return flag_uint(flag, arg, 1, UINT32_MAX, &a->bucket_capacity);
	default:
		/* --refill-per-s: a rate ("0.5"), checked as a file's
		 * refill_per_s is
		 */
		a->f.refill_per_s = arg;
		return 0;
	}
}

static const char *layout_name(unsigned layout)
{
	return layout == SL_REPLAY_CENTRAL ? "central" : sl_layout_name(layout);
}

/* --nodes, --sync-interval, --layout, --assign (in that order from 0). */
static int parse_node_option(int which, const char *arg,
			     struct sl_replay_nodes_opts *no)
{
	enum sl_layout layout;
	uint64_t ms;
	char *end;
	unsigned long v;

	switch (which) {
	case 0:
		v = strtoul(arg, &end, 10);
		if (*end || !*arg || v < 1 || v > SL_MAX_PEERS) {
			pr_error("--nodes: '%s' is not a number of nodes 1..%d",
				 arg, SL_MAX_PEERS);
			return -1;
		}
		no->nodes = v;
		return 0;
	case 1:
		if (sl_parse_duration_ms(arg, &ms) || !ms || ms > 3600000) {
			pr_error("--sync-interval: '%s' is not a duration from 1ms to 1h (200ms, 0.2s, 5s)",
				 arg);
			return -1;
		}
		no->interval_ms = ms;
		return 0;
	case 2:
		if (!strcmp(arg, "central")) {
			no->layout = SL_REPLAY_CENTRAL;
			return 0;
		}
		if (sl_parse_layout(arg, &layout) || layout == SL_LAYOUT_LOCAL) {
			pr_error("--layout: '%s' is not one of delayed-sync, split-quota, predictive, bounded, central",
				 arg);
			return -1;
		}
		no->layout = layout;
		return 0;
	default:
		if (strncmp(arg, "lcg:", 4) || !arg[4] ||
		    (v = strtoul(arg + 4, &end, 10), *end) || v > UINT32_MAX) {
			pr_error("--assign: '%s' is not lcg:SEED (SEED 0..4294967295)",
				 arg);
			return -1;
		}
		no->assign_lcg = true;
		no->seed = v;
		return 0;
	}
}

static void nodes_json(json_object *o, const struct sl_replay_nodes_opts *no,
		       const struct sl_replay_nodes_stats *ns)
{
	json_object_object_add(o, "nodes", json_object_new_int(no->nodes));
	json_object_object_add(o, "layout",
			       json_object_new_string(layout_name(no->layout)));
	json_object_object_add(o, "sync_interval_ms",
			       json_object_new_int64(no->interval_ms));
	json_object_object_add(o, "rounds", json_object_new_int64(ns->rounds));
	json_object_object_add(o, "messages", json_object_new_int64(ns->messages));
	json_object_object_add(o, "bytes", json_object_new_int64(ns->bytes));
}

static void print_nodes(const struct sl_replay_nodes_opts *no,
			const struct sl_replay_nodes_stats *ns)
{
	printf("sync: %u nodes, %s, %llu rounds, %llu messages, %llu bytes\n",
	       no->nodes, layout_name(no->layout),
	       (unsigned long long)ns->rounds,
	       (unsigned long long)ns->messages,
	       (unsigned long long)ns->bytes);
}

/* A rule the trace never reaches says nothing about the rule: say so,
 * rather than report every request accepted as if it had been tested.
 */
static void warn_unmatched(const struct sl_replay_result *res)
{
	unsigned i;

	for (i = 0; i < res->nr_unmatched; i++)
		pr_warn("rule '%s' decided no request of the trace: no line matches its protocol, ports, source and destination (trace fields proto=, port=, dst=), or rules before it took them",
			res->unmatched[i].name);
}

static json_object *result_json(const struct sl_replay_result *res,
				json_object *decisions)
{
	json_object *o = json_object_new_object();
	json_object *arr = json_object_new_array();
	json_object *un = json_object_new_array();
	char addr[64];
	size_t i;

	for (i = 0; i < res->nr; i++) {
		json_object *c = json_object_new_object();

		sl_format_prefix(&res->client[i].addr, 128, addr, sizeof(addr));
		json_object_object_add(c, "client", json_object_new_string(addr));
		json_object_object_add(c, "sent", json_object_new_int64(res->client[i].sent));
		json_object_object_add(c, "accepted", json_object_new_int64(res->client[i].accepted));
		json_object_object_add(c, "rejected", json_object_new_int64(res->client[i].rejected));
		json_object_object_add(c, "max_in_window",
				       json_object_new_int64(res->client[i].max_in_window));
		json_object_array_add(arr, c);
	}
	for (i = 0; i < res->nr_unmatched; i++)
		json_object_array_add(un, json_object_new_string(res->unmatched[i].name));
	json_object_object_add(o, "clients", arr);
	json_object_object_add(o, "unmatched_rules", un);
	if (decisions)
		json_object_object_add(o, "decisions", decisions);
	return o;
}

static void print_result(const struct sl_replay_result *res)
{
	char addr[64];
	size_t i;

	printf("%-40s %10s %10s %10s %14s\n", "CLIENT", "SENT",
	       "ACCEPTED", "REJECTED", "MAX_IN_WINDOW");
	for (i = 0; i < res->nr; i++)
		printf("%-40s %10llu %10llu %10llu %14llu\n",
		       sl_format_prefix(&res->client[i].addr, 128, addr,
					sizeof(addr)),
		       (unsigned long long)res->client[i].sent,
		       (unsigned long long)res->client[i].accepted,
		       (unsigned long long)res->client[i].rejected,
		       (unsigned long long)res->client[i].max_in_window);
}

void sl_replay_args_free(struct sl_replay_args *a)
{
	sl_rules_free(&a->rs);
}

unsigned sl_replay_instances(const struct sl_replay_args *a)
{
	if (!a->no.nodes || a->no.layout == SL_REPLAY_CENTRAL)
		return 1;
	return a->no.nodes;
}

/* The rule set of the replay, in a->rs: the rule file, or the one ad-hoc
 * rule of the options. An exit code, or SL_REPLAY_RUN.
 */
static int replay_rules(struct sl_replay_args *a,
			const struct adhoc_rule *adhoc, const char *rules_file)
{
	int err;

	if (rules_file) {
		err = sl_rules_load_file(rules_file, &a->rs);
	} else if (!adhoc->f.limit) {
		pr_error("--limit N is required with rule options");
		return SL_EXIT_USAGE;
	} else {
		a->rs.nr = 1;
		a->rs.specs = calloc(1, sizeof(*a->rs.specs));
		err = a->rs.specs ? sl_rule_from_fields("replay options",
							&adhoc->f,
							a->rs.specs) : -ENOMEM;
		if (err)
			sl_rules_free(&a->rs);
	}
	if (err == -ENOMEM) {
		pr_error("out of memory");
		return SL_EXIT_FAIL;
	}
	if (err) {
		pr_error("the rule is not valid; see above");
		return SL_EXIT_USAGE;
	}
	if (!a->rs.nr) {
		pr_error("%s: no rules: nothing would be limited", rules_file);
		sl_rules_free(&a->rs);
		return SL_EXIT_USAGE;
	}
	return SL_REPLAY_RUN;
}

int sl_replay_args_parse(int argc, char **argv, struct sl_replay_args *a)
{
	static const struct option opts[] = {
		{ "algorithm", required_argument, NULL, O_ALGO },
		{ "limit", required_argument, NULL, O_LIMIT },
		{ "window", required_argument, NULL, O_WINDOW },
		{ "slices", required_argument, NULL, O_SLICES },
		{ "bucket-capacity", required_argument, NULL, O_CAP },
		{ "refill-per-s", required_argument, NULL, O_REFILL },
		{ "rules", required_argument, NULL, O_RULES },
		{ "decisions", no_argument, NULL, O_DECISIONS },
		{ "nodes", required_argument, NULL, O_NODES },
		{ "sync-interval", required_argument, NULL, O_INTERVAL },
		{ "layout", required_argument, NULL, O_LAYOUT },
		{ "assign", required_argument, NULL, O_ASSIGN },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct adhoc_rule adhoc = { .f = { .name = "replay" } };
	const char *rules_file = NULL;
	bool node_opts = false;
	int c, idx;

	memset(a, 0, sizeof(*a));
	a->path = "-";
	a->no.interval_ms = 200;
	a->no.layout = SL_LAYOUT_BOUNDED;
	while ((c = getopt_long(argc, argv, "h", opts, &idx)) != -1) {
		if (c >= O_ALGO && c <= O_REFILL) {
			if (parse_rule_option(c, opts[idx].name, optarg, &adhoc))
				return SL_EXIT_USAGE;
		} else if (c == O_RULES) {
			rules_file = optarg;
		} else if (c == O_DECISIONS) {
			a->decisions = true;
		} else if (c >= O_NODES && c <= O_ASSIGN) {
			if (parse_node_option(c - O_NODES, optarg, &a->no))
				return SL_EXIT_USAGE;
			node_opts = true;
		} else {
			return sl_usage(replay_help, c != 'h');
		}
	}
	if (optind < argc - 1)
		return sl_usage(replay_help, true);
	if (optind == argc - 1)
		a->path = argv[optind];
	if (node_opts && !a->no.nodes) {
		pr_error("--sync-interval, --layout and --assign go with --nodes N");
		return SL_EXIT_USAGE;
	}
	if (adhoc.set == !!rules_file) {
		pr_error("replay needs either rule options (--limit ...) or --rules FILE");
		return SL_EXIT_USAGE;
	}
	return replay_rules(a, &adhoc, rules_file);
}

int sl_replay_trace(struct sl_instance *const *nodes,
		    const struct sl_replay_args *a, const char *name, FILE *f,
		    struct sl_replay_result *out)
{
	struct decisions dec = { NULL };
	struct sl_replay_nodes_stats ns;
	struct sl_replay_nodes_opts no = a->no;
	struct sl_replay_result res;
	__u64 window_ms = a->rs.specs[0].rule.window_ms;
	struct sl_progress progress;
	struct sl_trace tr;
	int err;

	err = sl_trace_read(name, f, nodes[0]->maps.nr_cpus, a->no.nodes, &tr);
	if (err) {
		pr_error("%s: not a valid trace; see above", name);
		return err;
	}
	if (a->decisions && sl_json)
		dec.arr = json_object_new_array();
	sl_progress_start(&progress, "replay", tr.nr);
	/* --decisions streams a line per request: the progress line would
	 * land in the middle of them
	 */
	if (a->decisions)
		progress.on = false;
	no.progress = &progress;
	if (no.nodes)
		err = sl_replay_nodes_run(nodes, &no, &tr, window_ms,
					  a->decisions ? print_decision : NULL,
					  &dec, &res, &ns);
	else
		err = sl_replay_run_nodes(nodes, 1, NULL, &tr, window_ms,
					  a->decisions ? print_decision : NULL,
					  &dec, &res, &progress);
	sl_progress_end(&progress);
	sl_trace_free(&tr);
	if (err) {
		pr_error("replay failed: %s", strerror(-err));
		json_object_put(dec.arr);
		return err;
	}
	warn_unmatched(&res);
	if (sl_json) {
		json_object *o = result_json(&res, dec.arr);

		if (a->no.nodes)
			nodes_json(o, &a->no, &ns);
		sl_print_json(o);
	} else {
		print_result(&res);
		if (a->no.nodes)
			print_nodes(&a->no, &ns);
	}
	if (out)
		*out = res;
	else
		sl_replay_result_free(&res);
	return 0;
}

int do_replay(int argc, char **argv)
{
	/* a replay runs packets through sl_xdp only */
	struct sl_instance_opts io = { .model_clock = true, .xdp_only = true };
	struct sl_instance *nodes[SL_MAX_PEERS] = { NULL };
	struct sl_replay_args a;
	unsigned nr_inst, k;
	FILE *f;
	int err;

	err = sl_replay_args_parse(argc, argv, &a);
	if (err != SL_REPLAY_RUN)
		return err;
	nr_inst = sl_replay_instances(&a);
	if (a.no.nodes)
		io.clients = 16384;	/* a replay has few clients, and N copies */
	for (k = 0, err = 0; k < nr_inst && !err; k++) {
		nodes[k] = calloc(1, sizeof(*nodes[k]));
		err = nodes[k] ? sl_instance_open(nodes[k], &io) : -ENOMEM;
		if (err) {
			free(nodes[k]);
			nodes[k] = NULL;
			pr_error("cannot load the BPF program: %s (root is needed; -v shows libbpf's log)",
				 strerror(-err));
			break;
		}
		err = sl_rules_apply(&nodes[k]->maps, &a.rs);
		if (err)
			pr_error("cannot install the rules: %s", strerror(-err));
	}
	if (err)
		goto out_instance;

	f = strcmp(a.path, "-") ? fopen(a.path, "r") : stdin;
	if (!f) {
		err = -errno;
		pr_error("%s: cannot read: %s", a.path, strerror(-err));
		goto out_instance;
	}
	err = sl_replay_trace(nodes, &a, strcmp(a.path, "-") ? a.path : "stdin",
			      f, NULL);
	if (f != stdin)
		fclose(f);
out_instance:
	for (k = 0; k < nr_inst; k++) {
		if (!nodes[k])
			continue;
		sl_instance_close(nodes[k]);
		free(nodes[k]);
	}
	sl_replay_args_free(&a);
	return err ? SL_EXIT_FAIL : SL_EXIT_OK;
}
