/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside rules/: one rule of a file as read (struct rule_in) and the
 * checker that turns it into a struct sl_rule_spec, shared by the file's
 * reader (file.c), the checks (check.c) and the warnings (warnings.c).
 */
#ifndef SL_RULES_RULE_CHECK_H
#define SL_RULES_RULE_CHECK_H

#include "rules/rules.h"

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

/* The node a problem of FIELD ("ports", "key.ipv4_prefix") is about: its
 * value, else the rule itself (a field that is missing).
 */
const struct sl_ynode *sl_checker_locate(const struct checker *c,
					 const char *field);
/* A problem of the rule at FIELD, counted in the file's problems. */
void sl_checker_bad(struct checker *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The rule Y was read into, checked across its fields into SPEC; every
 * problem goes to c's list.
 */
void sl_rule_check(struct checker *c, const struct rule_in *y,
		   struct sl_rule_spec *spec);

/* The warnings of one valid rule R (a full-size frame never passing,
 * ports that do not apply), into rs->warnings.
 */
void sl_rule_warnings(struct checker *c, const struct sl_rule *r,
		      struct sl_ruleset *rs);
/* The rules of RS (valid, in priority order) that can never match,
 * each an earlier rule's shadow, into rs->warnings.
 */
void sl_rules_shadow_warnings(struct sl_ruleset *rs, const char *file);

#endif /* SL_RULES_RULE_CHECK_H */
