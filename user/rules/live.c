// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The live generation: its config and its rules as the kernel runs them,
 * and opening the pinned instance to read them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "util/log.h"
#include "rules/rules.h"

static int read_config(const struct sl_maps *m, struct sl_config *cfg,
		       __u32 *gen)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->active, &zero, gen))
		return -errno;
	*gen &= 1;
	if (bpf_map_lookup_elem(m->config, gen, cfg))
		return -errno;
	return 0;
}

int sl_rules_read_config(const struct sl_maps *m, struct sl_config *cfg)
{
	__u32 gen;

	return read_config(m, cfg, &gen);
}

int sl_rules_read_live(const struct sl_maps *m, struct sl_rule **rules,
		       unsigned *nr, struct sl_config *cfg)
{
	__u32 gen, i, key;
	struct sl_rule *out;
	int err;

	err = read_config(m, cfg, &gen);
	if (err)
		return err;
	if (cfg->nr_rules > SL_MAX_RULES)
		return -EUCLEAN;
	out = calloc(cfg->nr_rules ? cfg->nr_rules : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (i = 0; i < cfg->nr_rules; i++) {
		key = gen * SL_MAX_RULES + i;
		if (bpf_map_lookup_elem(m->rules, &key, &out[i])) {
			free(out);
			return -errno;
		}
	}
	*rules = out;
	*nr = cfg->nr_rules;
	return 0;
}

int sl_open_live(struct sl_maps *m, struct sl_rule **rules, unsigned *nr,
		 struct sl_config *cfg)
{
	int err;

	if (sl_require_bpffs())
		return -ENODEV;
	err = sl_maps_open_pinned(m);
	if (err == -ENOENT) {
		pr_error("nothing loaded under %s (slicelimit attach DEV)", SL_PIN_DIR);
		return err;
	}
	if (err) {
		pr_error("cannot open the pins under %s: %s%s", SL_PIN_DIR,
			 strerror(-err), sl_privilege_hint(err));
		return err;
	}
	err = sl_rules_read_live(m, rules, nr, cfg);
	if (err) {
		pr_error("cannot read the running rules: %s", strerror(-err));
		sl_maps_close(m);
	}
	return err;
}
