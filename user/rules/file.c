// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Rule files: the YAML tree (core/yaml_doc.c) is read rule by rule into a
 * struct sl_rule_spec. Every problem of the file is collected, each at the
 * line and column of the value (or key) it is about, under the rule's name
 * and the field's; a file with any problem yields no rules.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/parse.h"
#include "rules/rules.h"
#include "util/yaml_doc.h"

/* One rule as written: the values read from its mapping, before the checks
 * that look at several fields together. `has_*`: the field was given.
 */
struct rule_in {
	const char *name;
	uint64_t priority, limit, slices, bucket_capacity;
	bool has_priority, has_slices, has_bucket_capacity;
	unsigned protocol, unit, algorithm, action;
	const char *ports, *source, *destination, *window, *refill_per_s;
	uint64_t ipv4_prefix, ipv6_prefix;
	bool per_port, cont, api_key_is_address;
	const struct sl_ynode *exempt;	/* a list, or NULL */
	const struct sl_ynode *envoy;	/* a mapping, or NULL */
};

struct checker {
	struct sl_yctx y;
	const struct sl_ynode *map;	/* the rule's mapping */
	unsigned index;
	unsigned before;		/* problems found before this rule */
	char label[40];			/* the rule's name, or "#N" */
};

static const char *const rule_keys[] = {
	"name", "priority", "protocol", "ports", "source", "destination",
	"limit", "window", "slices", "bucket_capacity", "refill_per_s", "unit",
	"algorithm", "action", "key", "continue", "exempt",
	"api_key_is_address", "envoy", NULL,
};
static const char *const key_keys[] = {
	"ipv4_prefix", "ipv6_prefix", "per_port", NULL,
};

/* The node a problem of FIELD ("ports", "key.ipv4_prefix") is about: its
 * value, else the rule itself (a field that is missing).
 */
static const struct sl_ynode *locate(const struct checker *c, const char *field)
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

