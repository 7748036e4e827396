/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The prefix tables of one generation: the rules of each source,
 * destination and exempt prefix, for the kernel's longest-prefix match.
 */
#ifndef SL_RULES_PREFIX_TABLES_H
#define SL_RULES_PREFIX_TABLES_H

#include "rules/rules.h"

/* Replace generation GEN's source, destination and exempt entries with
 * those of RULES (RS's, ids assigned); cfg->has_src, has_dst and
 * has_exempt say which of the three the kernel needs to look up.
 * 0 or -errno.
 */
int sl_prefix_tables_write(const struct sl_maps *m, __u32 gen,
			   const struct sl_rule *rules,
			   const struct sl_ruleset *rs, struct sl_config *cfg);

#endif /* SL_RULES_PREFIX_TABLES_H */
