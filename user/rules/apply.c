// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Rules and the pinned instance: applying a rule set to it (what the
 * service does at start and on SIGHUP, and `rules apply`), and reading
 * its live rules again only when an apply has happened since.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "instance/loader.h"
#include "util/log.h"
#include "rules/rules.h"

int sl_rules_apply_pinned(const char *path, const struct sl_ruleset *rs,
			  const struct sl_load_opts *opts, bool *loaded,
			  struct sl_maps *m)
{
	return sl_rules_apply_pinned_counted(path, rs, opts, loaded, m, NULL);
}

int sl_rules_apply_open(const char *path, const struct sl_ruleset *rs,
			const struct sl_maps *m, __u64 *forgotten)
{
	struct sl_config cfg;
	__u32 before;
	int err;

	before = sl_rules_read_config(m, &cfg) ? 0 : cfg.rules_epoch;
	err = sl_rules_apply_counted(m, rs, forgotten);
	if (!err)
		return 0;
	/* the switch is the apply's middle step: past it, the new rules
	 * run, and only the removed rules' clients are left over
	 */
	if (!sl_rules_read_config(m, &cfg) && cfg.rules_epoch != before)
		pr_error("%s: applied (epoch %u), but the clients of the removed or rekeyed rules could not all be forgotten: %s",
			 path, cfg.rules_epoch, strerror(-err));
	else
		pr_error("%s: cannot apply: %s; the running rules are unchanged",
			 path, strerror(-err));
	return err;
}

int sl_rules_apply_pinned_counted(const char *path,
				  const struct sl_ruleset *rs,
				  const struct sl_load_opts *opts, bool *loaded,
				  struct sl_maps *m, __u64 *forgotten)
{
	int xdp_fd, tc_fd, err;

	*loaded = false;
	if (opts) {
		err = sl_load_pinned(opts, &xdp_fd, &tc_fd, loaded);
		if (err)
			return err;
		close(xdp_fd);
		close(tc_fd);
	}
	err = sl_maps_open_pinned(m);
	if (err) {
		pr_error("cannot open the maps under %s: %s", SL_PIN_DIR,
			 strerror(-err));
		goto err_unpin;
	}
	err = sl_rules_apply_open(path, rs, m, forgotten);
	if (err)
		goto err_maps;
	return 0;

err_maps:
	sl_maps_close(m);
err_unpin:
	/* what this call loaded goes with it; an instance found stays */
	if (*loaded)
		sl_unpin_if_unused();
	*loaded = false;
	return err;
}

int sl_rules_reread(const struct sl_maps *m, bool force, __u32 *epoch,
		    struct sl_rule **rules, unsigned *nr, struct sl_config *cfg)
{
	int err;

	if (!force) {
		err = sl_rules_read_config(m, cfg);
		if (err)
			return err;
		if (cfg->rules_epoch == *epoch)
			return 0;
	}
	err = sl_rules_read_live(m, rules, nr, cfg);
	if (err)
		return err;
	*epoch = cfg->rules_epoch;
	return 1;
}