static void bad(struct checker *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void bad(struct checker *c, const char *field, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sl_yaml_bad(&c->y, locate(c, field), field, "%s", msg);
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
		bad(c, "ports", "ICMP has no ports; remove 'ports' or use tcp/udp");
		return;
	}
	snprintf(buf, sizeof(buf), "%s", y->ports);
	dash = strchr(buf, '-');
	if (dash)
		*dash = '\0';
	if (sl_parse_uint(buf, 0, 65535, &lo) ||
	    (dash && sl_parse_uint(dash + 1, 0, 65535, &hi))) {
		bad(c, "ports", "'%s' is not a port (0-65535) or range (LOW-HIGH)",
		    y->ports);
		return;
	}
	if (!dash)
		hi = lo;
	if (lo > hi) {
		bad(c, "ports", "range %llu-%llu is empty: write LOW-HIGH",
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
		bad(c, "slices", "does not apply to %s (only sliding, sliding-plain and sliding-counter have slices)",
		    name);
	else if (sliced && !y->has_slices && slices > r->window_ms)
		/* the default slices are not wrong: the window is too short
		 * for them
		 */
		bad(c, "window", "%ums is shorter than %s's %u slices of at least 1ms each (the default): at least %ums, or set slices to at most the window in ms",
		    r->window_ms, name, slices, slices);
	else if (sliced && (slices < 1 || slices > max_slices ||
			    slices > r->window_ms))
		bad(c, "slices", "must be between 1 and %u for %s, and at most the window in ms",
		    max_slices, name);
	else if (r->algorithm == SL_ALGO_SLIDING)
		r->slice_ms = r->window_ms / slices;
	else if (sliced)
		/* rounded up, so that `slices` slices cover the window and the
		 * ring of SL_MAX_PLAIN_SLICES always holds them
		 */
		r->slice_ms = (r->window_ms + slices - 1) / slices;

	if (!bucket && y->has_bucket_capacity)
		bad(c, "bucket_capacity", "applies to token-bucket only");
	if (!bucket && y->refill_per_s)
		bad(c, "refill_per_s", "applies to token-bucket only");
	if (bucket) {
		double rate = 0;
		char *end;

		/* read in 1..UINT32_MAX, like the limit */
		r->bucket_capacity = y->has_bucket_capacity ?
				     y->bucket_capacity : r->limit;
		if (y->refill_per_s) {
			rate = strtod(y->refill_per_s, &end);
			if (*end || !(rate > 0) || rate > 1e9)
				bad(c, "refill_per_s", "'%s' is not a rate in units per second (e.g. 10, 0.5)",
				    y->refill_per_s);
			else if (1e9 / rate > (double)SL_MAX_WINDOW_MS * 1e6)
				/* also keeps the conversion below in range */
				bad(c, "refill_per_s", "'%s' is slower than one unit in 12d",
				    y->refill_per_s);
			else
				r->token_ns = (uint64_t)(1e9 / rate + 0.5);
		} else if (r->limit) {
			/* limit per window: one unit every window / limit */
			r->token_ns = r->window_ms * 1000000ULL / r->limit;
		}
		/* unless refill_per_s was refused already */
		if (r->token_ns < 1 && c->y.pb->total == c->before)
			bad(c, "refill_per_s", "refill faster than one unit per ns");
		else if (r->token_ns &&
			 r->bucket_capacity > SL_MAX_WINDOW_MS * 1000000ULL / r->token_ns)
			bad(c, "bucket_capacity", "a bucket must refill in at most 12d");
	}
	if (r->algorithm == SL_ALGO_SLIDING_LOG) {
		if (r->limit > SL_MAX_LOG)
			bad(c, "limit", "sliding-log keeps every accept: at most %u (%zu bytes per client); use sliding for larger limits",
			    SL_MAX_LOG, sizeof(struct sl_client_log));
		if (r->unit == SL_UNIT_BYTES)
			bad(c, "unit", "sliding-log counts requests, not bytes");
	}
}


/* The fields of one rule's mapping, each checked for its type and range;
 * a value that is refused leaves the default, so that the checks across
 * fields below do not repeat the problem.
 */
static void read_rule(struct checker *c, struct rule_in *y)
{
	const struct sl_yctx *yc = &c->y;
	const struct sl_ynode *m = c->map, *v, *k;

	memset(y, 0, sizeof(*y));
	y->limit = 1;
	y->ipv4_prefix = 32;
	y->ipv6_prefix = 64;
	if (!sl_yaml_check_keys(yc, m, NULL, rule_keys))
		return;
	if ((v = sl_yaml_get(m, "name")))
		sl_yaml_text(yc, v, "name", sizeof(((struct sl_rule *)0)->name) - 1,
			     &y->name);
	else
		bad(c, "name", "required: the rule's name");
	if ((v = sl_yaml_get(m, "priority")))
		y->has_priority = sl_yaml_uint(yc, v, "priority", 0, UINT32_MAX,
					       &y->priority);
	if ((v = sl_yaml_get(m, "limit")))
		sl_yaml_uint(yc, v, "limit", 1, UINT32_MAX, &y->limit);
	else
		bad(c, "limit", "required: units per window, 1 to %u", UINT32_MAX);
	/* the most any algorithm takes; check_algorithm narrows it */
	if ((v = sl_yaml_get(m, "slices")))
		y->has_slices = sl_yaml_uint(yc, v, "slices", 1, 3600, &y->slices);
	if ((v = sl_yaml_get(m, "bucket_capacity")))
		y->has_bucket_capacity = sl_yaml_uint(yc, v, "bucket_capacity", 1,
						      UINT32_MAX,
						      &y->bucket_capacity);
	if ((v = sl_yaml_get(m, "protocol")))
		sl_yaml_enum(yc, v, "protocol", sl_protocol_name,
			     SL_PROTO_ICMP + 1, &y->protocol);
	if ((v = sl_yaml_get(m, "unit")))
		sl_yaml_enum(yc, v, "unit", sl_unit_name, SL_UNIT_BYTES + 1,
			     &y->unit);
	if ((v = sl_yaml_get(m, "algorithm")))
		sl_yaml_enum(yc, v, "algorithm", sl_algorithm_name,
			     SL_ALGO__COUNT, &y->algorithm);
	if ((v = sl_yaml_get(m, "action")))
		sl_yaml_enum(yc, v, "action", sl_action_name,
			     SL_ACTION_SHADOW + 1, &y->action);
	if ((v = sl_yaml_get(m, "ports")))
		sl_yaml_text(yc, v, "ports", 32, &y->ports);
	if ((v = sl_yaml_get(m, "source")))
		sl_yaml_text(yc, v, "source", 64, &y->source);
	if ((v = sl_yaml_get(m, "destination")))
		sl_yaml_text(yc, v, "destination", 64, &y->destination);
	if ((v = sl_yaml_get(m, "window")))
		sl_yaml_text(yc, v, "window", 32, &y->window);
	if ((v = sl_yaml_get(m, "refill_per_s")))
		sl_yaml_text(yc, v, "refill_per_s", 32, &y->refill_per_s);
	if ((v = sl_yaml_get(m, "continue")))
		sl_yaml_bool(yc, v, "continue", &y->cont);
	if ((v = sl_yaml_get(m, "api_key_is_address")))
		sl_yaml_bool(yc, v, "api_key_is_address",
			     &y->api_key_is_address);
	if ((k = sl_yaml_get(m, "key")) &&
	    sl_yaml_check_keys(yc, k, "key", key_keys)) {
		if ((v = sl_yaml_get(k, "ipv4_prefix")))
			sl_yaml_uint(yc, v, "key.ipv4_prefix", 0, 32,
				     &y->ipv4_prefix);
		if ((v = sl_yaml_get(k, "ipv6_prefix")))
			sl_yaml_uint(yc, v, "key.ipv6_prefix", 0, 128,
				     &y->ipv6_prefix);
		if ((v = sl_yaml_get(k, "per_port")))
			sl_yaml_bool(yc, v, "key.per_port", &y->per_port);
	}
	if ((v = sl_yaml_get(m, "exempt"))) {
		if (v->type == SL_YNODE_SEQ)
			y->exempt = v;
		else
			bad(c, "exempt", "expected a list of prefixes ([10.1.0.0/16, 2001:db8::1])");
	}
	y->envoy = sl_yaml_get(m, "envoy");
}

static void check_rule(struct checker *c, const struct rule_in *y,
		       struct sl_rule_spec *spec)
{
	struct sl_rule *r = &spec->rule;
	uint64_t window_ms = 60000;
	unsigned i;

	memset(spec, 0, sizeof(*spec));
	spec->line = c->map->line;
	if (y->name && !valid_name(y->name))
		bad(c, "name", "use letters, digits, '-', '_' and '.' only");
	snprintf(r->name, sizeof(r->name), "%s", y->name ? y->name : "");
	r->priority = y->has_priority ? y->priority : c->index;
	r->protocol = y->protocol;
	r->unit = y->unit;
	r->algorithm = y->algorithm;
	r->action = y->action;
	r->continues = y->cont;
	r->api_key_is_address = y->api_key_is_address;
	check_ports(c, y, r);
	check_prefix(c, locate(c, "source"), "source", y->source, &r->src,
		     &r->src_prefixlen);
	check_prefix(c, locate(c, "destination"), "destination", y->destination,
		     &r->dst, &r->dst_prefixlen);
	r->limit = y->limit;
	if (y->window && sl_parse_duration_ms(y->window, &window_ms))
		bad(c, "window", "'%s' is not a duration (e.g. 60s, 500ms, 0.2s, 1m)",
		    y->window);
	else if (window_ms < 1 || window_ms > SL_MAX_WINDOW_MS)
		bad(c, "window", "must be between 1ms and 12d");
	if (window_ms < 1 || window_ms > SL_MAX_WINDOW_MS)
		window_ms = 60000;	/* refused above; keeps the checks below sane */
	r->window_ms = window_ms;
	check_algorithm(c, y, r, y->has_slices ? y->slices : 12);
	if (r->unit == SL_UNIT_SYN && r->protocol != SL_PROTO_TCP &&
	    r->protocol != SL_PROTO_ANY)
		bad(c, "unit", "'syn' counts TCP connections; set protocol: tcp");
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

static int by_priority(const void *a, const void *b)
{
	const struct sl_rule_spec *x = a, *y = b;

	if (x->rule.priority != y->rule.priority)
		return x->rule.priority < y->rule.priority ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;	/* file order */
}

void sl_rules_free(struct sl_ruleset *rs)
{
	unsigned i;

	for (i = 0; rs->specs && i < rs->nr; i++) {
		free(rs->specs[i].exempt);
		free(rs->specs[i].envoy);
	}
	free(rs->specs);
	free(rs->warnings);
	rs->specs = NULL;
	rs->warnings = NULL;
	rs->nr = 0;
}

/* ---- warnings: valid rules that may not do what they seem to ---- */

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
	sl_yaml_bad(&w, locate(c, field), field, "%s", msg);
}

/* The largest Ethernet frame without jumbo frames: a bytes limit below it
 * drops every full-size packet whatever the rate.
 */
#define SL_FULL_FRAME	1514

static void rule_warnings(struct checker *c, const struct rule_in *y,
			  const struct sl_rule *r, struct sl_ruleset *rs)
{
	/* ports: 0-65535 is no port restriction: every protocol */
	bool ports = r->port_min != 0 || r->port_max != 65535;

	(void)y;
	/* the kernel matches a rule of protocol any with ports on TCP
	 * and UDP only (rules/tables.c, rule_in_space)
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

/* The packets of rule r in port space s (0 TCP, 1 UDP, 2 ICMP, 3 other),
 * as the kernel's port classes put them (rules/tables.c).
 */
static bool rule_in_space(const struct sl_rule *r, int s)
{
	bool ports = r->port_min != 0 || r->port_max != 65535;

	switch (s) {
	case 0: return r->protocol == SL_PROTO_TCP || r->protocol == SL_PROTO_ANY;
	case 1: return r->protocol == SL_PROTO_UDP || r->protocol == SL_PROTO_ANY;
	case 2: return (r->protocol == SL_PROTO_ICMP ||
			r->protocol == SL_PROTO_ANY) && !ports;
	default: return r->protocol == SL_PROTO_ANY && !ports;
	}
}

static bool prefix_contains(const struct sl_addr *a, unsigned alen,
			    const struct sl_addr *b, unsigned blen)
{
	unsigned i;

	if (alen > blen)
		return false;
	for (i = 0; i < alen; i++)
		if ((a->byte[i / 8] ^ b->byte[i / 8]) & (0x80 >> (i % 8)))
			return false;
	return true;
}

/* Does every packet that r matches match e too? Exact over the match
 * fields (protocol, ports, source and destination prefixes).
 */
static bool rule_contains(const struct sl_rule *e, const struct sl_rule *r)
{
	int s;

	for (s = 0; s < 4; s++) {
		if (!rule_in_space(r, s))
			continue;
		if (!rule_in_space(e, s))
			return false;
		if (s < 2 && (e->port_min > r->port_min ||
			      e->port_max < r->port_max))
			return false;
	}
	return prefix_contains(&e->src, e->src_prefixlen, &r->src,
			       r->src_prefixlen) &&
	       prefix_contains(&e->dst, e->dst_prefixlen, &r->dst,
			       r->dst_prefixlen);
}

/* A rule every packet of which an earlier rule that does not continue
 * takes first can never match. Only one earlier rule is compared at a
 * time: a rule covered by several together is not found, never wrongly
 * reported.
 */
static void shadow_warnings(struct sl_ruleset *rs, const char *file)
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

/* The list under "rules:"; NULL (and a problem) when there is none. */
static const struct sl_ynode *rule_list(const struct sl_ynode *root,
					struct sl_problems *pb)
{
	static const char *const file_keys[] = { "rules", NULL };
	const struct sl_yctx top = { .pb = pb };
	const struct sl_ynode *list;

	if (root->type != SL_YNODE_MAP) {
		sl_yaml_bad(&top, root, NULL, "expected 'rules:' with a list of rules");
		return NULL;
	}
	sl_yaml_check_keys(&top, root, NULL, file_keys);
	list = sl_yaml_get(root, "rules");
	if (!list) {
		sl_yaml_bad(&top, root, "rules", "required: the list of rules");
		return NULL;
	}
	if (list->type != SL_YNODE_SEQ) {
		sl_yaml_bad(&top, list, "rules", "expected a list of rules ('- name: ...' lines, or [])");
		return NULL;
	}
	if (list->nr > SL_MAX_RULES) {
		sl_yaml_bad(&top, list, "rules", "%u rules: at most %u", list->nr,
			    SL_MAX_RULES);
		return NULL;
	}
	return list;
}

int sl_rules_parse_buffer(const char *name, const char *buf, size_t len,
			  struct sl_ruleset *rs, struct sl_problems *pb)
{
	struct sl_ynode *root = NULL;
	const struct sl_ynode *list;
	unsigned i, j, total_exempt = 0;
	int err;

	memset(rs, 0, sizeof(*rs));
	err = sl_yaml_parse_document(name, buf, len,
				     "empty rule file: expected 'rules:' with a list of rules",
				     pb, &root);
	if (err)
		return err;
	list = rule_list(root, pb);
	if (list) {
		rs->specs = calloc(list->nr ? list->nr : 1, sizeof(*rs->specs));
		if (!rs->specs)
			pb->oom = true;
	}
	for (i = 0; rs->specs && i < list->nr; i++) {
		const struct sl_ynode *n = sl_yaml_get(list->kids[i], "name");
		struct checker c = {
			.y = { .pb = pb },
			.map = list->kids[i],
			.index = i,
			.before = pb->total,
		};
		struct rule_in y;

		c.y.rule = c.label;
		if (n && n->type == SL_YNODE_SCALAR && n->text[0])
			snprintf(c.label, sizeof(c.label), "%.39s", n->text);
		else
			snprintf(c.label, sizeof(c.label), "#%u", i + 1);
		read_rule(&c, &y);
		check_rule(&c, &y, &rs->specs[i]);
		if (pb->total == c.before)
			rule_warnings(&c, &y, &rs->specs[i].rule, rs);
		rs->nr++;
		total_exempt += rs->specs[i].nr_exempt;
		for (j = 0; y.name && j < i; j++)
			if (!strcmp(rs->specs[i].rule.name, rs->specs[j].rule.name))
				bad(&c, "name", "duplicate of the rule on line %u",
				    rs->specs[j].line);
	}
	if (total_exempt > 16384)
		sl_problem_add(pb, list->line, list->column, NULL, "exempt",
			       "%u exempt prefixes in all: at most 16384",
			       total_exempt);
	sl_yaml_free(root);
	if (pb->oom || pb->total) {
		sl_rules_free(rs);
		return pb->oom ? -ENOMEM : -EINVAL;
	}
	qsort(rs->specs, rs->nr, sizeof(*rs->specs), by_priority);
	shadow_warnings(rs, name);
	return 0;
}

static int parse_rules(const char *name, const char *buf, size_t len,
		       void *rs, struct sl_problems *pb)
{
	return sl_rules_parse_buffer(name, buf, len, rs, pb);
}

int sl_rules_parse_file(const char *path, struct sl_ruleset *rs,
			struct sl_problems *pb)
{
	memset(rs, 0, sizeof(*rs));
	return sl_yaml_parse_file(path, parse_rules, rs, pb);
}

int sl_rules_load_buffer(const char *name, const char *buf, size_t len,
			 struct sl_ruleset *rs)
{
	struct sl_problems *pb = malloc(sizeof(*pb));

	memset(rs, 0, sizeof(*rs));
	if (!pb)
		return -ENOMEM;
	return sl_problems_report(sl_rules_parse_buffer(name, buf, len, rs, pb), pb);
}

int sl_rules_load_file(const char *path, struct sl_ruleset *rs)
{
	struct sl_problems *pb = malloc(sizeof(*pb));
	int err;

	memset(rs, 0, sizeof(*rs));
	if (!pb)
		return -ENOMEM;
	err = sl_problems_report(sl_rules_parse_file(path, rs, pb), pb);
	/* the service's log says what rules check says */
	if (!err && rs->warnings)
		sl_warnings_print(rs->warnings, stderr);
	return err;
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
	check_rule(&c, &y, spec);
	err = c.y.pb->total ? -EINVAL : 0;
	return sl_problems_report(err, c.y.pb);
}
