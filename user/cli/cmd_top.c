// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top: the clients with the most units counted in their current window,
 * once, or (--watch) refreshed like top(1) together with the per-rule
 * counters. The standing of each client is computed by the same include/
 * code the kernel decides with (state/client_view.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include "cli/commands.h"
#include "cli/top.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/parse.h"
#include "state/pinned.h"
#include "rules/rules.h"

static const char top_help[] =
"Usage: slicelimit top [-n N] [--rule NAME] [--json]\n"
"       slicelimit top --watch [--interval DUR] [--count N] [-n N]\n"
"                      [--rule NAME] [--json]\n"
"\n"
"The N (default 10) clients with the most units counted in their current\n"
"window, with their limit, remaining allowance and Retry-After. A client\n"
"the rule now exempts shows as exempt; a key of the check API as the\n"
"100::/64 address it is hashed into, marked \"(api key)\" (\"api_key\":\n"
"true): query and reset take that address.\n"
"\n"
"  -n N                how many clients, 1 to 67108864 (default 10; --watch\n"
"                      on a terminal: as many as fit, at most N when given)\n"
"  -r, --rule NAME     only the clients of rule NAME\n"
"  -w, --watch         refresh until SIGINT or SIGTERM, with the per-rule\n"
"                      counters above the clients (DROP/s: dropped and\n"
"                      shadow_dropped per second since the last refresh)\n"
"  -i, --interval DUR  time between refreshes, 100ms to 1d (default 1s)\n"
"  -c, --count N       stop after N refreshes (1 to 4294967295)\n"
"  -j, --json          a JSON array of clients; with --watch one document\n"
"                      a line per refresh (--pretty too): {\"time_ms\",\n"
"                      \"interval_ms\", \"global\", \"rules\", \"clients\"}\n"
"\n"
"With --watch on a terminal the view is redrawn in place and cut to the\n"
"terminal's width and height; otherwise every refresh is printed in full,\n"
"after a blank line and a timestamp header, without escape codes.\n";

/* --interval at most a day: a refresh that means something */
#define TOP_MAX_INTERVAL_MS	86400000ull

/* top's options, checked; top_args_parse returns an exit code, or
 * TOP_RUN when the command is to run.
 */
#define TOP_RUN	(-1)

struct top_args {
	const char *only;	/* --rule */
	unsigned n, count;
	uint64_t interval_ms;
	bool watch, n_given;
};

static int top_args_parse(int argc, char **argv, struct top_args *a)
{
	static const struct option opts[] = {
		{ "rule", required_argument, NULL, 'r' },
		{ "watch", no_argument, NULL, 'w' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool interval_given = false;
	uint64_t v;
	int c;

	*a = (struct top_args){ .n = 10, .interval_ms = 1000 };
	while ((c = sl_getopt_long(argc, argv, "n:r:wi:c:h", opts)) != -1) {
		switch (c) {
		case 'n':
			if (sl_parse_uint(optarg, 1, SL_MAX_CLIENTS, &v)) {
				pr_error("-n: '%s' is not a count from 1 to %u", optarg,
					 SL_MAX_CLIENTS);
				return SL_EXIT_USAGE;
			}
			a->n = v;
			a->n_given = true;
			break;
		case 'r':
			a->only = optarg;
			break;
		case 'w':
			a->watch = true;
			break;
		case 'i':
			if (sl_parse_duration_ms(optarg, &a->interval_ms) ||
			    a->interval_ms < 100 ||
			    a->interval_ms > TOP_MAX_INTERVAL_MS) {
				pr_error("--interval: '%s' is not a duration from 100ms to 1d (500ms, 2s)",
					 optarg);
				return SL_EXIT_USAGE;
			}
			interval_given = true;
			break;
		case 'c':
			if (sl_parse_uint(optarg, 1, UINT32_MAX, &v)) {
				pr_error("--count: '%s' is not a count from 1 to %u", optarg,
					 UINT32_MAX);
				return SL_EXIT_USAGE;
			}
			a->count = v;
			break;
		default:
			return sl_usage(top_help, c != 'h');
		}
	}
	if (optind != argc)
		return sl_usage_error(top_help, "top: no arguments, got '%s'",
				      argv[optind]);
	if (!a->watch && (interval_given || a->count)) {
		pr_error("--interval and --count go with --watch");
		return SL_EXIT_USAGE;
	}
	return TOP_RUN;
}

/* top without --watch: the busiest n clients, once. */
static int top_once(const struct sl_maps *m, const struct sl_rule *rules,
		    unsigned nr, const struct sl_config *cfg, const char *only,
		    unsigned n)
{
	struct top_row *rows = NULL;
	size_t nrows = 0;
	int err;

	err = sl_top_collect(m, rules, nr, cfg, only, sl_now_tai_ms(), n,
			     &rows, &nrows);
	if (err) {
		pr_error("cannot read the clients: %s", strerror(-err));
		free(rows);
		return err;
	}
	if (nrows > n)
		nrows = n;
	if (sl_json) {
		sl_print_json(sl_top_clients_to_json(rows, nrows));
	} else {
		sl_top_clients_print(stdout, rows, nrows);
	}
	free(rows);
	return 0;
}

int do_top(int argc, char **argv)
{
	struct sl_rule *rules = NULL;
	struct top_args a;
	struct sl_config cfg;
	struct sl_maps m;
	unsigned nr;
	int err;

	err = top_args_parse(argc, argv, &a);
	if (err != TOP_RUN)
		return err;
	if (sl_args_only)
		return SL_EXIT_OK;
	sl_json_stream = a.watch;
	if (sl_open_live(&m, &rules, &nr, &cfg))
		return SL_EXIT_FAIL;
	if (a.only && !sl_rule_by_name(rules, nr, a.only)) {
		pr_error("--rule: no running rule is named '%s'", a.only);
		err = -ENOENT;
	} else if (a.watch) {
		free(rules);
		rules = NULL;
		err = sl_top_watch(&m, a.only, a.n, a.n_given, a.interval_ms,
				   a.count);
	} else {
		err = top_once(&m, rules, nr, &cfg, a.only, a.n);
	}
	free(rules);
	sl_maps_close(&m);
	return err ? SL_EXIT_FAIL : SL_EXIT_OK;
}
