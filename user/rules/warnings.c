// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Warnings: the rules of a valid file that may not do what they seem to
 * (never matched, or limiting more than their protocol says). They do not
 * make the file invalid; `rules check` and the service's log tell them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "util/parse.h"
#include "rules/port_classes.h"
#include "rules/rule_check.h"

/* The list of warnings, made at the first; NULL when memory runs out
 * (a warning is then not told, the file is still valid).
 */
static struct sl_problems *warnings_of(struct sl_ruleset *rs, const char *file)
{
	if (!rs->warnings) {
		rs->warnings = malloc(sizeof(*rs->warnings));
		if (rs->warnings)
			sl_problems_init(rs->warnings, file);
	}
	return rs->warnings;
}

static void warn(struct checker *c, struct sl_ruleset *rs, const char *field,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void warn(struct checker *c, struct sl_ruleset *rs, const char *field,
		 const char *fmt, ...)
{
	struct sl_yctx w = { .pb = warnings_of(rs, c->y.pb->file),
			     .rule = c->y.rule };
	char msg[256];
	va_list ap;

	if (!w.pb)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sl_yaml_bad(&w, sl_checker_locate(c, field), field, "%s", msg);
}

/* The largest Ethernet frame without jumbo frames: a bytes limit below it
 * drops every full-size packet whatever the rate.
 */
#define SL_FULL_FRAME	1514

void sl_rule_warnings(struct checker *c, const struct sl_rule *r,
		      struct sl_ruleset *rs)
{
	bool ports = sl_rule_has_ports(r);

	/* the kernel matches a rule of protocol any with ports on TCP
	 * and UDP only (sl_rule_in_port_space)
	 */
	if (ports && r->protocol == SL_PROTO_ANY)
		warn(c, rs, "ports", "with protocol any, ports match TCP and UDP only (ICMP and other protocols never meet this rule): set protocol: tcp or udp to say which");
	if (r->port_min == 0 && r->port_max == 0)
		warn(c, rs, "ports", "port 0 is no service's port (only malformed or scanning traffic uses it): remove 'ports' to match every port");
	if (r->unit == SL_UNIT_BYTES && r->protocol == SL_PROTO_ANY &&
	    !ports && r->limit < SL_FULL_FRAME)
		warn(c, rs, "unit", "bytes of every protocol, ICMP (ping) included, against a limit of %llu bytes: no packet larger than that ever passes; set protocol: tcp or udp if that is what it limits, or raise the limit",
		     (unsigned long long)r->limit);
}

/* Does every packet that r matches match e too? Exact over the match
 * fields (protocol, ports, source and destination prefixes).
 */
static bool rule_contains(const struct sl_rule *e, const struct sl_rule *r)
{
	int s;

	for (s = 0; s < SL_PORT_SPACES; s++) {
		if (!sl_rule_in_port_space(r, s))
			continue;
		if (!sl_rule_in_port_space(e, s))
			return false;
		/* TCP and UDP: the only spaces with ports */
		if (s <= SL_PORT_SPACE_UDP && (e->port_min > r->port_min ||
					       e->port_max < r->port_max))
			return false;
	}
	/* a rule's prefixes have no host bits (sl_rule_check refuses them) */
	return sl_prefix_contains(&e->src, e->src_prefixlen, &r->src,
				  r->src_prefixlen) &&
	       sl_prefix_contains(&e->dst, e->dst_prefixlen, &r->dst,
				  r->dst_prefixlen);
}

/* A rule every packet of which an earlier rule that does not continue
 * takes first can never match. Only one earlier rule is compared at a
 * time: a rule covered by several together is not found, never wrongly
 * reported.
 */
void sl_rules_shadow_warnings(struct sl_ruleset *rs, const char *file)
{
	struct sl_problems *w;
	unsigned i, j;

	for (i = 1; i < rs->nr; i++)
		for (j = 0; j < i; j++) {
			const struct sl_rule *e = &rs->specs[j].rule;

			if (e->continues || !rule_contains(e, &rs->specs[i].rule))
				continue;
			w = warnings_of(rs, file);
			if (w)
				sl_problem_add(w, rs->specs[i].line, 0,
					       rs->specs[i].rule.name, NULL,
					       "can never match: every packet it matches is taken first by rule '%s' (line %u), which does not continue",
					       e->name, rs->specs[j].line);
			break;
		}
}
