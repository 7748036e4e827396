// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stats, query: read the counters and client state, and answer with
 * the same include/ code the kernel decides with.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "core/client_view.h"
#include "cli/commands.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/clock.h"
#include "core/pinned.h"
#include "sync/health.h"
#include "core/instance_maps.h"
#include "rules/rules.h"
#include "sl_algo.h"
#include "sl_key.h"

static const char stats_help[] =
"Usage: slicelimit stats [--json]\n"
"\n"
"Per-rule counters summed over CPUs: passed (under the limit, or not\n"
"counted by the rule's unit), dropped, shadow_dropped (over the limit in\n"
"shadow mode: passed), exempt (source on the exempt list: passed);\n"
"passed_bytes counts every packet let through (passed, shadow_dropped and\n"
"exempt), dropped_bytes the dropped ones. Global counters: packets,\n"
"non_ip, malformed, fragments, no_rule, fail_open, new_clients (client\n"
"states created: evicted = created - live), events_lost (drop events a\n"
"full ring buffer refused), newcomers (first packets of keys without a\n"
"state, counted on probation instead), promoted (keys that came back on\n"
"probation and got their state), newcomers_displaced (probation entries\n"
"overwritten before their key came back: a spoofed flood shows here).\n";

static const char query_help[] =
"Usage: slicelimit query ADDR [--rule NAME] [--port N] [--json]\n"
"\n"
"For each running rule (or only NAME): the client ADDR belongs to, its\n"
"limit, the units used in the current window, what remains, and the\n"
"Retry-After in seconds (0 when a request would pass now). --port names\n"
"the destination port for rules that key by port.\n";

static void rule_stats_print(const char *name, const struct sl_rule_stats *rs)
{
	printf("%-20s %12lld %12lld %12lld %10lld %14lld %14lld\n", name,
	       (long long)rs->passed, (long long)rs->dropped,
	       (long long)rs->shadow_dropped, (long long)rs->exempt,
	       (long long)rs->passed_bytes, (long long)rs->dropped_bytes);
}

static void global_stats_print(const struct sl_global_stats *gs)
{
	printf("\npackets %llu  non_ip %llu  malformed %llu  fragments %llu  no_rule %llu  fail_open %llu\n"
	       "new clients %llu  events lost %llu\n"
	       "newcomers %llu  promoted %llu  newcomers displaced %llu\n",
	       (unsigned long long)gs->packets, (unsigned long long)gs->non_ip,
	       (unsigned long long)gs->malformed,
	       (unsigned long long)gs->fragments,
	       (unsigned long long)gs->no_rule,
	       (unsigned long long)gs->fail_open,
	       (unsigned long long)gs->new_clients,
	       (unsigned long long)gs->events_lost,
	       (unsigned long long)gs->newcomers,
	       (unsigned long long)gs->promoted,
	       (unsigned long long)gs->newcomers_displaced);
}

/* Each rule's counters, read once and printed or added to arr (--json). */
static void stats_rules(const struct sl_maps *m, const struct sl_rule *rules,
			unsigned nr, json_object *arr)
{
	unsigned i;

	if (!sl_json)
		printf("%-20s %12s %12s %12s %10s %14s %14s\n", "RULE", "PASSED",
		       "DROPPED", "SHADOW_DROP", "EXEMPT", "PASSED_BYTES",
		       "DROPPED_BYTES");
	for (i = 0; i < nr; i++) {
		struct sl_rule_stats rs;
		json_object *o;

		if (sl_percpu_sum_u64(m, m->rule_stats, rules[i].id, &rs,
				      sizeof(rs)))
			memset(&rs, 0, sizeof(rs));
		if (!sl_json) {
			rule_stats_print(rules[i].name, &rs);
			continue;
		}
		o = json_object_new_object();
		json_object_object_add(o, "rule", json_object_new_string(rules[i].name));
		sl_rule_stats_to_json(o, &rs);
		json_object_array_add(arr, o);
	}
}

