// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* replay: a trace through the real BPF program under the model clock. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "common.h"
#include "instance.h"
#include "replay.h"
#include "rules.h"

static const char replay_help[] =
"Usage: slicelimit replay [TRACE|-] [RULE OPTIONS | --rules FILE]\n"
"                         [--decisions] [--json]\n"
"\n"
"Run a trace through the real BPF program (BPF_PROG_TEST_RUN) with a model\n"
"clock, in a private copy that does not touch the attached one. Each\n"
"request becomes a UDP packet from its client on its CPU.\n"
"\n"
"TRACE (default: standard input) has one request per line:\n"
"  T_MS CLIENT [CPU]    # whitespace or commas; '#' starts a comment\n"
"T_MS is the model clock in ms, non-decreasing; windows and slices are\n"
"aligned to multiples of their length from T_MS = 0, as a live node aligns\n"
"them to the TAI epoch. CPU picks whose per-CPU state the request uses.\n"
"\n"
"Rule options (one ad-hoc rule matching every request):\n"
"  --algorithm NAME      sliding (default), sliding-plain, fixed,\n"
"                        token-bucket, sliding-log, sliding-counter\n"
"  --limit N             units per window (required)\n"
"  --window DUR          60s (default), 500ms, 0.2s, 1m\n"
"  --slices N            sliding, sliding-plain (default 12) and\n"
"                        sliding-counter (default 1: two windows)\n"
"  --bucket-capacity N   token-bucket only (default: the limit)\n"
"  --refill-per-s R      token-bucket only (default: limit / window)\n"
"  --rules FILE          a rule file instead (the first rule's window is\n"
"                        the one max_in_window uses)\n"
"\n"
"Output per client: sent, accepted, rejected, max_in_window (the most\n"
"accepts in any interval (t - window, t]). --decisions adds one line per\n"
"request: time, client, accept/reject, remaining, retry-after ms.\n"
"With --json: an array of {client, sent, accepted, rejected,\n"
"max_in_window}, or with --decisions {\"decisions\": [...], \"clients\": [...]}.\n";

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

/* Option values go into YAML: allow only what a number, a duration or an
 * algorithm name can contain, so nothing can inject structure.
 */
static bool plain_value(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
		      *s == '.' || *s == '-'))
			return false;
	return true;
}

