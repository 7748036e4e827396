// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * events: follow the drop events the kernel writes to the pinned ring
 * buffer sl_events, one per client and window (see sl_drop_event() in
 * bpf/limit.h), until a signal, a count or a timeout ends the watch.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cli/commands.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/parse.h"
#include "state/pinned.h"
#include "instance/instance_maps.h"
#include "rules/rules.h"
#include "sl_key.h"

static const char events_help[] =
"Usage: slicelimit events [--json] [--count N] [--timeout DUR]\n"
"\n"
"Follow the drop events: the kernel reports the first dropped packet of a\n"
"client in a window, not every packet, so one abusive client gives one\n"
"line per window. Each line: the time, the client (its address masked to\n"
"the rule's key prefix, with the port when the rule keys by port), the\n"
"rule (\"id N\" once the rule is gone), the units used in the window when\n"
"the drop happened, and the Retry-After in seconds (rounded up).\n"
"\n"
"  -c, --count N       stop after N events (1 to 2^64-1)\n"
"  -t, --timeout DUR   stop after DUR, 1ms to 365d (\"30s\", \"500ms\", \"5m\")\n"
"  -j, --json          one JSON object a line, with --pretty too:\n"
"                      {\"time_ms\", \"client\", \"rule\", \"rule_id\", \"used\",\n"
"                      \"retry_after_ms\", \"kind\"}; time_ms: Unix time in\n"
"                      milliseconds; kind: \"rule\", or \"block_list\" for a\n"
"                      packet the block list dropped (rule \"block-list\",\n"
"                      rule_id 65535, at most one a second per entry,\n"
"                      retry_after_ms until the entry ends, 0: never)\n"
"\n"
"Without --count or --timeout it runs until SIGINT or SIGTERM; exit 0 in\n"
"all three cases. Events that happened while no one was reading wait in\n"
"the ring buffer " SL_PIN_DIR "/sl_events and come first;\n"
"when it is full the kernel loses new events, not old ones. The ring\n"
"buffer has one read position: run one reader at a time, or the readers\n"
"split the events between them.\n";

/* Upper bound of one wait: a signal that lands between the check of
 * `stop` and epoll_wait() is noticed within this time.
 */
#define EVENTS_POLL_MS	200
/* How often the watch checks that the ring buffer is still the pinned one */
#define EVENTS_PIN_CHECK_MS	1000
/* --timeout at most a year: a deadline that means something */
#define EVENTS_MAX_TIMEOUT_MS	(365ull * 86400000)

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct events_ctx {
	struct sl_maps maps;
	struct sl_rule *rules;
	unsigned nr;
	__u32 epoch;		/* of the rules above */
	bool checked;		/* epoch compared since the last poll */
	__u64 seen;
	__u64 count;		/* 0: no limit */
	__s64 tai_offset_ms;	/* CLOCK_TAI - CLOCK_REALTIME */
};

static __s64 tai_offset_ms(void)
{
	struct timespec tai, real;

	clock_gettime(CLOCK_TAI, &tai);
	clock_gettime(CLOCK_REALTIME, &real);
	return (__s64)(tai.tv_sec - real.tv_sec) * 1000 +
	       (tai.tv_nsec - real.tv_nsec) / 1000000;
}

/* Re-read the live rules when an apply has happened since they were read:
 * a rule's name and key prefix are what the event is printed with. Checked
 * once per wake-up, not per event, so a burst of events costs two lookups.
 */
static int refresh_rules(struct events_ctx *ctx, bool force)
{
	struct sl_rule *rules;
	struct sl_config cfg;
	unsigned nr;
	int err;

	if (!force) {
		if (ctx->checked)
			return 0;
		ctx->checked = true;
	}
	err = sl_rules_reread(&ctx->maps, force, &ctx->epoch, &rules, &nr, &cfg);
	if (err <= 0)
		return err;
	free(ctx->rules);
	ctx->rules = rules;
	ctx->nr = nr;
	return 0;
}

static const struct sl_rule *rule_by_id(const struct events_ctx *ctx,
					__u16 id)
{
	unsigned i;

	for (i = 0; i < ctx->nr; i++)
		if (ctx->rules[i].id == id)
			return &ctx->rules[i];
	return NULL;
}

