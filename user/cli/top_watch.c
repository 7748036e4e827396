// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top --watch: the running rules with their counters and rates, the
 * global counters and the busiest clients, refreshed like top(1): drawn in
 * place on a terminal, one snapshot after another otherwise, a JSON
 * object a line with --json.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include "state/aggregate.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/parse.h"
#include "state/pinned.h"
#include "cli/commands.h"
#include "cli/top.h"
#include "sl_key.h"

/* Bound of one sleep: a signal that lands just before nanosleep() is seen
 * within this time.
 */
#define TOP_SLEEP_SLICE_MS	200

static volatile sig_atomic_t stop, resized;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		resized = 1;
	else
		stop = 1;
}

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
	err = sl_top_collect(w->m, r->rules, r->nr, &cfg, w->only, now_tai,
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
	json_object_object_add(root, "clients", sl_top_clients_to_json(
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
	sl_top_clients_print(f, r->rows, clients_shown(w, r, trows));
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

int sl_top_watch(struct sl_maps *m, const char *only, unsigned n,
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
