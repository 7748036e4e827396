// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * Host unit tests of the rule file parser and validator (user/rules/file.c,
 * check.c, warnings.c) and the shared parsers in user/util/parse.c. Every
 * problem of a file must be found, each with its line, rule and field; a
 * file with any problem must yield no rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/parse.h"
#include "rules/rules.h"

static struct sl_problems pb;

/* Parse YAML text; its problems land in `pb`. */
static int load(const char *yaml, struct sl_ruleset *rs)
{
	return sl_rules_parse_buffer("rules.yaml", yaml, strlen(yaml), rs, &pb);
}

static void dump_problems(void)
{
	sl_problems_print(&pb, stdout);
}

/* YAML has a problem at LINE (0: any), in RULE and FIELD ("" for none),
 * whose message holds NEEDLE; and it yields no rules.
 */
static void expect_error(const char *yaml, unsigned line, const char *rule,
			   const char *field, const char *needle)
{
	struct sl_ruleset rs = { 0 };
	unsigned i;

	assert_int_equal(load(yaml, &rs), -EINVAL);
	assert_null(rs.specs);
	assert_int_equal(rs.nr, 0);
	assert_true(pb.total >= 1);
	for (i = 0; i < pb.nr; i++) {
		const struct sl_problem *p = &pb.list[i];

		if ((!line || p->line == line) && !strcmp(p->rule, rule) &&
		    !strcmp(p->field, field) && strstr(p->message, needle))
			return;
	}
	dump_problems();
	fail_msg("expected a problem at line %u, rule '%s', field '%s', with '%s'",
		 line, rule, field, needle);
}

static void test_rules_full_rule_parsed(void **state)
{
	const char *yaml =
		"rules:\n"
		"  - name: web.v6\n"
		"    priority: 7\n"
		"    protocol: tcp\n"
		"    ports: 8000-8100\n"
		"    source: 2001:db8::/32\n"
		"    destination: 192.0.2.0/24\n"
		"    limit: 600\n"
		"    window: 0.2s\n"
		"    slices: 4\n"
		"    unit: syn\n"
		"    action: shadow\n"
		"    key: { ipv4_prefix: 24, ipv6_prefix: 56, per_port: true }\n"
		"    exempt: [198.51.100.7, 2001:db8:1::/48]\n"
		"    api_key_is_address: true\n";
	struct sl_ruleset rs;
	struct sl_rule *r;
	char buf[64];

	assert_int_equal(load(yaml, &rs), 0);
	assert_int_equal(rs.nr, 1);
	r = &rs.specs[0].rule;
	assert_string_equal(r->name, "web.v6");
	assert_int_equal(r->priority, 7);
	assert_int_equal(r->protocol, SL_PROTO_TCP);
	assert_int_equal(r->port_min, 8000);
	assert_int_equal(r->port_max, 8100);
	assert_int_equal(r->src_prefixlen, 32);
	assert_string_equal(sl_format_prefix(&r->src, r->src_prefixlen, buf,
					     sizeof(buf)), "2001:db8::/32");
	assert_int_equal(r->dst_prefixlen, 96 + 24);
	assert_string_equal(sl_format_prefix(&r->dst, r->dst_prefixlen, buf,
					     sizeof(buf)), "192.0.2.0/24");
	assert_int_equal(r->limit, 600);
	assert_int_equal(r->window_ms, 200);
	assert_int_equal(r->slice_ms, 50);
	assert_int_equal(r->unit, SL_UNIT_SYN);
	assert_int_equal(r->action, SL_ACTION_SHADOW);
	assert_int_equal(r->key_ipv4_prefix, 24);
	assert_int_equal(r->key_ipv6_prefix, 56);
	assert_int_equal(r->key_by_port, 1);
	assert_int_equal(r->api_key_is_address, 1);
	assert_int_equal(rs.specs[0].nr_exempt, 2);
	assert_int_equal(rs.specs[0].exempt[0].len, 128);
	assert_int_equal(rs.specs[0].exempt[1].len, 48);
	assert_int_equal(rs.specs[0].line, 2);
	sl_rules_free(&rs);
}