static void format_time(__u64 unix_ms, char *buf, size_t len)
{
	time_t sec = unix_ms / 1000;
	struct tm tm;
	size_t n;

	localtime_r(&sec, &tm);
	n = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03u", (unsigned)(unix_ms % 1000));
}

static int on_event(void *data, void *sample, size_t size)
{
	struct events_ctx *ctx = data;
	struct sl_drop_event ev;
	const struct sl_rule *rule;
	char client[96], rname[40], when[40];
	__u64 unix_ms;
	bool list;

	if (size < sizeof(ev))
		return 0;	/* not ours: a newer kernel side would say */
	memcpy(&ev, sample, sizeof(ev));
	/* a failed re-read keeps the rules we have: names may lag */
	list = ev.key.rule_id == SL_LIST_EVENT_RULE;
	rule = NULL;
	if (!list) {
		refresh_rules(ctx, false);
		rule = rule_by_id(ctx, ev.key.rule_id);
		if (!rule && !refresh_rules(ctx, true))
			rule = rule_by_id(ctx, ev.key.rule_id);
	}
	/* the block list's drops name the list where a rule would be */
	if (list)
		snprintf(rname, sizeof(rname), "block-list");
	else if (rule)
		snprintf(rname, sizeof(rname), "%s", rule->name);
	else
		snprintf(rname, sizeof(rname), "id %u", ev.key.rule_id);
	sl_format_client(&ev.key, rule, client, sizeof(client));
	unix_ms = ev.time_ms - ctx->tai_offset_ms;

	if (sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "time_ms", json_object_new_int64(unix_ms));
		json_object_object_add(o, "client", json_object_new_string(client));
		json_object_object_add(o, "rule", json_object_new_string(rname));
		json_object_object_add(o, "rule_id", json_object_new_int(ev.key.rule_id));
		json_object_object_add(o, "used", json_object_new_int64(ev.used));
		json_object_object_add(o, "retry_after_ms",
				       json_object_new_int64(ev.retry_after_ms));
		json_object_object_add(o, "kind", json_object_new_string(
				       list ? "block_list" : "rule"));
		sl_print_json(o);
	} else {
		format_time(unix_ms, when, sizeof(when));
		printf("%-23s  %-32s %-20s %10llu %11llus\n", when, client, rname,
		       (unsigned long long)ev.used,
		       (unsigned long long)(ev.retry_after_ms + 999) / 1000);
	}
	/* a pipe reader (a log shipper, a test) sees each event as it comes */
	fflush(stdout);
	if (ctx->count && ++ctx->seen >= ctx->count)
		return -ECANCELED;	/* ends this poll: the count is reached */
	return 0;
}

/* events' options, checked: an exit code, or EVENTS_RUN when the command
 * is to run.
 */
#define EVENTS_RUN	(-1)

