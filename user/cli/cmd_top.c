// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top: the clients with the most units counted in their current window,
 * once, or (--watch) refreshed like top(1) together with the per-rule
 * counters. The standing of each client is computed by the same include/
 * code the kernel decides with (core/client_view.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "state/aggregate.h"
#include "state/client_exempt.h"
#include "state/client_keys.h"
#include "state/client_view.h"
#include "cli/commands.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/clock.h"
#include "util/grow.h"
#include "state/pinned.h"
#include "instance/instance_maps.h"
#include "rules/rules.h"
#include "sl_algo.h"
#include "sl_key.h"

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

/* Bound of one sleep: a signal that lands just before nanosleep() is seen
 * within this time.
 */
#define TOP_SLEEP_SLICE_MS	200
/* --interval at most a day: a refresh that means something */
#define TOP_MAX_INTERVAL_MS	86400000ull

static volatile sig_atomic_t stop, resized;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		resized = 1;
	else
		stop = 1;
}

/* ---- shared with stats and query (copies of cli/cmd_counters.c's) ---- */

/* ---- the busiest clients ---- */

struct top_row {
	struct sl_client_key key;
	const struct sl_rule *rule;
	unsigned pos;		/* the rule's position: its exempt bit */
	struct sl_client_view view;
};

static int by_used_desc(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	return x->view.used < y->view.used ? 1 : x->view.used > y->view.used ? -1 : 0;
}

/* Every client with units counted now, busiest first (caller frees
 * *out; its rows point into `rules`). 0 or -ENOMEM.
 */
struct collect {
	const struct sl_maps *m;
	const struct sl_rule *rules;
	unsigned nr;
	const struct sl_config *cfg;
	const char *only;
	__u64 now;
	struct top_row *rows;
	size_t nrows, cap;
};

/* Per client: only the cheap tally; Retry-After for the few shown. */
static int collect_one(void *ctx, const struct sl_client_key *key,
		       const void *state, __u32 value_size)
{
	struct collect *c = ctx;
	const struct sl_rule *rule = NULL;
	struct sl_params p;
	struct sl_tally t;
	unsigned i, pos = 0;

	for (i = 0; i < c->nr; i++)
		if (c->rules[i].id == key->rule_id) {
			rule = &c->rules[i];
			pos = i;
		}
	/* a state of a gone rule, or in another algorithm's table, or
	 * keyed under a prefix the rule no longer has: none is ever read
	 */
	if (!rule || sl_state_size(rule->algorithm) != value_size ||
	    (c->only && strcmp(rule->name, c->only)) ||
	    !sl_client_key_reachable(rule, key))
		return 0;
	sl_params_from_rule(&p, rule);
	sl_tally_state(&t, state, &p, c->now);
	if (!t.used)
		return 0;
	if (sl_grow((void **)&c->rows, &c->cap, c->nrows + 1, sizeof(*c->rows)))
		return -ENOMEM;
	c->rows[c->nrows].key = *key;
	c->rows[c->nrows].rule = rule;
	c->rows[c->nrows].pos = pos;
	c->rows[c->nrows].view.used = t.used;
	c->nrows++;
	return 0;
}

/* The busiest `keep` clients, busiest first, with their full view. */
static int collect_clients(const struct sl_maps *m, const struct sl_rule *rules,
			   unsigned nr, const struct sl_config *cfg,
			   const char *only, __u64 now, size_t keep,
			   struct top_row **out, size_t *nout)
{
	struct collect c = { .m = m, .rules = rules, .nr = nr, .cfg = cfg,
			     .only = only, .now = now };
	size_t i;
	int err;

	err = sl_for_each_client(m, collect_one, &c);
	if (err) {
		free(c.rows);
		return err;
	}
	if (c.nrows)
		qsort(c.rows, c.nrows, sizeof(*c.rows), by_used_desc);
	if (c.nrows > keep)
		c.nrows = keep;
	for (i = 0; i < c.nrows && !err; i++) {
		struct top_row *r = &c.rows[i];

		/* a state kept from before the rule exempted all of it: the
		 * kernel no longer reads it
		 */
		if (sl_client_key_exempt(m, cfg, r->pos, r->rule, &r->key))
			sl_client_view_exempt(r->rule, &r->view);
		else
			err = sl_client_view_read(m, r->rule, &r->key, now,
						  &r->view);
	}
	*out = c.rows;
	*nout = c.nrows;
	return err;
}