static void test_rules_defaults_applied(void **state)
{
	struct sl_ruleset rs;
	struct sl_rule *r;

	assert_int_equal(load("rules:\n  - name: a\n    limit: 5\n", &rs), 0);
	r = &rs.specs[0].rule;
	assert_int_equal(r->protocol, SL_PROTO_ANY);
	assert_int_equal(r->port_min, 0);
	assert_int_equal(r->port_max, 65535);
	assert_int_equal(r->window_ms, 60000);
	assert_int_equal(r->slice_ms, 5000);
	assert_int_equal(r->key_ipv4_prefix, 32);
	assert_int_equal(r->key_ipv6_prefix, 64);
	assert_int_equal(r->unit, SL_UNIT_PACKETS);
	assert_int_equal(r->action, SL_ACTION_DROP);
	assert_int_equal(r->algorithm, SL_ALGO_SLIDING);
	assert_int_equal(r->src_prefixlen, 0);
	/* an API key that is an address is hashed like any other unless
	 * the rule says so
	 */
	assert_int_equal(r->api_key_is_address, 0);
	sl_rules_free(&rs);
}

static void test_rules_sorted_by_priority_then_file_order(void **state)
{
	const char *yaml =
		"rules:\n"
		"  - { name: c, limit: 1, priority: 20 }\n"
		"  - { name: a, limit: 1, priority: 10 }\n"
		"  - { name: b, limit: 1, priority: 10 }\n"
		"  - { name: d, limit: 1, priority: 5 }\n";
	struct sl_ruleset rs;

	assert_int_equal(load(yaml, &rs), 0);
	assert_int_equal(rs.nr, 4);
	assert_string_equal(rs.specs[0].rule.name, "d");
	assert_string_equal(rs.specs[1].rule.name, "a");
	assert_string_equal(rs.specs[2].rule.name, "b");
	assert_string_equal(rs.specs[3].rule.name, "c");
	sl_rules_free(&rs);
}

static void test_rules_errors_name_line_and_field(void **state)
{
	expect_error("rules:\n  - name: a\n    limit: 0\n", 3, "a", "limit",
		     "from 1 to 4294967295");
	expect_error("rules:\n  - name: a\n    limit: 5\n    window: 7q\n", 4,
		     "a", "window", "not a duration");
	expect_error("rules:\n  - name: a\n    limit: 5\n    ports: 99-1\n", 4,
		     "a", "ports", "empty");
	expect_error("rules:\n  - name: a\n    limit: 5\n    ports: http\n", 4,
		     "a", "ports", "not a port");
	expect_error("rules:\n  - name: a\n    limit: 5\n    ports: 65536\n", 4,
		     "a", "ports", "0-65535");
	expect_error("rules:\n  - name: a\n    limit: 5\n    protocol: icmp\n    ports: 1\n",
		     5, "a", "ports", "ICMP has no ports");
	expect_error("rules:\n  - name: a\n    limit: 5\n    source: 10.0.0.1/8\n",
		     4, "a", "source", "'10.0.0.1/8' has host bits set");
	expect_error("rules:\n  - name: a\n    limit: 5\n    destination: 300.1.1.1\n",
		     4, "a", "destination", "not an address");
	expect_error("rules:\n  - name: a\n    limit: 5\n    exempt: [nope]\n", 4,
		     "a", "exempt", "not an address");
	expect_error("rules:\n  - name: a\n    limit: 5\n    protocol: udp\n    unit: syn\n",
		     5, "a", "unit", "set protocol: tcp");
	expect_error("rules:\n  - name: a\n    limit: 5\n    key: { ipv4_prefix: 33 }\n",
		     4, "a", "key.ipv4_prefix", "from 0 to 32");
	expect_error("rules:\n  - name: a b\n    limit: 5\n", 2, "a b", "name",
		     "letters, digits");
	expect_error("rules:\n  - name: a\n    limit: 5\n  - name: a\n    limit: 6\n",
		     4, "a", "name", "duplicate of the rule on line 2");
	expect_error("rules:\n  - name: a\n    limit: 5\n    slices: 0\n", 4, "a",
		     "slices", "from 1 to 3600");
	expect_error("rules:\n  - name: a\n    limit: 5\n    slices: 100\n    algorithm: sliding-plain\n",
		     4, "a", "slices", "between 1 and 64");
}

