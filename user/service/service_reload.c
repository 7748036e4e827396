// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * SIGHUP: the config and its rule file re-read and checked before
 * anything changes; a bad file is reported (and counted in the state)
 * and the running config and rules kept. Before the drop to the
 * service's user a reload also attaches and detaches devices; after it,
 * the rules go through the maps the service kept open.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/clock.h"
#include "instance/loader.h"
#include "util/log.h"
#include "service/rls.h"
#include "service/service_run.h"

void sl_run_refused(struct sl_service_state *st, const char *file,
		    const char *error)
{
	st->reloads_refused++;
	st->last_refused_ms = sl_now_tai_ms();
	/* cut to the record's fields, as status shows them */
	snprintf(st->last_refused_file, sizeof(st->last_refused_file), "%.*s",
		 (int)sizeof(st->last_refused_file) - 1, file);
	snprintf(st->last_refused_error, sizeof(st->last_refused_error), "%.*s",
		 (int)sizeof(st->last_refused_error) - 1, error);
	sl_service_state_publish_or_warn(st);
}

/* The rule file in the state, as a full path when it resolves, and in
 * the log with how many rules it holds.
 */
void sl_run_rules_applied(struct sl_service_state *st, const char *path,
			  unsigned nr)
{
	char full[PATH_MAX];

	if (!realpath(path, full) || strlen(full) >= sizeof(st->rules))
		snprintf(full, sizeof(full), "%s", path);
	memset(st->rules, 0, sizeof(st->rules));
	memcpy(st->rules, full, strnlen(full, sizeof(st->rules) - 1));
	pr_notice("%s: applied %u rule%s", path, nr, nr == 1 ? "" : "s");
}

__u32 sl_run_applied_epoch(const struct sl_maps *m)
{
	struct sl_config c;

	return sl_rules_read_config(m, &c) ? 0 : c.rules_epoch;
}

static bool config_has_device(const struct sl_service_config *cfg,
			      const char *name)
{
	unsigned i;

	for (i = 0; i < cfg->nr_devices; i++)
		if (!strcmp(cfg->devices[i].name, name))
			return true;
	return false;
}

static bool same_devices(const struct sl_service_config *a,
			 const struct sl_service_config *b)
{
	unsigned i;

	if (a->nr_devices != b->nr_devices)
		return false;
	for (i = 0; i < a->nr_devices; i++)
		if (strcmp(a->devices[i].name, b->devices[i].name) ||
		    a->devices[i].mode != b->devices[i].mode)
			return false;
	return true;
}

/* A reload's first half, before or after the drop alike: the config and
 * its rule file read and checked (a refusal recorded in st), and a word
 * for each setting that only a start changes. 0, or -EINVAL with
 * nothing to apply.
 */
static int reload_read(const char *path, const struct sl_service_config *cfg,
		       struct sl_service_state *st,
		       struct sl_service_config *next, struct sl_ruleset *rs)
{
	if (sl_config_load(path, next)) {
		pr_error("%s: not valid; keeping the running config and rules", path);
		sl_run_refused(st, path, "not valid");
		return -EINVAL;
	}
	if (sl_rules_load_file(next->rules_path, rs)) {
		pr_error("%s: not valid; keeping the running rules", next->rules_path);
		sl_run_refused(st, next->rules_path, "not valid");
		return -EINVAL;
	}
	if (memcmp(&next->http, &cfg->http, sizeof(next->http)))
		pr_warn("http changed: takes effect at the next start");
	if (memcmp(&next->rls, &cfg->rls, sizeof(next->rls)))
		pr_warn("rls changed: its listeners change at the next start (its rules' envoy: blocks at this reload)");
	if (memcmp(&next->sync, &cfg->sync, sizeof(next->sync)))
		pr_warn("sync changed: takes effect at the next start");
	if (next->clients != cfg->clients)
		pr_warn("clients changed: takes effect at the next start that creates the client table (after a stop without keep_attached)");
	if (strcmp(next->service_user, cfg->service_user))
		pr_warn("service.user changed: takes effect at the next start");
	return 0;
}

