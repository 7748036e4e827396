// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One rule's checks: each field for its range, then the fields together
 * (the algorithm's parameters, the ports for the protocol, the prefixes),
 * each problem at the line of the value it is about. A rule of a file and
 * a rule from replay's flags go through the same checks.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/parse.h"
#include "rules/rule_check.h"

const struct sl_ynode *sl_checker_locate(const struct checker *c,
					 const char *field)
{
	const struct sl_ynode *n = c->map, *v;
	char part[32];
	const char *dot;

	while (field && *field) {
		dot = strchr(field, '.');
		snprintf(part, sizeof(part), "%.*s",
			 (int)(dot ? (size_t)(dot - field) : strlen(field)), field);
		v = sl_yaml_get(n, part);
		if (!v)
			break;
		n = v;
		field = dot ? dot + 1 : NULL;
	}
	return n;
}

void sl_checker_bad(struct checker *c, const char *field, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sl_yaml_bad(&c->y, sl_checker_locate(c, field), field, "%s", msg);
}

static bool valid_name(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ||
		      *s == '.'))
			return false;
	return true;
}

static void check_ports(struct checker *c, const struct rule_in *y,
			struct sl_rule *r)
{
	char buf[40], *dash;
	uint64_t lo, hi;

	r->port_min = 0;
	r->port_max = 65535;
	if (!y->ports)
		return;
	if (y->protocol == SL_PROTO_ICMP) {
		sl_checker_bad(c, "ports", "ICMP has no ports; remove 'ports' or use tcp/udp");
		return;
	}
	snprintf(buf, sizeof(buf), "%s", y->ports);
	dash = strchr(buf, '-');
	if (dash)
		*dash = '\0';
	if (sl_parse_uint(buf, 0, 65535, &lo) ||
	    (dash && sl_parse_uint(dash + 1, 0, 65535, &hi))) {
		sl_checker_bad(c, "ports", "'%s' is not a port (0-65535) or range (LOW-HIGH)",
			       y->ports);
		return;
	}
	if (!dash)
		hi = lo;
	if (lo > hi) {
		sl_checker_bad(c, "ports", "range %llu-%llu is empty: write LOW-HIGH",
			       (unsigned long long)lo, (unsigned long long)hi);
		return;
	}
	r->port_min = lo;
	r->port_max = hi;
}

/* AT: the value's node, for the exempt list's items */
static void check_prefix(struct checker *c, const struct sl_ynode *at,
			 const char *field, const char *text,
			 struct sl_addr *addr, __u8 *len)
{
	unsigned len128;
	int err;

	*len = 0;
	memset(addr, 0, sizeof(*addr));
	if (!text)
		return;
	err = sl_parse_prefix(text, addr, &len128);
	if (err == -EDOM)
		sl_yaml_bad(&c->y, at, field, "'%s' has host bits set; write the network address",
			    text);
	else if (err)
		sl_yaml_bad(&c->y, at, field, "'%s' is not an address or prefix (e.g. 192.0.2.0/24, 2001:db8::/32)",
			    text);
	else
		*len = len128;
}

/* The algorithm's own parameters; a parameter that does not apply to the
 * chosen algorithm is an error, not silently ignored.
 */
static void check_algorithm(struct checker *c, const struct rule_in *y,
			    struct sl_rule *r, unsigned slices)
{
	const char *name = sl_algorithm_name(r->algorithm);
	bool bucket = r->algorithm == SL_ALGO_TOKEN_BUCKET;
	bool counter = r->algorithm == SL_ALGO_SLIDING_COUNTER;
	bool sliced = r->algorithm == SL_ALGO_SLIDING ||
		      r->algorithm == SL_ALGO_SLIDING_PLAIN || counter;
	/* the counter's ring also holds the weighted slice before the window */
	unsigned max_slices = r->algorithm == SL_ALGO_SLIDING ? 3600 :
			      SL_MAX_PLAIN_SLICES - counter;