/* Every number of a rule is read whole and range-checked: none is cut down
 * to fit its field.
 */
/* A window too short for the default slices is the window's fault, at
 * the window's line; given slices that do not fit are the slices'.
 */
static void test_rules_short_window_blames_window(void **state)
{
	expect_error("rules:\n  - name: a\n    limit: 3\n    window: 1ms\n", 4,
		     "a", "window", "1ms is shorter than sliding's 12 slices");
	expect_error("rules:\n  - name: a\n    limit: 3\n    window: 5ms\n"
		     "    slices: 6\n", 5, "a", "slices", "at most the window in ms");
}

/* A valid file's rules that may not do what they seem to: each warned of
 * at its rule, field and line; the file stays valid.
 */
static void expect_warning(const struct sl_ruleset *rs, unsigned line,
			   const char *rule, const char *field,
			   const char *needle)
{
	unsigned i;

	assert_non_null(rs->warnings);
	for (i = 0; i < rs->warnings->nr; i++) {
		const struct sl_problem *p = &rs->warnings->list[i];

		if (p->line == line && !strcmp(p->rule, rule) &&
		    !strcmp(p->field, field) && strstr(p->message, needle))
			return;
	}
	sl_problems_print(rs->warnings, stdout);
	fail_msg("expected a warning at line %u, rule '%s', field '%s', with '%s'",
		 line, rule, field, needle);
}

static void test_rules_warnings_of_rules_that_may_not_do_what_they_say(void **state)
{
	const char *yaml =
		"rules:\n"
		"  - {name: web, protocol: tcp, ports: 80, limit: 10}\n"	/* 2 */
		"  - {name: all, source: 10.0.0.0/8, limit: 100}\n"
		"  - {name: under, protocol: udp, ports: 53, source: 10.1.0.0/16, limit: 5}\n"
		"  - {name: anyport, ports: 53, source: 192.0.2.0/24, limit: 5}\n"
		"  - {name: zero, protocol: udp, ports: 0, source: 198.51.100.0/24, limit: 5}\n"
		"  - {name: bytes, unit: bytes, limit: 10, source: 203.0.113.0/24}\n"
		"  - {name: web2, protocol: tcp, ports: 80-81, limit: 10}\n";	/* 8 */
	struct sl_ruleset rs = { 0 };

	assert_int_equal(load(yaml, &rs), 0);
	assert_int_equal(rs.nr, 7);
	expect_warning(&rs, 4, "under", "", "can never match: every packet it matches is taken first by rule 'all' (line 3)");
	expect_warning(&rs, 5, "anyport", "ports", "ports match TCP and UDP only");
	expect_warning(&rs, 6, "zero", "ports", "port 0 is no service's port");
	expect_warning(&rs, 7, "bytes", "unit", "ICMP (ping) included");
	/* web2 reaches port 81, which web does not take: no warning */
	assert_int_equal(rs.warnings->total, 4);
	sl_rules_free(&rs);
}

/* None where the rules do what they say: a catch-all after the specific
 * ones, a continue rule before a broader one, a bytes limit of a
 * protocol, ports 0-65535 (every port, every protocol).
 */
