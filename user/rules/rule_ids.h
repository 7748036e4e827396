/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Rule ids across an apply: a rule that stays keeps its id (its counters
 * and client states), a new rule gets an id no live rule holds, and the
 * client states no rule will read again are forgotten. sl_rules_apply
 * does all three; `rules apply --dry-run` tells what it would do.
 */
#ifndef SL_RULES_RULE_IDS_H
#define SL_RULES_RULE_IDS_H

#include "rules/rules.h"

struct sl_client_key;

/* The client states an apply forgets: every state of a removed rule, and
 * of a kept rule whose client key changed shape, the states keyed the old
 * way (sl_client_key_survives: never read again, or read as another
 * client's). Those go in two passes around the switch: before it, every
 * state keyed the old way; after it, what the old rule keyed meanwhile
 * that the new one cannot reach (a key it can reach may be a new
 * client's own by then).
 */
struct sl_forget_set {
	struct sl_bitmap removed;
	struct sl_bitmap rekeyed;
	struct sl_rule next[SL_MAX_RULES];	/* by id, when rekeyed */
	struct sl_rule live[SL_MAX_RULES];
	bool switched;		/* the new rules run: the second pass */
};

/* Match RULES (NR of them, in priority order) against the LIVE ones: a
 * rule of a live rule's name and algorithm takes its id (is_new[i] false),
 * the others are new (is_new[i] true, their id untouched). Sets
 * fs->removed, the live ids no rule took, and in FS the kept rules whose
 * client key changes shape. What `rules apply --dry-run` reports too.
 */
void sl_rule_ids_match(struct sl_rule *rules, unsigned nr,
		       const struct sl_rule *live, unsigned nr_live,
		       struct sl_forget_set *fs, bool *is_new);

/* Would an apply that FS describes forget the client state KEY, in one
 * pass or the other: every state of a removed rule, and those of a
 * rekeyed rule that its new key never makes.
 */
bool sl_forget_set_forgets(const struct sl_forget_set *fs,
			   const struct sl_client_key *key);

/* Keep the id of every rule whose name (and algorithm) is still there;
 * give new rules ids that no live rule holds, so no new rule inherits
 * live client state. Sets fs->removed (the ids of removed rules), the
 * kept rules whose client key changes shape in FS, and is_new[i].
 * 0 or -errno (-ENOSPC: no id left).
 */
int sl_rule_ids_assign(const struct sl_maps *m, struct sl_rule *rules,
		       unsigned nr, struct sl_forget_set *fs, bool *is_new);

/* Forget the client state of rules that are gone, so that their ids can be
 * reused later without inheriting counts, and the states of a rekeyed
 * rule keyed the old way (one pass of the two: fs->switched). *forgotten
 * counts the client states (not the peers' parts of them).
 */
int sl_rule_ids_forget(const struct sl_maps *m, const struct sl_forget_set *fs,
		       __u64 *forgotten);

/* Rule ID's counters set to zero on every CPU. 0 or -errno. */
int sl_rule_stats_zero(const struct sl_maps *m, __u32 id);

#endif /* SL_RULES_RULE_IDS_H */