	if (counter && !y->has_slices)
		slices = 1;	/* the two-window counter */
	r->slice_ms = r->window_ms;
	if (y->has_slices && !sliced)
		sl_checker_bad(c, "slices", "does not apply to %s (only sliding, sliding-plain and sliding-counter have slices)",
			       name);
	else if (sliced && !y->has_slices && slices > r->window_ms)
		/* the default slices are not wrong: the window is too short
		 * for them
		 */
		sl_checker_bad(c, "window", "%ums is shorter than %s's %u slices of at least 1ms each (the default): at least %ums, or set slices to at most the window in ms",
			       r->window_ms, name, slices, slices);
	else if (sliced && (slices < 1 || slices > max_slices ||
			    slices > r->window_ms))
		sl_checker_bad(c, "slices", "must be between 1 and %u for %s, and at most the window in ms",
			       max_slices, name);
	else if (r->algorithm == SL_ALGO_SLIDING)
		r->slice_ms = r->window_ms / slices;
	else if (sliced)
		/* rounded up, so that `slices` slices cover the window and the
		 * ring of SL_MAX_PLAIN_SLICES always holds them
		 */
		r->slice_ms = (r->window_ms + slices - 1) / slices;

	if (!bucket && y->has_bucket_capacity)
		sl_checker_bad(c, "bucket_capacity", "applies to token-bucket only");
	if (!bucket && y->refill_per_s)
		sl_checker_bad(c, "refill_per_s", "applies to token-bucket only");
	if (bucket) {
		double rate = 0;
		char *end;

		/* read in 1..UINT32_MAX, like the limit */
		r->bucket_capacity = y->has_bucket_capacity ?
				     y->bucket_capacity : r->limit;
		if (y->refill_per_s) {
			rate = strtod(y->refill_per_s, &end);
			if (*end || !(rate > 0) || rate > 1e9)
				sl_checker_bad(c, "refill_per_s", "'%s' is not a rate in units per second (e.g. 10, 0.5)",
					       y->refill_per_s);
			else if (1e9 / rate > (double)SL_MAX_WINDOW_MS * 1e6)
				/* also keeps the conversion below in range */
				sl_checker_bad(c, "refill_per_s", "'%s' is slower than one unit in 12d",
					       y->refill_per_s);
			else
				r->token_ns = (uint64_t)(1e9 / rate + 0.5);
		} else if (r->limit) {
			/* limit per window: one unit every window / limit */
			r->token_ns = r->window_ms * 1000000ULL / r->limit;
		}
		/* unless refill_per_s was refused already */
		if (r->token_ns < 1 && c->y.pb->total == c->before)
			sl_checker_bad(c, "refill_per_s", "refill faster than one unit per ns");
		else if (r->token_ns &&
			 r->bucket_capacity > SL_MAX_WINDOW_MS * 1000000ULL / r->token_ns)
			sl_checker_bad(c, "bucket_capacity", "a bucket must refill in at most 12d");
	}
	if (r->algorithm == SL_ALGO_SLIDING_LOG) {
		if (r->limit > SL_MAX_LOG)
			sl_checker_bad(c, "limit", "sliding-log keeps every accept: at most %u (%zu bytes per client); use sliding for larger limits",
				       SL_MAX_LOG, sizeof(struct sl_client_log));
		if (r->unit == SL_UNIT_BYTES)
			sl_checker_bad(c, "unit", "sliding-log counts requests, not bytes");
	}
}

void sl_rule_check(struct checker *c, const struct rule_in *y,
		   struct sl_rule_spec *spec)
{
	struct sl_rule *r = &spec->rule;
	uint64_t window_ms = 60000;
	unsigned i;