static void test_rules_no_warning_for_rules_that_do_what_they_say(void **state)
{
	const char *yaml =
		"rules:\n"
		"  - {name: host, source: 10.9.0.0/24, limit: 1, continue: true}\n"
		"  - {name: net, source: 10.9.0.0/16, limit: 1}\n"
		"  - {name: dns, protocol: udp, ports: 53, limit: 10}\n"
		"  - {name: tcpbytes, protocol: tcp, unit: bytes, limit: 10}\n"
		"  - {name: every, ports: 0-65535, source: 10.8.0.0/16, limit: 10}\n"
		"  - {name: all, limit: 100}\n";
	struct sl_ruleset rs = { 0 };

	assert_int_equal(load(yaml, &rs), 0);
	assert_null(rs.warnings);
	sl_rules_free(&rs);
}

static void test_rules_numbers_range_checked(void **state)
{
	expect_error("rules:\n  - name: a\n    limit: 4294967296\n", 3, "a",
		     "limit", "from 1 to 4294967295");
	expect_error("rules:\n  - name: a\n    limit: 5\n    priority: 4294967296\n",
		     4, "a", "priority", "from 0 to 4294967295");
	expect_error("rules:\n  - name: a\n    limit: 5\n    slices: 18446744073709551617\n",
		     4, "a", "slices", "from 1 to 3600");
	expect_error("rules:\n  - name: a\n    limit: 5\n    key:\n      ipv6_prefix: 129\n",
		     5, "a", "key.ipv6_prefix", "from 0 to 128");
	expect_error("rules:\n  - name: a\n    limit: 5\n    algorithm: token-bucket\n    bucket_capacity: 4294967296\n",
		     5, "a", "bucket_capacity", "from 1 to 4294967295");
	expect_error("rules:\n  - name: a\n    limit: -1\n", 3, "a", "limit",
		     "not '-1'");
	expect_error("rules:\n  - name: a\n    limit: 0x10\n", 3, "a", "limit",
		     "not '0x10'");
}

/* The structure: each problem at its own line (libcyaml put `limt` on line
 * 3 and an indentation error on line 2), in the project's words.
 */
static void test_rules_structure_errors_at_their_line(void **state)
{
	expect_error("rules:\n  - name: a\n    limit: 5\n    limt: 6\n", 4, "a",
		     "limt", "unknown field: did you mean 'limit'?");
	expect_error("rules:\n  - name: a\n    limit: 5\n    colour: blue\n", 4,
		     "a", "colour", "unknown field: the fields here are name,");
	expect_error("rules:\n  - name: a\n    limit: 5\n   window: 60s\n", 4, "",
		     "", "not valid YAML");
	expect_error("rules:\n  - name: a\n    limit: 5\n      window: 60s\n", 4,
		     "", "", "not valid YAML");
	expect_error("rules:\n  - name: a\n    limit: lots\n", 3, "a", "limit",
		     "expected a whole number from 1 to 4294967295, not 'lots'");
	expect_error("rules:\n  - name: a\n    limit: 5\n    protocol: sctp\n", 4,
		     "a", "protocol", "expected one of any, tcp, udp, icmp, not 'sctp'");
	expect_error("rules:\n  - name: a\n    limit: [5]\n", 3, "a", "limit",
		     "not a list");
	expect_error("rules:\n  - name: a\n    limit: 5\n    continue: maybe\n", 4,
		     "a", "continue", "expected true or false");
	expect_error("rules:\n  - name: a\n    limit: 5\n    limit: 6\n", 4, "a",
		     "limit", "given twice (first on line 3)");
	expect_error("rules:\n  - limit: 5\n", 2, "#1", "name", "required");
	expect_error("rules:\n  - name: a\n", 2, "a", "limit", "required");
	expect_error("rules:\n  - name: a\n    limit: 5\n    key: 24\n", 4, "a",
		     "key", "expected a mapping");
	expect_error("rules: 5\n", 1, "", "rules", "expected a list of rules");
	expect_error("rulez: []\n", 1, "", "rulez", "did you mean 'rules'?");
	expect_error("rules: [\n", 2, "", "", "not valid YAML");
	/* cut in the middle of a key: the line of the key, not past the end */
	expect_error("rules:\n  - name: a\n    lim", 3, "", "", "not valid YAML");
	expect_error("x: &a [1]\nrules: *a\n", 2, "", "", "aliases");
	expect_error("rules: []\n---\nrules: []\n", 2, "", "", "a second YAML document");
	expect_error("", 1, "", "", "empty rule file");
	expect_error("# just a comment\n", 1, "", "", "empty rule file");
}

