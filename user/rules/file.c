// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Rule files: the YAML tree (util/yaml_doc.c) is read rule by rule into a
 * struct sl_rule_spec. Every problem of the file is collected, each at the
 * line and column of the value (or key) it is about, under the rule's name
 * and the field's; a file with any problem yields no rules.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/yaml_doc.h"
#include "rules/rule_check.h"

static const char *const rule_keys[] = {
	"name", "priority", "protocol", "ports", "source", "destination",
	"limit", "window", "slices", "bucket_capacity", "refill_per_s", "unit",
	"algorithm", "action", "key", "continue", "exempt",
	"api_key_is_address", "envoy", NULL,
};
static const char *const key_keys[] = {
	"ipv4_prefix", "ipv6_prefix", "per_port", NULL,
};


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
		sl_checker_bad(c, "name", "required: the rule's name");
	if ((v = sl_yaml_get(m, "priority")))
		y->has_priority = sl_yaml_uint(yc, v, "priority", 0, UINT32_MAX,
					       &y->priority);
	if ((v = sl_yaml_get(m, "limit")))
		sl_yaml_uint(yc, v, "limit", 1, UINT32_MAX, &y->limit);
	else
		sl_checker_bad(c, "limit", "required: units per window, 1 to %u", UINT32_MAX);
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
			sl_checker_bad(c, "exempt", "expected a list of prefixes ([10.1.0.0/16, 2001:db8::1])");
	}
	y->envoy = sl_yaml_get(m, "envoy");
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
		sl_rule_check(&c, &y, &rs->specs[i]);
		if (pb->total == c.before)
			sl_rule_warnings(&c, &rs->specs[i].rule, rs);
		rs->nr++;
		total_exempt += rs->specs[i].nr_exempt;
		for (j = 0; y.name && j < i; j++)
			if (!strcmp(rs->specs[i].rule.name, rs->specs[j].rule.name))
				sl_checker_bad(&c, "name", "duplicate of the rule on line %u",
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
	sl_rules_shadow_warnings(rs, name);
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
