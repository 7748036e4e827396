// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Host unit tests of the rule file parser and validator (user/rule_file.c)
 * and the shared parsers in user/common.c. Errors must name the line and
 * field; a file with any error must yield no rules.
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
#include <unistd.h>
#include "common.h"
#include "rules.h"

/* Load YAML text; the parser's stderr is captured into `errors`. */
static int load(const char *yaml, struct sl_ruleset *rs, char *errors,
		size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(2), err;
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), 2);
	err = sl_rules_load_buffer("rules.yaml", yaml, strlen(yaml), rs);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(errors, 1, len - 1, tmp);
	errors[n] = '\0';
	fclose(tmp);
	return err;
}

static void expect_error(const char *yaml, const char *needle)
{
	struct sl_ruleset rs = { 0 };
	char errors[4096];

	assert_int_not_equal(load(yaml, &rs, errors, sizeof(errors)), 0);
	assert_null(rs.specs);
	assert_int_equal(rs.nr, 0);
	if (!strstr(errors, needle))
		fail_msg("expected '%s' in:\n%s", needle, errors);
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
		"    exempt: [198.51.100.7, 2001:db8:1::/48]\n";
	struct sl_ruleset rs;
	struct sl_rule *r;
	char errors[1024];
	char buf[64];

	assert_int_equal(load(yaml, &rs, errors, sizeof(errors)), 0);
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
	char errors[1024];

	assert_int_equal(load("rules:\n  - name: a\n    limit: 5\n", &rs,
			      errors, sizeof(errors)), 0);
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
	char errors[1024];

	assert_int_equal(load(yaml, &rs, errors, sizeof(errors)), 0);
	assert_int_equal(rs.nr, 4);
	assert_string_equal(rs.specs[0].rule.name, "d");
	assert_string_equal(rs.specs[1].rule.name, "a");
	assert_string_equal(rs.specs[2].rule.name, "b");
	assert_string_equal(rs.specs[3].rule.name, "c");
	sl_rules_free(&rs);
}

static void test_rules_errors_name_line_and_field(void **state)
{
	expect_error("rules:\n  - name: a\n    limit: 0\n",
		     "rules.yaml:3: rule 'a': limit:");
	expect_error("rules:\n  - name: a\n    limit: 5\n    window: 7q\n",
		     "rules.yaml:4: rule 'a': window:");
	expect_error("rules:\n  - name: a\n    limit: 5\n    ports: 99-1\n",
		     "rules.yaml:4: rule 'a': ports:");
	expect_error("rules:\n  - name: a\n    limit: 5\n    ports: http\n",
		     "rules.yaml:4: rule 'a': ports:");
	expect_error("rules:\n  - name: a\n    limit: 5\n    protocol: icmp\n    ports: 1\n",
		     "rules.yaml:5: rule 'a': ports: ICMP has no ports");
	expect_error("rules:\n  - name: a\n    limit: 5\n    source: 10.0.0.1/8\n",
		     "rules.yaml:4: rule 'a': source: '10.0.0.1/8' has host bits set");
	expect_error("rules:\n  - name: a\n    limit: 5\n    destination: 300.1.1.1\n",
		     "rules.yaml:4: rule 'a': destination:");
	expect_error("rules:\n  - name: a\n    limit: 5\n    exempt: [nope]\n",
		     "rules.yaml:4: rule 'a': exempt:");
	expect_error("rules:\n  - name: a\n    limit: 5\n    protocol: udp\n    unit: syn\n",
		     "rules.yaml:5: rule 'a': unit:");
	expect_error("rules:\n  - name: a\n    limit: 5\n    key: { ipv4_prefix: 33 }\n",
		     "rules.yaml:4: rule 'a': key:");
	expect_error("rules:\n  - name: a b\n    limit: 5\n",
		     "rules.yaml:2: rule 'a b': name:");
	expect_error("rules:\n  - name: a\n    limit: 5\n  - name: a\n    limit: 6\n",
		     "rules.yaml:4: rule 'a': name: duplicate of the rule on line 2");
	expect_error("rules:\n  - name: a\n    limit: 5\n    slices: 0\n",
		     "rules.yaml:4: rule 'a': slices:");
}

static void test_rules_schema_errors_from_libcyaml(void **state)
{
	expect_error("rules:\n  - name: a\n    limit: lots\n",
		     "rules.yaml:3: limit: ");
	expect_error("rules:\n  - name: a\n    limit: 5\n    protocol: sctp\n",
		     "rules.yaml:4: protocol: ");
	expect_error("rules:\n  - name: a\n    limit: 5\n    bogus: 1\n",
		     "Unexpected key: bogus");
	expect_error("rules:\n  - limit: 5\n", "name");
	expect_error("rules: [\n", "rules.yaml:2");	/* the end, still in the list */
	expect_error("", "empty rule file");
}

static void test_rules_too_many_rejected(void **state)
{
	size_t cap = (SL_MAX_RULES + 1) * 48 + 16, i;
	char *yaml = malloc(cap), *p = yaml;
	struct sl_ruleset rs = { 0 };
	char errors[4096];

	assert_non_null(yaml);
	p += sprintf(p, "rules:\n");
	for (i = 0; i <= SL_MAX_RULES; i++)
		p += sprintf(p, "  - { name: r%zu, limit: 1 }\n", i);
	assert_int_not_equal(load(yaml, &rs, errors, sizeof(errors)), 0);
	assert_int_equal(rs.nr, 0);
	free(yaml);
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
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_full_rule_parsed),
		cmocka_unit_test(test_rules_defaults_applied),
		cmocka_unit_test(test_rules_sorted_by_priority_then_file_order),
		cmocka_unit_test(test_rules_errors_name_line_and_field),
		cmocka_unit_test(test_rules_schema_errors_from_libcyaml),
		cmocka_unit_test(test_rules_too_many_rejected),
		cmocka_unit_test(test_durations_parse_and_reject),
		cmocka_unit_test(test_prefixes_parse_and_reject),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
