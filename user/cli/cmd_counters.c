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
#include "state/client_exempt.h"
#include "state/client_keys.h"
#include "state/client_view.h"
#include "cli/commands.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/clock.h"
#include "state/pinned.h"
#include "instance/lists.h"
#include "instance/stats_reset.h"
#include "sync/health.h"
#include "instance/instance_maps.h"
#include "rules/rules.h"
#include "sl_algo.h"
#include "sl_key.h"

static const char stats_help[] =
"Usage: slicelimit stats [--json]\n"
"       slicelimit stats --reset [--json]\n"
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
"overwritten before their key came back: a spoofed flood shows here),\n"
"frag_*, long_chains*, vlan_deep* and mapped_v4 (odd packet shapes,\n"
"slicelimit-rules(5)), icmp_control (ICMP errors and link control: never\n"
"limited), front_skipped and front_probes (packets that skipped the front\n"
"cache of blocked flows while it was quiet, and those that still looked).\n"
"Lists (block and allow, before any rule; \"lists\" in --json): allowed\n"
"and blocked packets and bytes, and the entries each list holds.\n"
"--reset zeroes them all (as 'reset --stats'); stats then shows when\n"
"(\"reset_ms_ago\", null when never).\n";

static const char query_help[] =
"Usage: slicelimit query ADDR [--rule NAME] [--port N] [--json]\n"
"       slicelimit query --key KEY [--rule NAME] [--json]\n"
"\n"
"For each running rule (or only NAME): the client ADDR belongs to, its\n"
"limit, the units used in the current window, what remains, and the\n"
"Retry-After in seconds (0 when a request would pass now). --port names\n"
"the destination port for rules that key by port; without it such a rule\n"
"lists every port the client has state for (none: one line, port 0).\n"
"An address on the rule's exempt list shows as exempt (\"exempt\": true):\n"
"the rule counts nothing for it.\n"
"  -k, --key  KEY is a key of the check API (/v1/check), the client the\n"
"             API counts it as under each rule: hashed as the API hashes\n"
"             it, into the 100::/64 address top and reset show for it\n"
"             (\"api_key\": true); under a rule with api_key_is_address a\n"
"             key that is an address is that address.\n";

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
	printf("fragments: first %llu  later %llu (dropped %llu)  without first %llu\n"
	       "long ipv6 chains %llu (dropped %llu)  icmp control %llu\n"
	       "vlan tags past the parser %llu (dropped %llu)  ipv4-mapped ipv6 sources %llu (dropped)\n"
	       "front cache quiet: skipped %llu  probes %llu\n",
	       (unsigned long long)gs->frag_first,
	       (unsigned long long)gs->frag_later,
	       (unsigned long long)gs->frag_later_dropped,
	       (unsigned long long)gs->frag_orphans,
	       (unsigned long long)gs->long_chains,
	       (unsigned long long)gs->long_chains_dropped,
	       (unsigned long long)gs->icmp_control,
	       (unsigned long long)gs->vlan_deep,
	       (unsigned long long)gs->vlan_deep_dropped,
	       (unsigned long long)gs->mapped_v4,
	       (unsigned long long)gs->front_skipped,
	       (unsigned long long)gs->front_probes);
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

static __u64 reset_ago_ms(__u64 at)
{
	__u64 now = sl_now_tai_ms();

	return now > at ? now - at : 0;
}

static void stats_reset_to_json(json_object *root, __u64 at)
{
	json_object_object_add(root, "reset_ms_ago", at ?
			       json_object_new_int64(reset_ago_ms(at)) : NULL);
}

static void stats_reset_print(__u64 at)
{
	if (at)
		printf("counting since a reset %llu s ago\n",
		       (unsigned long long)(reset_ago_ms(at) / 1000));
}

