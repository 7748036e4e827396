// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Rule files: libcyaml turns the YAML into plain structs, then each rule is
 * validated field by field into a struct sl_rule_spec. libcyaml does not
 * keep positions, so a second pass with libyaml records the line of every
 * rule and field, and every error names file, line, rule and field.
 */
#include <cyaml/cyaml.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "common.h"
#include "rules.h"

/* ---- the YAML shape (libcyaml schema) ---- */

struct yaml_key {
	unsigned *ipv4_prefix;
	unsigned *ipv6_prefix;
	bool per_port;
};

struct yaml_rule {
	char *name;
	unsigned *priority;
	int protocol;
	char *ports;
	char *source;
	char *destination;
	uint64_t limit;
	char *window;
	unsigned *slices;
	uint64_t *bucket_capacity;
	char *refill_per_s;
	int unit;
	int algorithm;
	int action;
	struct yaml_key *key;
	bool cont;
	char **exempt;
	unsigned exempt_count;
};

struct yaml_file {
	struct yaml_rule *rules;
	unsigned rules_count;
};

static const cyaml_strval_t protocol_strings[] = {
	{ "any", SL_PROTO_ANY }, { "tcp", SL_PROTO_TCP },
	{ "udp", SL_PROTO_UDP }, { "icmp", SL_PROTO_ICMP },
};
static const cyaml_strval_t unit_strings[] = {
	{ "packets", SL_UNIT_PACKETS }, { "syn", SL_UNIT_SYN },
	{ "bytes", SL_UNIT_BYTES },
};
static const cyaml_strval_t algorithm_strings[] = {
	{ "sliding", SL_ALGO_SLIDING },
	{ "sliding-plain", SL_ALGO_SLIDING_PLAIN },
	{ "fixed", SL_ALGO_FIXED },
	{ "token-bucket", SL_ALGO_TOKEN_BUCKET },
	{ "sliding-log", SL_ALGO_SLIDING_LOG },
	{ "sliding-counter", SL_ALGO_SLIDING_COUNTER },
};
static const cyaml_strval_t action_strings[] = {
	{ "drop", SL_ACTION_DROP }, { "shadow", SL_ACTION_SHADOW },
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const cyaml_schema_field_t key_fields[] = {
	CYAML_FIELD_UINT_PTR("ipv4_prefix", CYAML_FLAG_OPTIONAL,
			     struct yaml_key, ipv4_prefix),
	CYAML_FIELD_UINT_PTR("ipv6_prefix", CYAML_FLAG_OPTIONAL,
			     struct yaml_key, ipv6_prefix),
	CYAML_FIELD_BOOL("per_port", CYAML_FLAG_OPTIONAL,
			 struct yaml_key, per_port),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t string_ptr = {
	CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 1, 64),
};

static const cyaml_schema_field_t rule_fields[] = {
	CYAML_FIELD_STRING_PTR("name", CYAML_FLAG_POINTER, struct yaml_rule,
			       name, 1, 31),
	CYAML_FIELD_UINT_PTR("priority", CYAML_FLAG_OPTIONAL,
			     struct yaml_rule, priority),
	CYAML_FIELD_ENUM("protocol", CYAML_FLAG_OPTIONAL | CYAML_FLAG_STRICT,
			 struct yaml_rule, protocol, protocol_strings,
			 ARRAY_SIZE(protocol_strings)),
	CYAML_FIELD_STRING_PTR("ports", CYAML_FLAG_OPTIONAL, struct yaml_rule,
			       ports, 1, 16),
	CYAML_FIELD_STRING_PTR("source", CYAML_FLAG_OPTIONAL, struct yaml_rule,
			       source, 1, 64),
	CYAML_FIELD_STRING_PTR("destination", CYAML_FLAG_OPTIONAL,
			       struct yaml_rule, destination, 1, 64),
	CYAML_FIELD_UINT("limit", CYAML_FLAG_DEFAULT, struct yaml_rule, limit),
	CYAML_FIELD_STRING_PTR("window", CYAML_FLAG_OPTIONAL, struct yaml_rule,
			       window, 1, 32),
	CYAML_FIELD_UINT_PTR("slices", CYAML_FLAG_OPTIONAL, struct yaml_rule,
			     slices),
	CYAML_FIELD_UINT_PTR("bucket_capacity", CYAML_FLAG_OPTIONAL,
			     struct yaml_rule, bucket_capacity),
	CYAML_FIELD_STRING_PTR("refill_per_s", CYAML_FLAG_OPTIONAL,
			       struct yaml_rule, refill_per_s, 1, 32),
	CYAML_FIELD_ENUM("unit", CYAML_FLAG_OPTIONAL | CYAML_FLAG_STRICT,
			 struct yaml_rule, unit, unit_strings,
			 ARRAY_SIZE(unit_strings)),
	CYAML_FIELD_ENUM("algorithm", CYAML_FLAG_OPTIONAL | CYAML_FLAG_STRICT,
			 struct yaml_rule, algorithm, algorithm_strings,
			 ARRAY_SIZE(algorithm_strings)),
	CYAML_FIELD_ENUM("action", CYAML_FLAG_OPTIONAL | CYAML_FLAG_STRICT,
			 struct yaml_rule, action, action_strings,
			 ARRAY_SIZE(action_strings)),
	CYAML_FIELD_MAPPING_PTR("key", CYAML_FLAG_OPTIONAL, struct yaml_rule,
				key, key_fields),
	CYAML_FIELD_BOOL("continue", CYAML_FLAG_OPTIONAL, struct yaml_rule,
			 cont),
	CYAML_FIELD_SEQUENCE("exempt", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
			     struct yaml_rule, exempt, &string_ptr, 0,
			     CYAML_UNLIMITED),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t rule_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct yaml_rule, rule_fields),
};

