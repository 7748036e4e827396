// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_rules: arbitrary bytes as a rule file, through sl_rules_parse_buffer()
 * (the libyaml tree, the typed reads, the field checks) and the problem
 * list's printers.
 *
 * Invariants: no crash, no leak, no read past the buffer (the input is not
 * NUL-terminated, like a file read into memory); the result is 0 or
 * -EINVAL/-ENOMEM; on 0 there is no problem and every rule passes the
 * checks below, which restate the README's limits independently of
 * user/rules/; on an error the rule set is left empty, and on -EINVAL
 * there is at least one problem, each at a line of the input, whose
 * --json form parses back.
 */
#include "fuzz_common.h"
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rules/rules.h"
#include "sl_algo.h"
#include "sl_key.h"
#include <yaml.h>

static void fail(unsigned i, const struct sl_rule *r, const char *what)
{
	fprintf(report ? report : stderr, "fuzz_rules: accepted rule %u ('%.32s') breaks: %s\n",
		i, r ? r->name : "", what);
	abort();
}

static bool masked(const struct sl_addr *a, unsigned len)
{
	struct sl_addr m = *a;

	if (len > 128)
		return false;
	sl_addr_mask(&m, len);
	return !memcmp(&m, a, sizeof(m));
}

/* Rule i's name: 1..31 of [A-Za-z0-9._-], unique; the rules by priority. */
static void check_name(const struct sl_ruleset *rs, unsigned i)
{
	const struct sl_rule *r = &rs->specs[i].rule;
	size_t n = strnlen(r->name, sizeof(r->name));
	unsigned j;

	if (n == 0 || n > 31)
		fail(i, r, "name empty or longer than 31");
	for (j = 0; j < n; j++) {
		char c = r->name[j];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      c == '.'))
			fail(i, r, "name has a character outside [A-Za-z0-9._-]");
	}
	for (j = 0; j < i; j++)
		if (!strncmp(rs->specs[j].rule.name, r->name, sizeof(r->name)))
			fail(i, r, "duplicate name");
	if (i && rs->specs[i - 1].rule.priority > r->priority)
		fail(i, r, "not sorted by priority");
}

/* The limit, the window and the algorithm's own fields. */
static void check_algorithm(unsigned i, const struct sl_rule *r)
{
	unsigned slices;

	if (r->limit < 1 || r->limit > UINT32_MAX)
		fail(i, r, "limit outside 1..4294967295");
	if (r->window_ms < 1 || r->window_ms > SL_MAX_WINDOW_MS)
		fail(i, r, "window outside 1ms..24d");
	if (r->algorithm >= SL_ALGO__COUNT)
		fail(i, r, "unknown algorithm");
	if (r->slice_ms < 1 || r->slice_ms > r->window_ms)
		fail(i, r, "slice outside 1..window");
	slices = (r->window_ms + r->slice_ms - 1) / r->slice_ms;
	if (r->algorithm == SL_ALGO_SLIDING && r->window_ms / r->slice_ms > 3600)
		fail(i, r, "sliding: more than 3600 slices");
	if (r->algorithm == SL_ALGO_SLIDING_PLAIN &&
	    slices > SL_MAX_PLAIN_SLICES)
		fail(i, r, "sliding-plain: more than 64 slices");
	if (r->algorithm == SL_ALGO_SLIDING_COUNTER &&
	    slices > SL_MAX_PLAIN_SLICES - 1)
		fail(i, r, "sliding-counter: more than 63 slices");
	if ((r->algorithm == SL_ALGO_FIXED ||
	     r->algorithm == SL_ALGO_TOKEN_BUCKET ||
	     r->algorithm == SL_ALGO_SLIDING_LOG) &&
	    r->slice_ms != r->window_ms)
		fail(i, r, "unsliced algorithm with a slice");
	if (r->algorithm == SL_ALGO_TOKEN_BUCKET) {
		if (r->bucket_capacity < 1 || r->bucket_capacity > UINT32_MAX)
			fail(i, r, "bucket_capacity outside 1..2^32-1");
		if (r->token_ns < 1)
			fail(i, r, "token_ns < 1");
		if (r->bucket_capacity >
		    SL_MAX_WINDOW_MS * 1000000ULL / r->token_ns)
			fail(i, r, "bucket refills in more than 24d");
	} else if (r->bucket_capacity || r->token_ns) {
		fail(i, r, "bucket fields on a non-bucket rule");
	}
	if (r->algorithm == SL_ALGO_SLIDING_LOG &&
	    (r->limit > SL_MAX_LOG || r->unit == SL_UNIT_BYTES))
		fail(i, r, "sliding-log limit > 4096 or unit bytes");
}