static int events_args_parse(int argc, char **argv, __u64 *count,
			     uint64_t *timeout_ms)
{
	static const struct option opts[] = {
		{ "count", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	int c;

	while ((c = sl_getopt_long(argc, argv, "c:t:h", opts)) != -1) {
		switch (c) {
		case 'c':
			if (sl_parse_uint(optarg, 1, UINT64_MAX, &v)) {
				pr_error("--count: '%s' is not a count from 1 to %llu",
					 optarg, (unsigned long long)UINT64_MAX);
				return SL_EXIT_USAGE;
			}
			*count = v;
			break;
		case 't':
			if (sl_parse_duration_ms(optarg, timeout_ms) || !*timeout_ms ||
			    *timeout_ms > EVENTS_MAX_TIMEOUT_MS) {
				pr_error("--timeout: '%s' is not a duration from 1ms to 365d (500ms, 30s, 5m)",
					 optarg);
				return SL_EXIT_USAGE;
			}
			break;
		default:
			return sl_usage(events_help, c != 'h');
		}
	}
	if (optind != argc)
		return sl_usage_error(events_help, "events: no arguments, got '%s'",
				      argv[optind]);
	return EVENTS_RUN;
}

/* The pinned maps, the ring buffer sl_events and the running rules, a
 * failure reported; 0 or -errno. What was opened is left in ctx, *fd and
 * *rb either way, for the caller to close.
 */
static int events_open(struct events_ctx *ctx, int *fd,
		       struct ring_buffer **rb)
{
	int err;

	err = sl_maps_open_pinned(&ctx->maps);
	if (err == -ENOENT) {
		pr_error("nothing loaded under %s (slicelimit attach DEV)", SL_PIN_DIR);
		return err;
	} else if (err) {
		pr_error("cannot open the maps under %s: %s", SL_PIN_DIR,
			 strerror(-err));
		return err;
	}
	*fd = bpf_obj_get(SL_PIN_DIR "/sl_events");
	if (*fd < 0) {
		err = -errno;
		if (err == -ENOENT)
			pr_error("%s/sl_events is not pinned: the loaded program has no drop events (detach --all and attach again)",
				 SL_PIN_DIR);
		else
			pr_error("cannot open %s/sl_events: %s", SL_PIN_DIR,
				 strerror(-err));
		return err;
	}
	err = refresh_rules(ctx, true);
	if (err) {
		pr_error("cannot read the running rules: %s", strerror(-err));
		return err;
	}
	ctx->tai_offset_ms = tai_offset_ms();
	*rb = ring_buffer__new(*fd, on_event, ctx, NULL);
	if (!*rb) {
		err = -errno;
		pr_error("cannot read the ring buffer %s/sl_events: %s",
			 SL_PIN_DIR, strerror(-err));
		return err;
	}
	return 0;
}

/* Print the events until a signal, --count or --timeout ends the watch,
 * or the ring buffer (map id `id`) is no longer the pinned one; 0 or
 * -errno (reported).
 */
static int events_follow(struct events_ctx *ctx, struct ring_buffer *rb,
			 __u32 id, uint64_t timeout_ms)
{
	struct sigaction sa = { .sa_handler = on_signal };
	__u64 deadline = 0, next_check;
	int err;

	/* no SA_RESTART: a signal ends epoll_wait() at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (timeout_ms)
		deadline = sl_now_mono_ms() + timeout_ms;
	if (!sl_json) {
		printf("%-23s  %-32s %-20s %10s %12s\n", "TIME", "CLIENT", "RULE",
		       "USED", "RETRY_AFTER");
		fflush(stdout);
	}

	next_check = sl_now_mono_ms() + EVENTS_PIN_CHECK_MS;
	while (!stop) {
		__u64 now = sl_now_mono_ms();
		int wait = EVENTS_POLL_MS;

		if (deadline) {
			if (now >= deadline)
				break;
			if (deadline - now < (__u64)wait)
				wait = deadline - now;
		}
		if (now >= next_check) {
			next_check = now + EVENTS_PIN_CHECK_MS;
			if (!sl_still_pinned("sl_events", id)) {
				/* print what the old map still holds first */
				if (ring_buffer__consume(rb) == -ECANCELED)
					break;	/* --count reached */
				pr_error("%s/sl_events is gone or replaced (detached): no more events from this instance",
					 SL_PIN_DIR);
				return -ENOENT;
			}
		}
		ctx->checked = false;
		err = ring_buffer__poll(rb, wait);
		if (err == -ECANCELED)
			break;		/* --count reached */
		if (err < 0 && err != -EINTR) {
			pr_error("reading %s/sl_events: %s", SL_PIN_DIR,
				 strerror(-err));
			return err;
		}
	}
	return 0;
}

int do_events(int argc, char **argv)
{
	struct events_ctx ctx = { .maps.owned = false };
	struct ring_buffer *rb = NULL;
	uint64_t timeout_ms = 0;
	int err, fd = -1;

	err = events_args_parse(argc, argv, &ctx.count, &timeout_ms);
	if (err != EVENTS_RUN)
		return err;
	if (sl_args_only)
		return SL_EXIT_OK;
	sl_json_stream = true;

	if (sl_require_bpffs())
		return SL_EXIT_FAIL;
	err = events_open(&ctx, &fd, &rb);
	if (!err)
		err = events_follow(&ctx, rb, sl_map_id(fd), timeout_ms);
	ring_buffer__free(rb);
	if (fd >= 0)
		close(fd);
	free(ctx.rules);
	sl_maps_close(&ctx.maps);
	return err ? SL_EXIT_FAIL : SL_EXIT_OK;
}