	memset(spec, 0, sizeof(*spec));
	spec->line = c->map->line;
	if (y->name && !valid_name(y->name))
		sl_checker_bad(c, "name", "use letters, digits, '-', '_' and '.' only");
	snprintf(r->name, sizeof(r->name), "%s", y->name ? y->name : "");
	r->priority = y->has_priority ? y->priority : c->index;
	r->protocol = y->protocol;
	r->unit = y->unit;
	r->algorithm = y->algorithm;
	r->action = y->action;
	r->continues = y->cont;
	r->api_key_is_address = y->api_key_is_address;
	check_ports(c, y, r);
	check_prefix(c, sl_checker_locate(c, "source"), "source", y->source,
		     &r->src, &r->src_prefixlen);
	check_prefix(c, sl_checker_locate(c, "destination"), "destination",
		     y->destination, &r->dst, &r->dst_prefixlen);
	r->limit = y->limit;
	if (y->window && sl_parse_duration_ms(y->window, &window_ms))
		sl_checker_bad(c, "window", "'%s' is not a duration (e.g. 60s, 500ms, 0.2s, 1m)",
			       y->window);
	else if (window_ms < 1 || window_ms > SL_MAX_WINDOW_MS)
		sl_checker_bad(c, "window", "must be between 1ms and 12d");
	if (window_ms < 1 || window_ms > SL_MAX_WINDOW_MS)
		window_ms = 60000;	/* refused above; keeps the checks below sane */
	r->window_ms = window_ms;
	check_algorithm(c, y, r, y->has_slices ? y->slices : 12);
	if (r->unit == SL_UNIT_SYN && r->protocol != SL_PROTO_TCP &&
	    r->protocol != SL_PROTO_ANY)
		sl_checker_bad(c, "unit", "'syn' counts TCP connections; set protocol: tcp");
	r->key_ipv4_prefix = y->ipv4_prefix;
	r->key_ipv6_prefix = y->ipv6_prefix;
	r->key_by_port = y->per_port;
	if (y->envoy && sl_envoy_read(&c->y, y->envoy, &spec->envoy))
		c->y.pb->oom = true;

	if (!y->exempt || !y->exempt->nr)
		return;
	spec->exempt = calloc(y->exempt->nr, sizeof(*spec->exempt));
	if (!spec->exempt) {
		c->y.pb->oom = true;
		return;
	}
	for (i = 0; i < y->exempt->nr; i++) {
		const struct sl_ynode *item = y->exempt->kids[i];
		struct sl_prefix *p = &spec->exempt[spec->nr_exempt];
		const char *text;
		__u8 len;

		if (!sl_yaml_text(&c->y, item, "exempt", 64, &text))
			continue;
		check_prefix(c, item, "exempt", text, &p->addr, &len);
		p->len = len;
		spec->nr_exempt++;
	}
	r->nr_exempt = spec->nr_exempt > 255 ? 255 : spec->nr_exempt;
}

/* ---- one rule from values already parsed (replay's flags) ---- */

int sl_parse_algorithm(const char *name, unsigned *algorithm)
{
	return sl_parse_name(name, sl_algorithm_name, SL_ALGO__COUNT, algorithm);
}

int sl_rule_from_fields(const char *origin, const struct sl_rule_fields *f,
			struct sl_rule_spec *spec)
{
	/* the same checks as a rule of a file, on the values a file's rule
	 * would have been read into (with its defaults)
	 */
	struct rule_in y = {
		.name = f->name,
		.limit = f->limit,
		.window = f->window,
		.slices = f->slices ? *f->slices : 0,
		.has_slices = f->slices != NULL,
		.bucket_capacity = f->bucket_capacity ? *f->bucket_capacity : 0,
		.has_bucket_capacity = f->bucket_capacity != NULL,
		.refill_per_s = f->refill_per_s,
		.algorithm = f->algorithm,
		.ipv4_prefix = 32,
		.ipv6_prefix = 64,
	};
	/* an empty mapping: the flags have no lines to point at */
	struct sl_ynode flags = { .type = SL_YNODE_MAP, .line = 1, .column = 1 };
	struct checker c = { .y.rule = f->name, .map = &flags };
	int err;

	c.y.pb = malloc(sizeof(*c.y.pb));
	if (!c.y.pb)
		return -ENOMEM;
	sl_problems_init(c.y.pb, origin);
	sl_rule_check(&c, &y, spec);
	err = c.y.pb->total ? -EINVAL : 0;
	return sl_problems_report(err, c.y.pb);
}