/* What the rule matches and counts, and how it keys clients. */
static void check_match(unsigned i, const struct sl_rule *r)
{
	if (r->action > SL_ACTION_SHADOW)
		fail(i, r, "unknown action");
	if (r->unit > SL_UNIT_BYTES)
		fail(i, r, "unknown unit");
	if (r->protocol > SL_PROTO_ICMP)
		fail(i, r, "unknown protocol");
	if (r->unit == SL_UNIT_SYN && r->protocol != SL_PROTO_TCP &&
	    r->protocol != SL_PROTO_ANY)
		fail(i, r, "syn unit on a non-TCP protocol");
	if (r->port_min > r->port_max)
		fail(i, r, "empty port range");
	if (r->protocol == SL_PROTO_ICMP &&
	    (r->port_min != 0 || r->port_max != 65535))
		fail(i, r, "ICMP rule with ports");
	if (r->src_prefixlen > 128 || !masked(&r->src, r->src_prefixlen))
		fail(i, r, "source prefix with host bits or > 128");
	if (r->dst_prefixlen > 128 || !masked(&r->dst, r->dst_prefixlen))
		fail(i, r, "destination prefix with host bits or > 128");
	if (r->key_ipv4_prefix > 32 || r->key_ipv6_prefix > 128)
		fail(i, r, "key prefix too long");
	if (r->key_by_port > 1)
		fail(i, r, "per_port not a bool");
}

static void check_exempt(unsigned i, const struct sl_rule_spec *s)
{
	const struct sl_rule *r = &s->rule;
	unsigned j;

	if (s->nr_exempt && !s->exempt)
		fail(i, r, "exempt count without a list");
	if (r->nr_exempt != (s->nr_exempt > 255 ? 255 : s->nr_exempt))
		fail(i, r, "nr_exempt disagrees with the list");
	for (j = 0; j < s->nr_exempt; j++)
		if (s->exempt[j].len > 128 ||
		    !masked(&s->exempt[j].addr, s->exempt[j].len))
			fail(i, r, "exempt prefix with host bits or > 128");
}

static void revalidate(const struct sl_ruleset *rs)
{
	unsigned i, total = 0;

	if (rs->nr > SL_MAX_RULES)
		fail(rs->nr, NULL, "more than SL_MAX_RULES rules");
	if (rs->nr && !rs->specs)
		fail(0, NULL, "rules without specs");
	for (i = 0; i < rs->nr; i++) {
		const struct sl_rule_spec *s = &rs->specs[i];

		check_name(rs, i);
		check_algorithm(i, &s->rule);
		check_match(i, &s->rule);
		check_exempt(i, s);
		total += s->nr_exempt;
	}
	if (total > 16384)
		fail(0, NULL, "more than 16384 exempt prefixes");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_report_open();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_problems pb;
	struct sl_ruleset rs;
	int err;

	err = sl_rules_parse_buffer("fuzz.yaml", (const char *)data, size, &rs, &pb);
	if (err == 0) {
		if (pb.total)
			fail(0, NULL, "accepted with problems");
		revalidate(&rs);
		sl_rules_free(&rs);
	} else {
		if (err != -EINVAL && err != -ENOMEM) {
			fprintf(report, "fuzz_rules: unexpected error %d\n", err);
			abort();
		}
		if (rs.specs || rs.nr) {
			fprintf(report, "fuzz_rules: error %d left rules behind\n", err);
			abort();
		}
		if (err == -EINVAL) {
			const char *broke = fuzz_problems_check(&pb, data, size,
								true);

			if (broke)
				fail(0, NULL, broke);
		}
	}
	return 0;
}