static json_object *clients_to_json(const struct top_row *rows, size_t nrows)
{
	json_object *arr = json_object_new_array();
	char buf[96];
	size_t i;

	for (i = 0; i < nrows; i++)
		json_object_array_add(arr, sl_client_row_to_json(
			sl_format_client(&rows[i].key, rows[i].rule, buf,
					 sizeof(buf)),
			sl_client_addr_hashed(&rows[i].key.addr), rows[i].rule,
			&rows[i].view));
	return arr;
}

static void print_clients(FILE *f, const struct top_row *rows, size_t nrows)
{
	char buf[96];
	size_t i;

	/* the columns of query, in its order and with its numbers */
	sl_client_rows_header(f);
	for (i = 0; i < nrows; i++)
		sl_client_row_print(f, sl_format_client(&rows[i].key,
							rows[i].rule, buf,
							sizeof(buf)),
				    sl_client_addr_hashed(&rows[i].key.addr),
				    rows[i].rule, &rows[i].view);
}

/* ---- --watch ---- */

/* One refresh's counters, and the previous one's for the rates. */
struct watch {
	struct sl_maps *m;
	const char *only;
	unsigned n;		/* clients shown off a terminal (-n) */
	bool n_given;
	__u64 interval_ms;
	bool tty;
	unsigned refreshes;
	struct sl_rule_stats prev[SL_MAX_RULES];	/* by rule id */
	bool have_prev[SL_MAX_RULES];
	__u64 prev_mono_ms;
	__u64 prev_packets;
	__u32 active_id;	/* map id of the sl_active we read */
};

/* Units per second since the previous refresh, or "-" for none. */
static const char *rate(char *buf, size_t len, bool have, __u64 now,
			__u64 before, __u64 elapsed_ms)
{
	if (!have || now < before || !elapsed_ms)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", (now - before) * 1000.0 / elapsed_ms);
	return buf;
}

/* Lines of the terminal the view may use, and its width. The last line is
 * left empty: a newline there would scroll the screen.
 */
static void term_size(unsigned *rows, unsigned *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* Draw a frame kept in memory in place: home, then each line cut to the
 * width and cleared to its end, then the rest of the screen cleared, so
 * nothing flickers and nothing wraps.
 */
static void draw_tty(const char *frame, size_t len, unsigned rows,
		     unsigned cols)
{
	const char *p = frame, *end = frame + len;
	unsigned line = 0;

	fputs("\033[H", stdout);
	while (p < end && line + 1 < rows) {
		const char *nl = memchr(p, '\n', end - p);
		size_t n = (nl ? nl : end) - p;

		fwrite(p, 1, n < cols ? n : cols, stdout);
		fputs("\033[K\n", stdout);
		line++;
		p = nl ? nl + 1 : end;
	}
	fputs("\033[J", stdout);
	fflush(stdout);
}

/* What one refresh read: the running rules with their counters, the
 * global counters, and the busiest clients.
 */
struct refresh {
	struct sl_rule *rules;
	unsigned nr;
	struct sl_rule_stats stats[SL_MAX_RULES];	/* by index in rules */
	struct sl_global_stats gs;
	struct top_row *rows;
	size_t nrows;
	__u64 now_unix;		/* ms */
	__u64 elapsed;		/* ms since the last refresh; 0: none */
};

static int refresh_read(struct watch *w, __u64 now_tai, struct refresh *r)
{
	struct sl_config cfg;
	size_t i;
	int err;

	/* rules may be applied while we watch: read them every time */
	err = sl_rules_read_live(w->m, &r->rules, &r->nr, &cfg);
	if (err) {
		pr_error("cannot read the running rules: %s", strerror(-err));
		return err;
	}
	for (i = 0; i < r->nr; i++)
		if (sl_percpu_sum_u64(w->m, w->m->rule_stats,
				      r->rules[i].id % SL_MAX_RULES,
				      &r->stats[i], sizeof(r->stats[i])))
			memset(&r->stats[i], 0, sizeof(r->stats[i]));
	if (sl_percpu_sum_u64(w->m, w->m->global_stats, 0, &r->gs,
			      sizeof(r->gs)))
		memset(&r->gs, 0, sizeof(r->gs));
	/* more than a terminal shows: the view fits them to its height */
	err = collect_clients(w->m, r->rules, r->nr, &cfg, w->only, now_tai,
			      w->n_given ? w->n : 1000, &r->rows, &r->nrows);
	if (err)
		pr_error("cannot read the clients: %s", strerror(-err));
	return err;
}

static void refresh_free(struct refresh *r)
{
	free(r->rows);
	free(r->rules);
}

static void watch_print_json(const struct watch *w, const struct refresh *r)
{
	json_object *root = json_object_new_object(), *g, *arr;
	size_t i;

	sl_json_add_u64(root, "time_ms", r->now_unix);
	sl_json_add_u64(root, "interval_ms", w->interval_ms);
	g = sl_global_stats_to_json(&r->gs);
	json_object_object_add(root, "global", g);
	arr = json_object_new_array();
	for (i = 0; i < r->nr; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "rule",
				       json_object_new_string(r->rules[i].name));
		sl_json_add_u64(o, "limit", sl_rule_quota(&r->rules[i]));
		sl_json_add_u64(o, "window_ms", r->rules[i].window_ms);
		sl_rule_stats_to_json(o, &r->stats[i]);
		json_object_array_add(arr, o);
	}
	json_object_object_add(root, "rules", arr);
	json_object_object_add(root, "clients", clients_to_json(
		r->rows, r->nrows < w->n ? r->nrows : w->n));
	sl_print_json(root);
	fflush(stdout);
}