static const cyaml_schema_field_t file_fields[] = {
	CYAML_FIELD_SEQUENCE("rules", CYAML_FLAG_POINTER, struct yaml_file,
			     rules, &rule_schema, 0, SL_MAX_RULES),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t file_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct yaml_file, file_fields),
};

/* libcyaml reports a problem over several log calls (the message, then a
 * backtrace with line and column); collect them into one error line.
 */
struct cyaml_log_buf {
	char text[1024];
	size_t len;
};

static void collect_cyaml_log(cyaml_log_t level, void *ctx, const char *fmt,
		      va_list args)
{
	struct cyaml_log_buf *b = ctx;
	int n;

	if (level < CYAML_LOG_ERROR || b->len >= sizeof(b->text) - 1)
		return;
	n = vsnprintf(b->text + b->len, sizeof(b->text) - b->len, fmt, args);
	if (n > 0)
		b->len = b->len + n < sizeof(b->text) ? b->len + n :
			 sizeof(b->text) - 1;
}

/* Where libyaml itself finds a syntax error (libcyaml's backtrace names
 * the last field it read, which can be lines before), or 0.
 */
static unsigned yaml_syntax_error_line(const char *buf, size_t len)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	unsigned line = 0;

	if (!yaml_parser_initialize(&parser))
		return 0;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	for (;;) {
		if (!yaml_parser_parse(&parser, &ev)) {
			/* the construct being read (a key, a flow list), when
			 * libyaml names one, is where the file went wrong
			 */
			line = (parser.context ? parser.context_mark.line :
				parser.problem_mark.line) + 1;
			break;
		}
		if (ev.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return line;
}

/* libcyaml's text reads "Load: PROBLEM Load: Backtrace: in mapping field
 * 'F' (line: N, column: M) ..."; print it as "FILE:N: F: PROBLEM", with
 * libyaml's own line for a syntax error.
 */
static void report_cyaml_error(const char *file, const char *what,
			       struct cyaml_log_buf *log, unsigned syntax_line)
{
	char *text = log->text, *bt, *p, field[64] = "";
	unsigned line = 0;

	for (p = text; *p; p++)
		if (*p == '\n')
			*p = ' ';
	bt = strstr(text, "Backtrace:");
	if (bt) {
		p = strstr(bt, "(line: ");
		if (p)
			line = strtoul(p + 7, NULL, 10);
		p = strstr(bt, "field '");
		if (p)
			sscanf(p + 7, "%63[^']", field);
		bt[0] = '\0';
		if (bt > text && (p = strstr(text, "Load: Load")) != NULL)
			*p = '\0';
	}
	while (!strncmp(text, "Load: ", 6))
		text += 6;
	p = text + strlen(text);
	while (p > text && (p[-1] == ' ' || p[-1] == ':' || !strncmp(p - 5, "Load:", 5))) {
		if (!strncmp(p - 5, "Load:", 5))
			p -= 5;
		else
			p--;
	}
	*p = '\0';
	if (syntax_line) {
		line = syntax_line;
		field[0] = '\0';	/* the backtrace's field is not the spot */
	}
	fprintf(stderr, "%s:%u: %s%s%s\n", file, line ? line : 1, field,
		*field ? ": " : "", *text ? text : what);
}

/* ---- positions (libyaml) ---- */

#define SL_FIELDS_PER_RULE 16

struct rule_lines {
	unsigned start;
	unsigned nr;
	struct { char name[16]; unsigned line; } field[SL_FIELDS_PER_RULE];
};

/* Record the line of each rules[i] and of each of its keys, by walking the
 * libyaml event stream with a stack of open collections. Best effort: on a
 * syntax error libcyaml has already reported the position itself.
 */
struct yaml_level {
	bool is_map;
	bool expect_key;	/* maps: the next scalar is a key */
	int index;		/* sequences: items seen - 1 */
	char key[16];		/* maps: the current key */
};

static struct rule_lines *locate_rules(const char *buf, size_t len,
				       unsigned nr)
{
	struct rule_lines *lines = calloc(nr ? nr : 1, sizeof(*lines));
	struct yaml_level stack[32];
	yaml_parser_t parser;
	yaml_event_t ev;
	int top = -1;
	bool done = false;

	if (!lines || !yaml_parser_initialize(&parser))
		return lines;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done && yaml_parser_parse(&parser, &ev)) {
		unsigned line = ev.start_mark.line + 1;
		struct yaml_level *cur = top >= 0 ? &stack[top] : NULL;
		/* rules[i] is a map at depth 2 under the root key "rules" */
		bool in_rule = top == 2 && stack[2].is_map && !stack[1].is_map &&
			       !strcmp(stack[0].key, "rules") &&
			       stack[1].index >= 0 && stack[1].index < (int)nr;

		switch (ev.type) {
		case YAML_SCALAR_EVENT:
			if (cur && cur->is_map && cur->expect_key) {
				snprintf(cur->key, sizeof(cur->key), "%s",
					 (char *)ev.data.scalar.value);
				cur->expect_key = false;
				if (in_rule) {
					struct rule_lines *r =
						&lines[stack[1].index];

					if (r->nr < SL_FIELDS_PER_RULE) {
						snprintf(r->field[r->nr].name,
							 sizeof(r->field[0].name),
							 "%s", cur->key);
						r->field[r->nr++].line = line;
					}
				}
			} else if (cur && cur->is_map) {
				cur->expect_key = true;
			} else if (cur) {
				cur->index++;
			}
			break;
		case YAML_MAPPING_START_EVENT:
		case YAML_SEQUENCE_START_EVENT:
			if (cur && !cur->is_map)
				cur->index++;
			if (top + 1 >= (int)(sizeof(stack) / sizeof(stack[0]))) {
				done = true;
				break;
			}
			top++;
			memset(&stack[top], 0, sizeof(stack[top]));
			stack[top].is_map = ev.type == YAML_MAPPING_START_EVENT;
			stack[top].expect_key = true;
			stack[top].index = -1;
			if (top == 2 && stack[2].is_map && !stack[1].is_map &&
			    !strcmp(stack[0].key, "rules") &&
			    stack[1].index >= 0 && stack[1].index < (int)nr)
				lines[stack[1].index].start = line;
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			if (top >= 0)
				top--;
			if (top >= 0 && stack[top].is_map)
				stack[top].expect_key = true;
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return lines;
}

static unsigned field_line(const struct rule_lines *r, const char *field)
{
	unsigned i;

	for (i = 0; field && i < r->nr; i++)
		if (!strcmp(r->field[i].name, field))
			return r->field[i].line;
	return r->start;
}

/* ---- validation ---- */

struct checker {
	const char *file;
	const struct rule_lines *lines;
	unsigned index;
	const char *rule_name;
	int errors;
};

static void bad(struct checker *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void bad(struct checker *c, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s:%u: rule '%s': %s%s%s\n", c->file,
		field_line(&c->lines[c->index], field),
		c->rule_name ? c->rule_name : "?", field ? field : "",
		field ? ": " : "", msg);
	c->errors++;
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

static int parse_port(const char *s, unsigned *port)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	v = strtoul(s, &end, 10);
	if (*end || v > 65535)
		return -EINVAL;
	*port = v;
	return 0;
}

static void check_ports(struct checker *c, const struct yaml_rule *y,
			struct sl_rule *r)
{
	char buf[32], *dash;
	unsigned lo, hi;

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
	if (parse_port(buf, &lo) || (dash && parse_port(dash + 1, &hi))) {
		bad(c, "ports", "'%s' is not a port (0-65535) or range (LOW-HIGH)",
		    y->ports);
		return;
	}
	if (!dash)
		hi = lo;
	if (lo > hi) {
		bad(c, "ports", "range %u-%u is empty: write LOW-HIGH", lo, hi);
		return;
	}
	r->port_min = lo;
	r->port_max = hi;
}

static void check_prefix(struct checker *c, const char *field,
			 const char *text, struct sl_addr *addr, __u8 *len)
{
	unsigned len128;
	int err;

	*len = 0;
	memset(addr, 0, sizeof(*addr));
	if (!text)
		return;
	err = sl_parse_prefix(text, addr, &len128);
	if (err == -EDOM)
		bad(c, field, "'%s' has host bits set; write the network address",
		    text);
	else if (err)
		bad(c, field, "'%s' is not an address or prefix (e.g. 192.0.2.0/24, 2001:db8::/32)",
		    text);
	else
		*len = len128;
}

/* The algorithm's own parameters; a parameter that does not apply to the
 * chosen algorithm is an error, not silently ignored.
 */
static void check_algorithm(struct checker *c, const struct yaml_rule *y,
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

	if (counter && !y->slices)
		slices = 1;	/* the two-window counter */
	r->slice_ms = r->window_ms;
	if (y->slices && !sliced)
		bad(c, "slices", "does not apply to %s (only sliding, sliding-plain and sliding-counter have slices)",
		    name);
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

	if (!bucket && y->bucket_capacity)
		bad(c, "bucket_capacity", "applies to token-bucket only");
	if (!bucket && y->refill_per_s)
		bad(c, "refill_per_s", "applies to token-bucket only");
	if (bucket) {
		double rate = 0;
		char *end;

		r->bucket_capacity = y->bucket_capacity ? *y->bucket_capacity :
							  r->limit;
		if (r->bucket_capacity < 1 || r->bucket_capacity > UINT32_MAX)
			bad(c, "bucket_capacity", "must be between 1 and %u",
			    UINT32_MAX);
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
		if (r->token_ns < 1 && !c->errors)
			bad(c, "refill_per_s", "refill faster than one unit per ns");
		else if (r->token_ns &&
			 r->bucket_capacity > SL_MAX_WINDOW_MS * 1000000ULL / r->token_ns)
			bad(c, "bucket_capacity", "a bucket must refill in at most 12d");
	}
	if (r->algorithm == SL_ALGO_SLIDING_LOG) {
		if (r->limit > SL_MAX_LOG)
			bad(c, "limit", "sliding-log keeps every accept: at most %u (%zu bytes per client per CPU); use sliding for larger limits",
			    SL_MAX_LOG, sizeof(struct sl_client_log));
		if (r->unit == SL_UNIT_BYTES)
			bad(c, "unit", "sliding-log counts requests, not bytes");
	}
}

static void check_rule(struct checker *c, const struct yaml_rule *y,
		       struct sl_rule_spec *spec)
{
	struct sl_rule *r = &spec->rule;
	uint64_t window_ms = 60000;
	unsigned slices = 12, i;

	memset(spec, 0, sizeof(*spec));
	spec->line = c->lines[c->index].start;
	c->rule_name = y->name;
	if (!valid_name(y->name))
		bad(c, "name", "use letters, digits, '-', '_' and '.' only");
	snprintf(r->name, sizeof(r->name), "%s", y->name);
	r->priority = y->priority ? *y->priority : c->index;
	r->protocol = y->protocol;
	r->unit = y->unit;
	r->algorithm = y->algorithm;
	r->action = y->action;
	r->continues = y->cont;
	check_ports(c, y, r);
	check_prefix(c, "source", y->source, &r->src, &r->src_prefixlen);
	check_prefix(c, "destination", y->destination, &r->dst,
		     &r->dst_prefixlen);

	if (y->limit < 1 || y->limit > UINT32_MAX)
		bad(c, "limit", "must be between 1 and %u units per window",
		    UINT32_MAX);
	r->limit = y->limit;
	if (y->window && sl_parse_duration_ms(y->window, &window_ms))
		bad(c, "window", "'%s' is not a duration (e.g. 60s, 500ms, 0.2s, 1m)",
		    y->window);
	else if (window_ms < 1 || window_ms > SL_MAX_WINDOW_MS)
		bad(c, "window", "must be between 1ms and 12d");
	if (y->slices)
		slices = *y->slices;
	r->window_ms = window_ms;
	check_algorithm(c, y, r, slices);
	if (r->unit == SL_UNIT_SYN && r->protocol != SL_PROTO_TCP &&
	    r->protocol != SL_PROTO_ANY)
		bad(c, "unit", "'syn' counts TCP connections; set protocol: tcp");

	r->key_ipv4_prefix = 32;
	r->key_ipv6_prefix = 64;
	if (y->key) {
		if (y->key->ipv4_prefix && *y->key->ipv4_prefix > 32)
			bad(c, "key", "ipv4_prefix must be 0..32");
		else if (y->key->ipv4_prefix)
			r->key_ipv4_prefix = *y->key->ipv4_prefix;
		if (y->key->ipv6_prefix && *y->key->ipv6_prefix > 128)
			bad(c, "key", "ipv6_prefix must be 0..128");
		else if (y->key->ipv6_prefix)
			r->key_ipv6_prefix = *y->key->ipv6_prefix;
		r->key_by_port = y->key->per_port;
	}

	if (y->exempt_count) {
		spec->exempt = calloc(y->exempt_count, sizeof(*spec->exempt));
		if (!spec->exempt) {
			bad(c, "exempt", "out of memory");
			return;
		}
	}
	for (i = 0; i < y->exempt_count; i++) {
		struct sl_prefix *p = &spec->exempt[spec->nr_exempt];
		__u8 len;

		check_prefix(c, "exempt", y->exempt[i], &p->addr, &len);
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

	for (i = 0; rs->specs && i < rs->nr; i++)
		free(rs->specs[i].exempt);
	free(rs->specs);
	rs->specs = NULL;
	rs->nr = 0;
}

int sl_rules_load_buffer(const char *name, const char *buf, size_t len,
			 struct sl_ruleset *rs)
{
	struct cyaml_log_buf log = { .len = 0 };
	const cyaml_config_t config = {
		.log_fn = collect_cyaml_log,
		.log_ctx = &log,
		.mem_fn = cyaml_mem,
		.log_level = CYAML_LOG_ERROR,
		.flags = CYAML_CFG_NO_ALIAS,
	};
	struct rule_lines *lines = NULL;
	struct yaml_file *file = NULL;
	struct checker c = { .file = name };
	unsigned i, j, total_exempt = 0;
	cyaml_err_t err;

	memset(rs, 0, sizeof(*rs));
	if (!len) {
		fprintf(stderr, "%s:1: empty rule file: expected 'rules:' with a list of rules\n",
			name);
		return -EINVAL;
	}
	err = cyaml_load_data((const uint8_t *)buf, len, &config, &file_schema,
			      (cyaml_data_t **)&file, NULL);
	if (err != CYAML_OK) {
		report_cyaml_error(name, cyaml_strerror(err), &log,
				   err == CYAML_ERR_LIBYAML_PARSER ?
				   yaml_syntax_error_line(buf, len) : 0);
		return -EINVAL;
	}

	if (!file) {
		/* white space or comments only: libcyaml loads no document */
		fprintf(stderr, "%s:1: empty rule file: expected 'rules:' with a list of rules\n",
			name);
		return -EINVAL;
	}
	lines = locate_rules(buf, len, file->rules_count);
	rs->specs = calloc(file->rules_count ? file->rules_count : 1,
			   sizeof(*rs->specs));
	if (!lines || !rs->specs) {
		err = CYAML_ERR_OOM;
		goto out;
	}
	c.lines = lines;
	for (i = 0; i < file->rules_count; i++) {
		c.index = i;
		check_rule(&c, &file->rules[i], &rs->specs[i]);
		rs->nr++;
		total_exempt += rs->specs[i].nr_exempt;
		for (j = 0; j < i; j++)
			if (!strcmp(file->rules[i].name, file->rules[j].name))
				bad(&c, "name", "duplicate of the rule on line %u",
				    lines[j].start);
	}
	if (total_exempt > 16384) {
		fprintf(stderr, "%s: %u exempt prefixes in all: at most 16384\n",
			name, total_exempt);
		c.errors++;
	}
	qsort(rs->specs, rs->nr, sizeof(*rs->specs), by_priority);
out:
	free(lines);
	cyaml_free(&config, &file_schema, file, 0);
	if (err == CYAML_ERR_OOM) {
		fprintf(stderr, "%s: out of memory\n", name);
		sl_rules_free(rs);
		return -ENOMEM;
	}
	if (c.errors) {
		sl_rules_free(rs);
		return -EINVAL;
	}
	return 0;
}

int sl_rules_load_file(const char *path, struct sl_ruleset *rs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	f = fopen(path, "r");
	if (!f) {
		err = -errno;
		fprintf(stderr, "%s: cannot read: %s\n", path, strerror(errno));
		return err;
	}
	/* cap: 100,000 rules would be far past SL_MAX_RULES anyway */
	buf = malloc(16 << 20);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	len = fread(buf, 1, 16 << 20, f);
	if (ferror(f) || !feof(f)) {
		fprintf(stderr, "%s: cannot read, or larger than 16 MiB\n", path);
		free(buf);
		fclose(f);
		return -EINVAL;
	}
	fclose(f);
	err = sl_rules_load_buffer(path, buf, len, rs);
	free(buf);
	return err;
}

/* ---- one rule from values already parsed (replay's flags) ---- */

int sl_parse_algorithm(const char *name, unsigned *algorithm)
{
	unsigned i;

	for (i = 0; i < ARRAY_SIZE(algorithm_strings); i++)
		if (!strcmp(name, algorithm_strings[i].str)) {
			*algorithm = algorithm_strings[i].val;
			return 0;
		}
	return -EINVAL;
}

int sl_rule_from_fields(const char *origin, const struct sl_rule_fields *f,
			struct sl_rule_spec *spec)
{
	/* the same checks as a rule of a file: through a yaml_rule, as
	 * libcyaml would have filled it
	 */
	struct yaml_rule y = {
		.name = (char *)f->name,
		.limit = f->limit,
		.window = (char *)f->window,
		.slices = (unsigned *)f->slices,
		.bucket_capacity = (uint64_t *)f->bucket_capacity,
		.refill_per_s = (char *)f->refill_per_s,
		.algorithm = f->algorithm,
	};
	struct rule_lines lines = { .start = 1 };
	struct checker c = { .file = origin, .lines = &lines };

	check_rule(&c, &y, spec);
	return c.errors ? -EINVAL : 0;
}