int do_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sl_sync_health sync;
	struct sl_global_stats gs;
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	struct sl_maps m;
	json_object *root = NULL, *arr = NULL;
	bool synced;
	unsigned nr;
	int c;

	while ((c = sl_getopt_long(argc, argv, "h", opts)) != -1)
		return sl_usage(stats_help, c != 'h');
	if (optind != argc)
		return sl_usage_error(stats_help, "stats: no arguments, got '%s'",
				      argv[optind]);
	if (sl_args_only)
		return SL_EXIT_OK;
	if (sl_open_live(&m, &rules, &nr, &cfg))
		return SL_EXIT_FAIL;

	if (sl_json)
		arr = json_object_new_array();
	stats_rules(&m, rules, nr, arr);
	if (sl_percpu_sum_u64(&m, m.global_stats, 0, &gs, sizeof(gs)))
		memset(&gs, 0, sizeof(gs));
	synced = !sl_sync_health_read(&m, sl_now_tai_ms(), &sync);
	if (sl_json) {
		root = json_object_new_object();
		json_object_object_add(root, "rules", arr);
		json_object_object_add(root, "global", sl_global_stats_to_json(&gs));
		json_object_object_add(root, "sync", synced ?
				       sl_sync_health_to_json(&sync) : NULL);
		sl_print_json(root);
	} else {
		global_stats_print(&gs);
		if (synced) {
			printf("\n");
			sl_sync_health_print(&sync);
		}
	}
	free(rules);
	sl_maps_close(&m);
	return SL_EXIT_OK;
}

/* One line of query: a running rule's view of the client. */
struct query_row {
	const struct sl_rule *rule;
	struct sl_client_key key;
	struct sl_client_view view;
	char client[96];	/* the key as sl_format_client names it */
};

static json_object *query_row_to_json(const struct query_row *r)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "client", json_object_new_string(r->client));
	sl_client_view_to_json(o, r->rule, &r->view);
	return o;
}

static void query_row_print(const struct query_row *r)
{
	printf("%-32s %-20s %10lld %10lld %10lld %11llds\n", r->client,
	       r->rule->name, (long long)sl_rule_quota(r->rule),
	       (long long)r->view.used, (long long)r->view.remaining,
	       (long long)sl_retry_after_s(&r->view));
}

/* The client ADDR (port: network order) is to each running rule, or to
 * the one named `only`; printed, or as a JSON array.
 */
static void query_rules(const struct sl_maps *m, const struct sl_rule *rules,
			unsigned nr, const char *only,
			const struct sl_addr *addr, __u16 port)
{
	json_object *arr = sl_json ? json_object_new_array() : NULL;
	__u64 now = sl_now_tai_ms();
	struct query_row r;
	unsigned i;

	if (!sl_json)
		printf("%-32s %-20s %10s %10s %10s %12s\n", "CLIENT", "RULE",
		       "LIMIT", "USED", "REMAINING", "RETRY_AFTER");
	for (i = 0; i < nr; i++) {
		if (only && strcmp(rules[i].name, only))
			continue;
		r.rule = &rules[i];
		sl_client_key_make(&r.key, r.rule, addr, port);
		if (sl_client_view_read(m, r.rule, &r.key, now, &r.view))
			break;
		sl_format_client(&r.key, r.rule, r.client, sizeof(r.client));
		if (sl_json)
			json_object_array_add(arr, query_row_to_json(&r));
		else
			query_row_print(&r);
	}
	if (sl_json)
		sl_print_json(arr);
}

int do_query(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rule", required_argument, NULL, 'r' },
		{ "port", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *only = NULL;
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	struct sl_addr addr;
	struct sl_maps m;
	unsigned nr;
	uint64_t port = 0;
	int c, ret = SL_EXIT_OK;

	while ((c = sl_getopt_long(argc, argv, "r:P:h", opts)) != -1) {
		switch (c) {
		case 'r':
			only = optarg;
			break;
		case 'P':
			if (sl_parse_uint(optarg, 0, 65535, &port)) {
				pr_error("--port: '%s' is not a port from 0 to 65535", optarg);
				return SL_EXIT_USAGE;
			}
			break;
		default:
			return sl_usage(query_help, c != 'h');
		}
	}
	if (optind != argc - 1) {
		pr_error("query needs one address (slicelimit query --help)");
		return SL_EXIT_USAGE;
	}
	if (sl_parse_addr(argv[optind], &addr)) {
		pr_error("'%s' is not an IPv4 or IPv6 address", argv[optind]);
		return SL_EXIT_USAGE;
	}
	if (sl_args_only)
		return SL_EXIT_OK;
	if (sl_open_live(&m, &rules, &nr, &cfg))
		return SL_EXIT_FAIL;
	if (only && !sl_rule_by_name(rules, nr, only)) {
		pr_error("--rule: no running rule is named '%s'", only);
		ret = SL_EXIT_FAIL;
	} else {
		query_rules(&m, rules, nr, only, &addr, htons(port));
	}
	free(rules);
	sl_maps_close(&m);
	return ret;
}
