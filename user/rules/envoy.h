/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A rule's `envoy:` block: which calls of Envoy's rate limit service the
 * rule answers (a domain and a descriptor's entries) and which entry's
 * value is the client. Read and checked with the rule file; matched
 * against each descriptor of a call (service/rls.c).
 */
#ifndef SL_RULES_ENVOY_H
#define SL_RULES_ENVOY_H

#include <stdbool.h>
#include <stddef.h>
#include "util/yaml_doc.h"

#define SL_ENVOY_MAX_ENTRIES	8
#define SL_ENVOY_DOMAIN_MAX	127
#define SL_ENVOY_KEY_MAX	63
/* the check API's longest key: a value matched or used as the client */
#define SL_ENVOY_VALUE_MAX	256

struct sl_envoy_entry {
	char key[SL_ENVOY_KEY_MAX + 1];
	char value[SL_ENVOY_VALUE_MAX + 1];
	bool has_value;		/* false: any value matches */
};

struct sl_envoy_match {
	char domain[SL_ENVOY_DOMAIN_MAX + 1];
	struct sl_envoy_entry entries[SL_ENVOY_MAX_ENTRIES];
	unsigned nr_entries;
	unsigned client_entry;	/* the entry whose value is the client */
};

/* The block N of a rule into *out (malloc'd; NULL and problems in C's
 * list when it is not valid). 0, or -ENOMEM.
 */
int sl_envoy_read(const struct sl_yctx *c, const struct sl_ynode *n,
		  struct sl_envoy_match **out);

/* Does a descriptor of DOMAIN with these NR entries (KEYS[i], VALUES[i])
 * meet M? The same keys in the same order, each value equal where M
 * gives one.
 */
bool sl_envoy_matches(const struct sl_envoy_match *m, const char *domain,
		      const char *const *keys, const char *const *values,
		      size_t nr);

#endif /* SL_RULES_ENVOY_H */