/* The plain view above the clients: the time and the packets, then a
 * line per rule with its counters.
 */
static void print_rules(FILE *f, const struct watch *w,
			const struct refresh *r)
{
	char when[32], r1[24], r2[24], dur[24];
	time_t sec = r->now_unix / 1000;
	struct tm tm;
	size_t i;

	localtime_r(&sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	sl_format_duration(w->interval_ms, dur, sizeof(dur));
	fprintf(f, "%s  every %s  packets %llu (%s/s)  active clients %zu\n\n",
		when, dur, (unsigned long long)r->gs.packets,
		rate(r1, sizeof(r1), w->refreshes, r->gs.packets,
		     w->prev_packets, r->elapsed), r->nrows);
	fprintf(f, "%-20s %8s %7s %12s %12s %10s %10s %9s\n", "RULE",
		"LIMIT", "WINDOW", "PASSED", "DROPPED", "SHADOW",
		"EXEMPT", "DROP/s");
	for (i = 0; i < r->nr; i++) {
		unsigned id = r->rules[i].id % SL_MAX_RULES;

		sl_format_duration(r->rules[i].window_ms, dur, sizeof(dur));
		fprintf(f, "%-20s %8llu %7s %12llu %12llu %10llu %10llu %9s\n",
			r->rules[i].name,
			(unsigned long long)r->rules[i].limit, dur,
			(unsigned long long)r->stats[i].passed,
			(unsigned long long)r->stats[i].dropped,
			(unsigned long long)r->stats[i].shadow_dropped,
			(unsigned long long)r->stats[i].exempt,
			rate(r2, sizeof(r2), w->have_prev[id],
			     r->stats[i].dropped + r->stats[i].shadow_dropped,
			     w->prev[id].dropped + w->prev[id].shadow_dropped,
			     r->elapsed));
	}
	fputc('\n', f);
}

/* How many clients the plain view lists: -n of them, or on a terminal
 * what its `trows` lines leave room for (at most -n when given).
 */
static size_t clients_shown(const struct watch *w, const struct refresh *r,
			    unsigned trows)
{
	size_t shown = r->nrows < w->n ? r->nrows : w->n;

	if (w->tty) {
		/* header, blank, rule header, rules, blank, client
		 * header: what is left of the screen is for clients
		 */
		long left = (long)trows - 1 - 5 - r->nr;

		shown = left > 0 ? (size_t)left : 0;
		if (shown > r->nrows)
			shown = r->nrows;
		if (w->n_given && shown > w->n)
			shown = w->n;
	}
	return shown;
}

static int watch_print_text(const struct watch *w, const struct refresh *r)
{
	char *frame = NULL;
	size_t flen = 0;
	unsigned trows = 0, tcols = 0;
	FILE *f = open_memstream(&frame, &flen);

	if (!f)
		return -ENOMEM;
	if (w->tty)
		term_size(&trows, &tcols);
	print_rules(f, w, r);
	print_clients(f, r->rows, clients_shown(w, r, trows));
	fclose(f);
	if (w->tty) {
		draw_tty(frame, flen, trows, tcols);
	} else {
		/* snapshots one after another, a blank line between */
		if (w->refreshes)
			fputc('\n', stdout);
		fwrite(frame, 1, flen, stdout);
		fflush(stdout);
	}
	free(frame);
	return 0;
}

/* This refresh's counters become the previous ones, for the rates. */
static void watch_remember(struct watch *w, const struct refresh *r,
			   __u64 now_mono)
{
	size_t i;

	memset(w->have_prev, 0, sizeof(w->have_prev));
	for (i = 0; i < r->nr; i++) {
		unsigned id = r->rules[i].id % SL_MAX_RULES;

		w->prev[id] = r->stats[i];
		w->have_prev[id] = true;
	}
	w->prev_packets = r->gs.packets;
	w->prev_mono_ms = now_mono;
	w->refreshes++;
}

static int watch_refresh(struct watch *w)
{
	struct refresh r = { .rules = NULL };
	__u64 now_tai = sl_now_tai_ms(), now_unix = sl_now_real_ms();
	__u64 now_mono = sl_now_mono_ms();
	__u64 elapsed = w->refreshes ? now_mono - w->prev_mono_ms : 0;
	int err = 0;

	if (!sl_still_pinned("sl_active", w->active_id)) {
		pr_error("%s is gone or replaced (detached): nothing left to watch",
			 SL_PIN_DIR);
		return -ENOENT;
	}
	err = refresh_read(w, now_tai, &r);
	if (err)
		goto out;
	r.now_unix = now_unix;
	r.elapsed = elapsed;
	if (sl_json)
		watch_print_json(w, &r);
	else
		err = watch_print_text(w, &r);
	if (!err)
		watch_remember(w, &r, now_mono);
out:
	refresh_free(&r);
	return err;
}

/* Sleep until `until` (monotonic ms) in slices, so that SIGINT, SIGTERM
 * and SIGWINCH are acted on within a slice.
 */
static void watch_sleep(__u64 until)
{
	while (!stop && !resized) {
		__u64 now = sl_now_mono_ms(), ms;
		struct timespec ts;

		if (now >= until)
			return;
		ms = until - now;
		if (ms > TOP_SLEEP_SLICE_MS)
			ms = TOP_SLEEP_SLICE_MS;
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (ms % 1000) * 1000000;
		nanosleep(&ts, NULL);
	}
}

static int top_watch(struct sl_maps *m, const char *only, unsigned n,
		     bool n_given, __u64 interval_ms, unsigned count)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct watch *w;
	__u64 next;
	int err = 0;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->m = m;
	w->only = only;
	w->n = n;
	w->n_given = n_given;
	w->interval_ms = interval_ms;
	w->tty = isatty(STDOUT_FILENO) && !sl_json;
	w->active_id = sl_map_id(m->active);
	/* no SA_RESTART: a signal ends the sleep at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (w->tty) {
		sigaction(SIGWINCH, &sa, NULL);
		fputs("\033[2J", stdout);	/* start on a clean screen */
	}
	next = sl_now_mono_ms();
	while (!stop) {
		resized = 0;
		err = watch_refresh(w);
		if (err || (count && w->refreshes >= count))
			break;
		next += interval_ms;
		watch_sleep(next);
		/* fell behind (a slow walk, a suspended terminal): no burst
		 * of refreshes to catch up
		 */
		if (next < sl_now_mono_ms())
			next = sl_now_mono_ms();
	}
	if (w->tty)
		fputc('\n', stdout);
	free(w);
	return err;
}

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

	err = collect_clients(m, rules, nr, cfg, only, sl_now_tai_ms(), n,
			      &rows, &nrows);
	if (err) {
		pr_error("cannot read the clients: %s", strerror(-err));
		free(rows);
		return err;
	}
	if (nrows > n)
		nrows = n;
	if (sl_json) {
		sl_print_json(clients_to_json(rows, nrows));
	} else {
		print_clients(stdout, rows, nrows);
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
		err = top_watch(&m, a.only, a.n, a.n_given, a.interval_ms,
				a.count);
	} else {
		err = top_once(&m, rules, nr, &cfg, a.only, a.n);
	}
	free(rules);
	sl_maps_close(&m);
	return err ? SL_EXIT_FAIL : SL_EXIT_OK;
}