/* Every problem of a file in one run, in file order, rule by rule. */
static void test_rules_every_problem_reported(void **state)
{
	static const struct { unsigned line; const char *rule, *field; } want[] = {
		{ 4, "a", "limt" },
		{ 5, "a", "protocol" },
		{ 6, "a", "key.ipv4_prefix" },
		{ 7, "#2", "name" },
		{ 7, "#2", "limit" },
		{ 9, "a", "name" },
		{ 10, "a", "ports" },
		{ 11, "a", "window" },
	};
	const char *yaml =
		"rules:\n"
		"  - name: a\n"
		"    limit: 5\n"
		"    limt: 6\n"
		"    protocol: sctp\n"
		"    key: { ipv4_prefix: 40 }\n"
		"  - limit: lots\n"
		"    window: 1s\n"
		"  - name: a\n"
		"    ports: 9-1\n"
		"    window: 13d\n"
		"    limit: 3\n";
	struct sl_ruleset rs;
	unsigned i;

	assert_int_equal(load(yaml, &rs), -EINVAL);
	if (pb.nr != sizeof(want) / sizeof(want[0]))
		dump_problems();
	assert_int_equal(pb.total, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < pb.nr; i++) {
		assert_int_equal(pb.list[i].line, want[i].line);
		assert_string_equal(pb.list[i].rule, want[i].rule);
		assert_string_equal(pb.list[i].field, want[i].field);
	}
	assert_int_equal(pb.list[0].column, 5);
	assert_string_equal(pb.list[1].message,
			    "expected one of any, tcp, udp, icmp, not 'sctp'");
}

/* With --json the problems are one array of objects. */
static void test_rules_problems_as_json(void **state)
{
	struct sl_ruleset rs;
	json_object *arr, *p, *v;

	assert_int_equal(load("rules:\n  - name: a\n    limit: 5\n    limt: 6\n", &rs),
			 -EINVAL);
	arr = sl_problems_to_json(&pb);
	assert_int_equal(json_object_array_length(arr), 1);
	p = json_object_array_get_idx(arr, 0);
	assert_true(json_object_object_get_ex(p, "file", &v));
	assert_string_equal(json_object_get_string(v), "rules.yaml");
	assert_true(json_object_object_get_ex(p, "line", &v));
	assert_int_equal(json_object_get_int(v), 4);
	assert_true(json_object_object_get_ex(p, "column", &v));
	assert_int_equal(json_object_get_int(v), 5);
	assert_true(json_object_object_get_ex(p, "rule", &v));
	assert_string_equal(json_object_get_string(v), "a");
	assert_true(json_object_object_get_ex(p, "field", &v));
	assert_string_equal(json_object_get_string(v), "limt");
	assert_true(json_object_object_get_ex(p, "message", &v));
	json_object_put(arr);
}

static void test_rules_too_many_rejected(void **state)
{
	size_t cap = (SL_MAX_RULES + 1) * 48 + 16, i;
	char *yaml = malloc(cap), *p = yaml;
	struct sl_ruleset rs = { 0 };

	assert_non_null(yaml);
	p += sprintf(p, "rules:\n");
	for (i = 0; i <= SL_MAX_RULES; i++)
		p += sprintf(p, "  - { name: r%zu, limit: 1 }\n", i);
	assert_int_equal(load(yaml, &rs), -EINVAL);
	assert_int_equal(rs.nr, 0);
	assert_int_equal(pb.total, 1);
	assert_int_equal(pb.list[0].line, 2);
	assert_string_equal(pb.list[0].field, "rules");
	free(yaml);
}