/* A reload's last step, once its rules are applied: next becomes the
 * running config, but for the listener and the sync, which only a start
 * changes, and what the service manages is its config's again.
 */
static void reload_done(const char *path, struct sl_run *r,
			struct sl_service_config *next,
			const struct sl_ruleset *rs)
{
	/* the rules run: the rate limit service answers by theirs */
	if (r->rls && sl_rls_set_rules(r->rls, rs))
		pr_error("rls: out of memory: answering by the rules before this reload");
	next->sync = r->cfg.sync;
	next->http = r->cfg.http;
	next->rls = r->cfg.rls;
	r->cfg = *next;
	r->st.reloads_applied++;
	r->st.changed_ms = 0;
	r->st.changed[0] = '\0';
	sl_service_state_publish_or_warn(&r->st);
	pr_notice("%s: reloaded", path);
}

/* A reload after the drop: attaching and detaching need root, which the
 * service gave up once it attached; the rules go through the maps it
 * kept open (the pins' directory is root's).
 */
static void reload_dropped(const char *path, struct sl_run *r)
{
	struct sl_service_config next;
	struct sl_ruleset rs;

	if (reload_read(path, &r->cfg, &r->st, &next, &rs))
		return;
	if (!same_devices(&next, &r->cfg))
		pr_warn("devices changed: take effect at the next start (the service gave up root once it attached)");
	if (next.keep_attached != r->cfg.keep_attached)
		pr_warn("keep_attached changed: takes effect at the next start");
	if (sl_rules_apply_open(next.rules_path, &rs, &r->m, NULL)) {
		sl_run_refused(&r->st, next.rules_path, "cannot apply");
		goto out;
	}
	r->epoch = sl_run_applied_epoch(&r->m);
	sl_run_rules_applied(&r->st, next.rules_path, rs.nr);
	/* and the devices stay as they are, without root */
	memcpy(next.devices, r->cfg.devices, sizeof(next.devices));
	next.nr_devices = r->cfg.nr_devices;
	next.keep_attached = r->cfg.keep_attached;
	reload_done(path, r, &next, &rs);
out:
	sl_rules_free(&rs);
}

/* A reload as root: the devices the new config adds are attached before
 * its rules apply, those it no longer names detached once they run.
 */
static void reload_as_root(const char *path, struct sl_run *r)
{
	struct sl_service_config next;
	struct sl_service_state before;
	struct sl_ruleset rs;
	struct sl_maps m;
	unsigned i;
	bool loaded;

	if (reload_read(path, &r->cfg, &r->st, &next, &rs))
		return;
	before = r->st;
	if (sl_run_attach_devices(&next, &r->st)) {
		pr_error("attaching the new devices failed; keeping the running rules");
		sl_run_refused(&r->st, path, "cannot attach the new devices");
		goto out;
	}
	/* the pins are there: the devices hold them */
	if (sl_rules_apply_pinned(next.rules_path, &rs, NULL, &loaded, &m)) {
		sl_run_put_back_devices(&r->st, &before);
		sl_run_refused(&r->st, next.rules_path, "cannot apply");
		goto out;
	}
	r->epoch = sl_run_applied_epoch(&m);
	sl_maps_close(&m);
	sl_run_rules_applied(&r->st, next.rules_path, rs.nr);
	for (i = 0; i < r->cfg.nr_devices; i++) {
		if (config_has_device(&next, r->cfg.devices[i].name))
			continue;
		if (!sl_detach(r->cfg.devices[i].name))
			pr_notice("%s: detached (not in %s any more)",
				  r->cfg.devices[i].name, path);
	}
	reload_done(path, r, &next, &rs);
out:
	sl_rules_free(&rs);
}

void sl_run_reload(const char *path, struct sl_run *r)
{
	if (r->monitor_fd >= 0)
		reload_dropped(path, r);
	else
		reload_as_root(path, r);
	r->missing = 0;
}
