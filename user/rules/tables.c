// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Compiling a rule set into the kernel's tables (see SL_MAX_RULES in
 * include/slicelimit.h) and switching to it.
 *
 * Each table has two generations. An apply writes every table of the idle
 * generation (the port classes, rules/port_classes.c; the prefix tables,
 * rules/prefix_tables.c; the rules), its config last, and then flips the
 * single word sl_active: a packet reads that word once and from then on
 * sees one generation only, never half old, half new. Rule ids and the
 * client states an apply forgets: rules/rule_ids.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "instance/lists.h"
#include "rules/bitmap.h"
#include "rules/port_classes.h"
#include "rules/prefix_tables.h"
#include "rules/rule_ids.h"
#include "rules/rules.h"

static int write_array(int fd, __u32 first_key, const void *values,
		       size_t value_size, __u32 count)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 *keys, i, n = count;
	int err = 0;

	if (!count)
		return 0;
	keys = calloc(count, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (i = 0; i < count; i++)
		keys[i] = first_key + i;
	if (bpf_map_update_batch(fd, keys, values, &n, &opts)) {
		/* older kernels: one update per element */
		for (i = 0; i < count && !err; i++)
			if (bpf_map_update_elem(fd, &keys[i],
						(const char *)values + i * value_size, 0))
				err = -errno;
	}
	free(keys);
	return err;
}

/* Every table of the idle generation GEN but its config, and the
 * zeroed stats of new rules; *cfg says which lookups it needs.
 */
static int write_generation(const struct sl_maps *m, __u32 gen,
			    const struct sl_rule *rules,
			    const struct sl_ruleset *rs, const bool *is_new,
			    struct sl_port_tables *pt, struct sl_config *cfg)
{
	__u32 i;
	int err;

	err = sl_port_tables_build(rules, rs->nr, pt);
	if (!err)
		err = write_array(m->port_classes, gen * SL_PORT_SLOTS,
				  pt->slot_class, sizeof(__u32), SL_PORT_SLOTS);
	if (!err)
		err = write_array(m->class_rules, gen * SL_MAX_CLASSES,
				  pt->classes, sizeof(struct sl_bitmap),
				  pt->nr_classes);
	if (!err)
		err = sl_prefix_tables_write(m, gen, rules, rs, cfg);
	if (!err && rs->nr)
		err = write_array(m->rules, gen * SL_MAX_RULES, rules,
				  sizeof(*rules), rs->nr);
	for (i = 0; !err && i < rs->nr; i++)
		if (is_new[i])
			err = sl_rule_stats_zero(m, rules[i].id);
	return err;
}

int sl_rules_apply(const struct sl_maps *m, const struct sl_ruleset *rs)
{
	return sl_rules_apply_counted(m, rs, NULL);
}

int sl_rules_apply_counted(const struct sl_maps *m,
			   const struct sl_ruleset *rs, __u64 *forgotten)
{
	struct sl_port_tables pt = {};
	struct sl_config live_cfg, cfg = {};
	struct sl_forget_set *fs;
	struct sl_rule *rules;
	bool *is_new;
	__u32 zero = 0, gen, i;
	__u64 none = 0;
	int err;

	if (!forgotten)
		forgotten = &none;
	*forgotten = 0;
	if (rs->nr > SL_MAX_RULES)
		return -E2BIG;
	rules = calloc(rs->nr + 1, sizeof(*rules));
	is_new = calloc(rs->nr + 1, sizeof(*is_new));
	fs = calloc(1, sizeof(*fs));
	pt.slot_class = calloc(SL_PORT_SLOTS, sizeof(*pt.slot_class));
	pt.classes = calloc(SL_MAX_CLASSES, sizeof(*pt.classes));
	if (!rules || !is_new || !fs || !pt.slot_class || !pt.classes) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < rs->nr; i++)
		rules[i] = rs->specs[i].rule;

	err = sl_rule_ids_assign(m, rules, rs->nr, fs, is_new);
	if (err)
		goto out;
	if (bpf_map_lookup_elem(m->active, &zero, &gen) ||
	    bpf_map_lookup_elem(m->config, &(__u32){ gen & 1 }, &live_cfg)) {
		err = -errno;
		goto out;
	}
	gen = !(gen & 1);	/* the idle generation */
	err = write_generation(m, gen, rules, rs, is_new, &pt, &cfg);
	if (!err)
		err = sl_rule_ids_forget(m, fs, forgotten);
	if (err)
		goto out;

	cfg.gen = gen;
	cfg.rules_epoch = live_cfg.rules_epoch + 1;
	cfg.nr_rules = rs->nr;
	for (i = 0; i < rs->nr; i++)
		sl_bitmap_set(&cfg.all_rules, i);
	/* the lists are not the rules': read from their maps, as late as
	 * can be, so that the switch keeps what they hold now
	 */
	sl_lists_config_lock();
	sl_config_lists(&cfg) = sl_lists_in_use(m);
	if (bpf_map_update_elem(m->config, &gen, &cfg, 0) ||
	    bpf_map_update_elem(m->active, &zero, &gen, 0)) {
		err = -errno;
		sl_lists_config_unlock();
		goto out;
	}
	sl_lists_config_unlock();
	fs->switched = true;
	err = sl_rule_ids_forget(m, fs, forgotten);
out:
	free(pt.classes);
	free(pt.slot_class);
	free(fs);
	free(is_new);
	free(rules);
	return err;
}