int do_replay(int argc, char **argv)
{
	enum { O_ALGO = 256, O_LIMIT, O_WINDOW, O_SLICES, O_CAP, O_REFILL,
	       O_RULES, O_DECISIONS };
	static const struct option opts[] = {
		{ "algorithm", required_argument, NULL, O_ALGO },
		{ "limit", required_argument, NULL, O_LIMIT },
		{ "window", required_argument, NULL, O_WINDOW },
		{ "slices", required_argument, NULL, O_SLICES },
		{ "bucket-capacity", required_argument, NULL, O_CAP },
		{ "refill-per-s", required_argument, NULL, O_REFILL },
		{ "rules", required_argument, NULL, O_RULES },
		{ "decisions", no_argument, NULL, O_DECISIONS },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const char *const yaml_keys[] = {
		[O_ALGO - O_ALGO] = "algorithm", [O_LIMIT - O_ALGO] = "limit",
		[O_WINDOW - O_ALGO] = "window", [O_SLICES - O_ALGO] = "slices",
		[O_CAP - O_ALGO] = "bucket_capacity",
		[O_REFILL - O_ALGO] = "refill_per_s",
	};
	const char *values[6] = { NULL }, *rules_file = NULL, *path = "-";
	struct sl_instance_opts io = { .model_clock = true };
	struct decisions dec = { NULL };
	struct sl_replay_result res;
	struct sl_instance in;
	struct sl_ruleset rs;
	struct sl_trace tr;
	bool decisions = false, adhoc = false;
	char yaml[1024];
	size_t i, n;
	FILE *f;
	int c, err;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c >= O_ALGO && c <= O_REFILL) {
			if (!plain_value(optarg)) {
				pr_error("--%s: '%s' is not a valid value",
					 yaml_keys[c - O_ALGO], optarg);
				return SL_EXIT_USAGE;
			}
			values[c - O_ALGO] = optarg;
			adhoc = true;
		} else if (c == O_RULES) {
			rules_file = optarg;
		} else if (c == O_DECISIONS) {
			decisions = true;
		} else {
			return sl_usage(replay_help, c != 'h');
		}
	}
	if (optind < argc - 1)
		return sl_usage(replay_help, true);
	if (optind == argc - 1)
		path = argv[optind];
	if (adhoc == !!rules_file) {
		pr_error("replay needs either rule options (--limit ...) or --rules FILE");
		return SL_EXIT_USAGE;
	}

	if (rules_file) {
		err = sl_rules_load_file(rules_file, &rs);
	} else {
		n = snprintf(yaml, sizeof(yaml), "rules:\n  - name: replay\n");
		for (i = 0; i < 6; i++)
			if (values[i])
				n += snprintf(yaml + n, sizeof(yaml) - n,
					      "    %s: %s\n", yaml_keys[i],
					      values[i]);
		err = sl_rules_load_buffer("replay options", yaml, n, &rs);
	}
	if (err) {
		pr_error("the rule is not valid; see above");
		return SL_EXIT_USAGE;
	}
	if (!rs.nr) {
		pr_error("%s: no rules: nothing would be limited", rules_file);
		sl_rules_free(&rs);
		return SL_EXIT_USAGE;
	}

	err = sl_instance_open(&in, &io);
	if (err) {
		pr_error("cannot load the BPF program: %s (root is needed; -v shows libbpf's log)",
			 strerror(-err));
		sl_rules_free(&rs);
		return SL_EXIT_FAIL;
	}
	err = sl_rules_apply(&in.maps, &rs);
	if (err) {
		pr_error("cannot install the rules: %s", strerror(-err));
		goto out_instance;
	}

	f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!f) {
		pr_error("%s: cannot read: %s", path, strerror(errno));
		err = -errno;
		goto out_instance;
	}
	err = sl_trace_read(strcmp(path, "-") ? path : "stdin", f,
			    in.maps.nr_cpus, &tr);
	if (f != stdin)
		fclose(f);
	if (err) {
		pr_error("%s: not a valid trace; see above", path);
		goto out_instance;
	}

	if (decisions && sl_json)
		dec.arr = json_object_new_array();
	err = sl_replay_run(&in, &tr, rs.specs[0].rule.window_ms,
			    decisions ? print_decision : NULL, &dec, &res);
	if (err) {
		pr_error("replay failed: %s", strerror(-err));
		json_object_put(dec.arr);
		goto out_trace;
	}
	if (sl_json) {
		json_object *arr = json_object_new_array();
		char addr[64];

		for (i = 0; i < res.nr; i++) {
			json_object *o = json_object_new_object();

			sl_format_prefix(&res.client[i].addr, 128, addr, sizeof(addr));
			json_object_object_add(o, "client", json_object_new_string(addr));
			json_object_object_add(o, "sent", json_object_new_int64(res.client[i].sent));
			json_object_object_add(o, "accepted", json_object_new_int64(res.client[i].accepted));
			json_object_object_add(o, "rejected", json_object_new_int64(res.client[i].rejected));
			json_object_object_add(o, "max_in_window",
					       json_object_new_int64(res.client[i].max_in_window));
			json_object_array_add(arr, o);
		}
		if (dec.arr) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "decisions", dec.arr);
			json_object_object_add(o, "clients", arr);
			arr = o;
		}
		sl_print_json(arr);
	} else {
		char addr[64];

		printf("%-40s %10s %10s %10s %14s\n", "CLIENT", "SENT",
		       "ACCEPTED", "REJECTED", "MAX_IN_WINDOW");
		for (i = 0; i < res.nr; i++)
			printf("%-40s %10llu %10llu %10llu %14llu\n",
			       sl_format_prefix(&res.client[i].addr, 128, addr,
						sizeof(addr)),
			       (unsigned long long)res.client[i].sent,
			       (unsigned long long)res.client[i].accepted,
			       (unsigned long long)res.client[i].rejected,
			       (unsigned long long)res.client[i].max_in_window);
	}
	sl_replay_result_free(&res);
out_trace:
	sl_trace_free(&tr);
out_instance:
	sl_instance_close(&in);
	sl_rules_free(&rs);
	return err ? SL_EXIT_FAIL : SL_EXIT_OK;
}