static void test_rules_envoy_block_parsed_and_matched(void **state)
{
	const char *yaml =
		"rules:\n"
		"  - name: login\n"
		"    limit: 5\n"
		"    envoy:\n"
		"      domain: edge\n"
		"      descriptor: [{key: remote_address}, {key: path, value: /login}]\n"
		"      client_key: remote_address\n"
		"  - name: plain\n"
		"    limit: 5\n"
		"  - name: one\n"
		"    limit: 5\n"
		"    envoy: {domain: edge, descriptor: [{key: tenant}]}\n";
	const char *keys[] = { "remote_address", "path" };
	const char *login[] = { "10.0.0.1", "/login" };
	const char *home[] = { "10.0.0.1", "/home" };
	const char *swapped[] = { "path", "remote_address" };
	struct sl_ruleset rs;
	const struct sl_envoy_match *m;

	if (load(yaml, &rs))
		dump_problems();
	assert_int_equal(rs.nr, 3);
	m = rs.specs[0].envoy;
	assert_non_null(m);
	assert_null(rs.specs[1].envoy);
	assert_string_equal(m->domain, "edge");
	assert_int_equal(m->nr_entries, 2);
	assert_int_equal(m->client_entry, 0);
	assert_false(m->entries[0].has_value);
	assert_true(m->entries[1].has_value);
	assert_string_equal(m->entries[1].value, "/login");
	/* the same keys in the same order, a value equal where one is given */
	assert_true(sl_envoy_matches(m, "edge", keys, login, 2));
	assert_false(sl_envoy_matches(m, "edge", keys, home, 2));
	assert_false(sl_envoy_matches(m, "other", keys, login, 2));
	assert_false(sl_envoy_matches(m, "edge", swapped, login, 2));
	assert_false(sl_envoy_matches(m, "edge", keys, login, 1));
	/* one entry: it is the client without client_key */
	assert_int_equal(rs.specs[2].envoy->client_entry, 0);
	sl_rules_free(&rs);
}

static void test_rules_envoy_block_errors(void **state)
{
	/* each rule's envoy: value, the field blamed, what the message says */
	static const struct {
		const char *envoy, *field, *needle;
	} cases[] = {
		{ "{descriptor: [{key: k}]}", "envoy.domain", "required" },
		{ "{domain: d, descriptor: [{key: k}, {key: j}]}",
		  "envoy.client_key", "required with more than one entry" },
		{ "{domain: d, descriptor: [{key: k}], client_key: x}",
		  "envoy.client_key", "not the key of an entry" },
		{ "{domain: d, descriptor: [{key: k}, {key: k}], client_key: k}",
		  "envoy.descriptor.key", "twice" },
		{ "{domain: d, descriptor: []}", "envoy.descriptor",
		  "1 to 8 entries" },
		{ "{domain: d, descriptor: [{value: v}]}", "envoy.descriptor",
		  "needs 'key'" },
		{ "{domain: d, descriptor: [{key: k}], extra: 1}", "envoy.extra",
		  "unknown field" },
	};
	char yaml[256];
	unsigned i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(yaml, sizeof(yaml),
			 "rules:\n  - name: a\n    limit: 1\n    envoy: %s\n",
			 cases[i].envoy);
		expect_error(yaml, 4, "a", cases[i].field, cases[i].needle);
	}
}

