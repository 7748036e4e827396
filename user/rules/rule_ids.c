// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Rule ids across an apply (rules/rule_ids.h): which live rule each new
 * one continues, and the client states of the rest.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "state/client_keys.h"
#include "instance/lists.h"
#include "rules/bitmap.h"
#include "rules/map_delete.h"
#include "rules/rule_ids.h"

bool sl_rule_rekeys(const struct sl_rule *next, const struct sl_rule *live)
{
	return next->key_ipv4_prefix != live->key_ipv4_prefix ||
	       next->key_ipv6_prefix != live->key_ipv6_prefix ||
	       next->key_by_port != live->key_by_port;
}

static void forget_rekeyed(struct sl_forget_set *fs, const struct sl_rule *next,
			   const struct sl_rule *live)
{
	__u32 id = live->id % SL_MAX_RULES;

	sl_bitmap_set(&fs->rekeyed, id);
	fs->next[id] = *next;
	fs->live[id] = *live;
}

bool sl_forget_set_forgets(const struct sl_forget_set *fs,
			   const struct sl_client_key *key)
{
	__u32 id = key->rule_id % SL_MAX_RULES;

	return sl_bitmap_test(&fs->removed, id) ||
	       (sl_bitmap_test(&fs->rekeyed, id) &&
		!sl_client_key_survives(&fs->next[id], &fs->live[id], key));
}

/* The pass fs->switched says of the two: before the switch, no state of
 * a removed rule (the old rules still count them) and every state keyed
 * the old way; after it, the removed rules' states and what the old rule
 * keyed meanwhile that the new one cannot reach.
 */
static bool client_forgotten(const void *key, const void *arg)
{
	const struct sl_client_key *k = key;
	const struct sl_forget_set *fs = arg;
	__u32 id = k->rule_id % SL_MAX_RULES;

	if (!sl_forget_set_forgets(fs, k))
		return false;
	if (sl_bitmap_test(&fs->removed, id))
		return fs->switched;
	return !fs->switched || !sl_client_key_reachable(&fs->next[id], k);
}

void sl_rule_ids_match(struct sl_rule *rules, unsigned nr,
		       const struct sl_rule *live, unsigned nr_live,
		       struct sl_forget_set *fs, bool *is_new)
{
	struct sl_bitmap *removed = &fs->removed;
	unsigned i, j;

	memset(removed, 0, sizeof(*removed));
	for (j = 0; j < nr_live; j++)
		sl_bitmap_set(removed, live[j].id % SL_MAX_RULES);
	for (i = 0; i < nr; i++) {
		is_new[i] = true;
		for (j = 0; j < nr_live; j++) {
			/* a new algorithm reads the state differently:
			 * such a rule starts afresh under a new id
			 */
			if (strcmp(rules[i].name, live[j].name) ||
			    rules[i].algorithm != live[j].algorithm)
				continue;
			rules[i].id = live[j].id;
			sl_bitmap_clear(removed, rules[i].id);
			if (sl_rule_rekeys(&rules[i], &live[j]))
				forget_rekeyed(fs, &rules[i], &live[j]);
			is_new[i] = false;
			break;
		}
	}
}

int sl_rule_ids_assign(const struct sl_maps *m, struct sl_rule *rules,
		       unsigned nr, struct sl_forget_set *fs, bool *is_new)
{
	struct sl_rule *live = NULL;
	struct sl_config cfg;
	struct sl_bitmap taken = {};
	unsigned nr_live = 0, i, j, next = 0;
	int err;

	err = sl_rules_read_live(m, &live, &nr_live, &cfg);
	if (err)
		return err;
	for (j = 0; j < nr_live; j++)
		sl_bitmap_set(&taken, live[j].id % SL_MAX_RULES);
	sl_rule_ids_match(rules, nr, live, nr_live, fs, is_new);
	for (i = 0; i < nr; i++) {
		if (!is_new[i])
			continue;
		while (next < SL_MAX_RULES && sl_bitmap_test(&taken, next))
			next++;
		if (next >= SL_MAX_RULES) {
			free(live);
			return -ENOSPC;
		}
		rules[i].id = next;
		sl_bitmap_set(&taken, next);
	}
	free(live);
	return 0;
}

int sl_rule_stats_zero(const struct sl_maps *m, __u32 id)
{
	void *zeros = calloc(m->nr_cpus, sizeof(struct sl_rule_stats));
	int err = 0;

	if (!zeros)
		return -ENOMEM;
	if (bpf_map_update_elem(m->rule_stats, &id, zeros, 0))
		err = -errno;
	free(zeros);
	return err;
}

static int forget_clients_in(int fd, const struct sl_forget_set *fs,
			     __u64 *deleted)
{
	return sl_map_delete_where(fd, sizeof(struct sl_client_key),
				   client_forgotten, fs, deleted);
}

int sl_rule_ids_forget(const struct sl_maps *m, const struct sl_forget_set *fs,
		       __u64 *forgotten)
{
	int err = 0;
	__u32 id;

	if ((!fs->switched || sl_bitmap_empty(&fs->removed)) &&
	    sl_bitmap_empty(&fs->rekeyed))
		return 0;
	/* and their counters, so a dump never shows a gone rule's numbers */
	for (id = 0; fs->switched && id < SL_MAX_RULES && !err; id++)
		if (sl_bitmap_test(&fs->removed, id))
			err = sl_rule_stats_zero(m, id);
	if (!err)
		err = forget_clients_in(m->clients, fs, forgotten);
	if (!err)
		err = forget_clients_in(m->clients_plain, fs, forgotten);
	if (!err)
		err = forget_clients_in(m->clients_log, fs, forgotten);
	/* peers' counts too: a reused id must not inherit them */
	if (!err && m->peer_view >= 0)
		err = forget_clients_in(m->peer_view, fs, NULL);
	/* and the keys on probation, which a reused id would find */
	if (!err)
		err = sl_newcomers_forget(m);
	return err;
}