int do_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "reset", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool reset = false;
	__u64 reset_at;
	struct sl_sync_health sync;
	struct sl_global_stats gs;
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	struct sl_maps m;
	json_object *root = NULL, *arr = NULL;
	bool synced;
	unsigned nr;
	int c;

	while ((c = sl_getopt_long(argc, argv, "h", opts)) != -1) {
		if (c != 'R')
			return sl_usage(stats_help, c != 'h');
		reset = true;
	}
	if (optind != argc)
		return sl_usage_error(stats_help, "stats: no arguments, got '%s'",
				      argv[optind]);
	if (sl_args_only)
		return SL_EXIT_OK;
	if (reset)
		return sl_reset_stats();
	reset_at = sl_stats_reset_at();
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
		json_object_object_add(root, "lists", sl_list_stats_to_json(&m));
		json_object_object_add(root, "sync", synced ?
				       sl_sync_health_to_json(&sync) : NULL);
		stats_reset_to_json(root, reset_at);
		sl_print_json(root);
	} else {
		struct sl_list_stats ls = {};

		global_stats_print(&gs);
		if (!sl_list_stats_read(&m, &ls))
			printf("lists: allowed %llu packets (%llu bytes), blocked %llu (%llu bytes)\n",
			       (unsigned long long)ls.allowed,
			       (unsigned long long)ls.allowed_bytes,
			       (unsigned long long)ls.blocked,
			       (unsigned long long)ls.blocked_bytes);
		stats_reset_print(reset_at);
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

static void query_row_out(const struct query_row *r, json_object *arr)
{
	bool api_key = sl_client_addr_hashed(&r->key.addr);

	if (sl_json)
		json_object_array_add(arr, sl_client_row_to_json(
			r->client, api_key, r->rule, &r->view));
	else
		sl_client_row_print(stdout, r->client, api_key, r->rule,
				    &r->view);
}

/* One row: the client's standing under r->rule at key r->key. */
static int query_row_emit(const struct sl_maps *m, struct query_row *r,
			  __u64 now, json_object *arr)
{
	int err = sl_client_view_read(m, r->rule, &r->key, now, &r->view);

	if (err)
		return err;
	sl_format_client(&r->key, r->rule, r->client, sizeof(r->client));
	query_row_out(r, arr);
	return 0;
}

/* The client ADDR (port: network order, when HAS_PORT) is to each running
 * rule, or to the one named `only`, or the client API key KEY names there
 * (ADDR unused); printed, or as a JSON array. A rule
 * that keys by port, asked without one, gives a row per port the client
 * has state for. An address the rule exempts is shown exempt, by itself:
 * the kernel keys no state for it. A hashed API key (100::/64) is the
 * state the check API keys it by.
 */
static void query_rules(const struct sl_maps *m, const struct sl_rule *rules,
			unsigned nr, const struct sl_config *cfg,
			const char *only, const struct sl_addr *addr,
			const char *key, bool has_port, __u16 port)
{
	json_object *arr = sl_json ? json_object_new_array() : NULL;
	__u64 now = sl_now_tai_ms();
	struct sl_client_key *keys;
	struct sl_addr keyed;
	struct query_row r;
	unsigned i;
	size_t n, k;
	bool hashed;
	int err = 0;

	if (!sl_json)
		sl_client_rows_header(stdout);
	for (i = 0; i < nr && !err; i++) {
		if (only && strcmp(rules[i].name, only))
			continue;
		r.rule = &rules[i];
		/* a key is the client /v1/check counts under this rule */
		if (key) {
			sl_client_key_addr(key, r.rule, &keyed);
			addr = &keyed;
		}
		hashed = sl_client_addr_hashed(addr);
		if (sl_client_exempt(m, cfg, i, addr, 128)) {
			sl_client_key_of(&r.key, r.rule, addr, port);
			sl_client_view_exempt(r.rule, &r.view);
			sl_format_prefix(addr, 128, r.client, sizeof(r.client));
			query_row_out(&r, arr);
			continue;
		}
		n = 0;
		keys = NULL;
		if (r.rule->key_by_port && !has_port && !hashed &&
		    sl_client_keys(m, r.rule, addr, false, 0, &keys, &n))
			n = 0;	/* unreadable: the one row, as without state */
		for (k = 0; k < n && !err; k++) {
			r.key = keys[k];
			err = query_row_emit(m, &r, now, arr);
		}
		free(keys);
		if (!n) {
			sl_client_key_of(&r.key, r.rule, addr, port);
			err = query_row_emit(m, &r, now, arr);
		}
	}
	if (sl_json)
		sl_print_json(arr);
}

int do_query(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rule", required_argument, NULL, 'r' },
		{ "port", required_argument, NULL, 'P' },
		{ "key", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *only = NULL;
	bool by_key = false;
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	struct sl_addr addr = {};
	struct sl_maps m;
	unsigned nr;
	uint64_t port = 0;
	bool has_port = false;
	int c, ret = SL_EXIT_OK;

	while ((c = sl_getopt_long(argc, argv, "r:P:kh", opts)) != -1) {
		switch (c) {
		case 'r':
			only = optarg;
			break;
		case 'P':
			if (sl_parse_uint(optarg, 0, 65535, &port)) {
				pr_error("--port: '%s' is not a port from 0 to 65535", optarg);
				return SL_EXIT_USAGE;
			}
			has_port = true;
			break;
		case 'k':
			by_key = true;
			break;
		default:
			return sl_usage(query_help, c != 'h');
		}
	}
	if (optind != argc - 1) {
		pr_error(by_key ? "query --key needs one key (slicelimit query --help)" :
			 "query needs one address (slicelimit query --help)");
		return SL_EXIT_USAGE;
	}
	if (by_key) {
		int err = sl_client_key_arg(argv[optind]);

		if (err)
			return err == -EINVAL ? SL_EXIT_USAGE : SL_EXIT_FAIL;
	} else if (sl_parse_addr(argv[optind], &addr)) {
		pr_error("'%s' is not an IPv4 or IPv6 address (an API key: query --key %s)",
			 argv[optind], argv[optind]);
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
		query_rules(&m, rules, nr, &cfg, only, &addr,
			    by_key ? argv[optind] : NULL, has_port, htons(port));
	}
	free(rules);
	sl_maps_close(&m);
	return ret;
}