static void test_durations_parse_and_reject(void **state)
{
	static const struct { const char *in; uint64_t ms; } good[] = {
		{ "60s", 60000 }, { "500ms", 500 }, { "0.2s", 200 },
		{ "1m", 60000 }, { "1.5s", 1500 }, { "2h", 7200000 },
		{ "1d", 86400000 },
	};
	static const char *const bad_in[] = {
		"", "10", "-1s", "1.5ms", "s", "1x", "1s ", "+1s", "nan s",
		/* strtod's other spellings: hex, exponents, space, infinity */
		"0x10s", "1e3s", "1E3ms", " 1s", "infs", ".5s", "1.s", "0x1p3s",
	};
	char buf[32];
	uint64_t ms;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(sl_parse_duration_ms(good[i].in, &ms), 0);
		assert_int_equal(ms, good[i].ms);
	}
	for (i = 0; i < sizeof(bad_in) / sizeof(bad_in[0]); i++)
		assert_int_not_equal(sl_parse_duration_ms(bad_in[i], &ms), 0);
	assert_string_equal(sl_format_duration(60000, buf, sizeof(buf)), "1m");
	assert_string_equal(sl_format_duration(200, buf, sizeof(buf)), "200ms");
	assert_string_equal(sl_format_duration(1500, buf, sizeof(buf)), "1500ms");
}

static void test_prefixes_parse_and_reject(void **state)
{
	struct sl_addr a;
	unsigned len;
	char buf[64];

	assert_int_equal(sl_parse_prefix("192.0.2.0/24", &a, &len), 0);
	assert_int_equal(len, 120);
	assert_string_equal(sl_format_prefix(&a, len, buf, sizeof(buf)),
			    "192.0.2.0/24");
	assert_int_equal(sl_parse_prefix("0.0.0.0/0", &a, &len), 0);
	assert_int_equal(len, 96);	/* all of IPv4, not IPv6 */
	assert_int_equal(sl_parse_prefix("::/0", &a, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(sl_parse_prefix("2001:db8::1", &a, &len), 0);
	assert_int_equal(len, 128);
	assert_int_equal(sl_parse_prefix("192.0.2.1/24", &a, &len), -EDOM);
	assert_int_equal(sl_parse_prefix("192.0.2.0/33", &a, &len), -EINVAL);
	assert_int_equal(sl_parse_prefix("2001:db8::/129", &a, &len), -EINVAL);
	assert_int_equal(sl_parse_prefix("192.0.2.0/", &a, &len), -EINVAL);
	assert_int_equal(sl_parse_prefix("example.com", &a, &len), -EINVAL);
	/* strtoul's other spellings of a number: a sign, space, hex */
	assert_int_equal(sl_parse_prefix("10.0.0.0/+8", &a, &len), -EINVAL);
	assert_int_equal(sl_parse_prefix("10.0.0.0/ 8", &a, &len), -EINVAL);
	assert_int_equal(sl_parse_prefix("10.0.0.0/-8", &a, &len), -EINVAL);
	assert_int_equal(sl_parse_prefix("10.0.0.0/0x8", &a, &len), -EINVAL);
	assert_int_equal(sl_parse_prefix("2001:db8::/+32", &a, &len), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_full_rule_parsed),
		cmocka_unit_test(test_rules_defaults_applied),
		cmocka_unit_test(test_rules_sorted_by_priority_then_file_order),
		cmocka_unit_test(test_rules_errors_name_line_and_field),
		cmocka_unit_test(test_rules_numbers_range_checked),
		cmocka_unit_test(test_rules_short_window_blames_window),
		cmocka_unit_test(test_rules_warnings_of_rules_that_may_not_do_what_they_say),
		cmocka_unit_test(test_rules_no_warning_for_rules_that_do_what_they_say),
		cmocka_unit_test(test_rules_structure_errors_at_their_line),
		cmocka_unit_test(test_rules_every_problem_reported),
		cmocka_unit_test(test_rules_problems_as_json),
		cmocka_unit_test(test_rules_too_many_rejected),
		cmocka_unit_test(test_rules_envoy_block_parsed_and_matched),
		cmocka_unit_test(test_rules_envoy_block_errors),
		cmocka_unit_test(test_durations_parse_and_reject),
		cmocka_unit_test(test_prefixes_parse_and_reject),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
