// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `slicelimit run --config FILE`: the service. It attaches the configured
 * devices, applies the rules, serves the HTTP API, and runs until SIGTERM
 * or SIGINT. SIGHUP re-reads the config and the rules; a bad file is
 * reported and the running state kept. Everything the kernel needs is
 * pinned, so a service killed with -9 leaves the programs enforcing, and
 * the next start adopts the pinned state rather than attaching twice.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core/build_id.h"
#include "service/check_local.h"
#include "core/log.h"
#include "core/clock.h"
#include "service/config.h"
#include "service/http.h"
#include "core/loader.h"
#include "core/instance_maps.h"
#include "rules/rules.h"
#include "service/service.h"
#include "service/state.h"
#include "sync/thread.h"

/* Attach what the config names and is not attached yet, and note in st
 * how this run holds each device. One it holds already keeps how it came:
 * a reload must not turn "attached" into "adopted".
 */
static int attach_devices(const struct sl_service_config *cfg,
			  struct sl_service_state *st)
{
	struct sl_service_device held[SL_MAX_DEVICES] = {};
	struct sl_load_opts lo = { .clients = cfg->clients };
	enum sl_service_how how;
	unsigned i;
	int err;

	for (i = 0; i < cfg->nr_devices; i++) {
		const struct sl_config_device *d = &cfg->devices[i];

		how = sl_service_device_how(st, d->name);
		if (sl_is_attached(d->name)) {
			if (how == SL_SERVICE_NONE) {
				how = SL_SERVICE_ADOPTED;
				pr_info("%s: already attached: adopted", d->name);
			}
		} else {
			err = sl_attach(d->name, d->mode, &lo);
			if (err)
				return err;
			how = SL_SERVICE_ATTACHED;
			pr_info("%s: attached (%s)", d->name, sl_mode_name(d->mode));
		}
		snprintf(held[i].name, sizeof(held[i].name), "%s", d->name);
		held[i].how = how;
	}
	memcpy(st->dev, held, sizeof(held));
	st->nr_devices = cfg->nr_devices;
	return 0;
}

/* For status and /metrics; the service runs on without it. */
static void publish(const struct sl_service_state *st)
{
	int err = sl_service_state_publish(st);

	if (err)
		pr_warn("cannot pin the service state as %s: %s", SL_SERVICE_PIN,
			strerror(-err));
}

static void refused(struct sl_service_state *st, const char *file,
		    const char *error)
{
	st->reloads_refused++;
	st->last_refused_ms = sl_now_tai_ms();
	snprintf(st->last_refused_file, sizeof(st->last_refused_file), "%s", file);
	snprintf(st->last_refused_error, sizeof(st->last_refused_error), "%s", error);
	publish(st);
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

static int apply_rules_file(const char *path)
{
	struct sl_ruleset rs;
	struct sl_maps m;
	int err;

	err = sl_rules_load_file(path, &rs);
	if (err)
		return err;
	err = sl_maps_open_pinned(&m);
	if (!err) {
		err = sl_rules_apply(&m, &rs);
		sl_maps_close(&m);
	}
	if (!err)
		pr_notice("%s: applied %u rules", path, rs.nr);
	sl_rules_free(&rs);
	return err;
}

/* SIGHUP: everything new is checked before anything changes. */
static void reload(const char *path, struct sl_service_config *cfg,
		   struct sl_service_state *st)
{
	struct sl_service_config next;
	struct sl_ruleset rs;
	unsigned i;

	if (sl_config_load(path, &next)) {
		pr_error("%s: not valid; keeping the running config and rules", path);
		refused(st, path, "not valid");
		return;
	}
	if (sl_rules_load_file(next.rules_path, &rs)) {
		pr_error("%s: not valid; keeping the running rules", next.rules_path);
		refused(st, next.rules_path, "not valid");
		return;
	}
	sl_rules_free(&rs);
	if (strcmp(next.http_listen, cfg->http_listen))
		pr_warn("http.listen changed: takes effect at the next start");
	if (memcmp(&next.sync, &cfg->sync, sizeof(next.sync)))
		pr_warn("sync changed: takes effect at the next start");
	if (attach_devices(&next, st)) {
		pr_error("attaching the new devices failed; keeping the running rules");
		refused(st, path, "cannot attach the new devices");
		return;
	}
	for (i = 0; i < cfg->nr_devices; i++)
		if (!config_has_device(&next, cfg->devices[i].name))
			sl_detach(cfg->devices[i].name);
	if (apply_rules_file(next.rules_path)) {
		pr_error("%s: cannot apply; the running rules are unchanged",
			 next.rules_path);
		refused(st, next.rules_path, "cannot apply");
		return;
	}
	/* keep the listener and the sync we have */
	next.sync = cfg->sync;
	memcpy(next.http_listen, cfg->http_listen, sizeof(next.http_listen));
	next.http_addr = cfg->http_addr;
	next.http_enabled = cfg->http_enabled;
	*cfg = next;
	st->reloads_applied++;
	publish(st);
	pr_notice("%s: reloaded", path);
}

int sl_service_run(const char *path)
{
	struct sl_service_config cfg;
	struct sl_service_state st = {};
	struct sl_checker checker;
	struct sl_central *central = NULL;
	struct sl_http *http = NULL;
	struct sl_sync_service *sync = NULL;
	struct sl_build_rec build;
	struct sl_ruleset rs;
	struct sl_maps m;
	sigset_t sigs;
	int xdp_fd, tc_fd, check_fd = -1, sig, err;
	unsigned i;

	/* blocked before any thread starts, so that all of them inherit it
	 * and the signals reach sigwait() below
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	/* a peer or Redis gone mid-write must not end the service */
	signal(SIGPIPE, SIG_IGN);
	if (sl_config_load(path, &cfg))
		return -EINVAL;
	/* check the rules before touching anything */
	if (sl_rules_load_file(cfg.rules_path, &rs))
		return -EINVAL;
	sl_rules_free(&rs);

	/* pins of another build (an upgraded package): this build's
	 * programs in their place, on the maps that still fit
	 */
	err = sl_upgrade_pinned(&(struct sl_load_opts){ .clients = cfg.clients },
				&build);
	if (err)
		return err;
	err = sl_load_pinned(&(struct sl_load_opts){ .clients = cfg.clients },
			     &xdp_fd, &tc_fd);
	if (err)
		return err;
	close(xdp_fd);
	close(tc_fd);
	/* rules first: the program never runs on a device without them */
	err = apply_rules_file(cfg.rules_path);
	if (!err)
		err = attach_devices(&cfg, &st);
	if (err)
		return err;

	err = sl_maps_open_pinned(&m);
	if (err)
		return err;
	check_fd = sl_open_check_prog();
	if (check_fd < 0 || sl_checker_init(&checker, check_fd, &m)) {
		pr_error("cannot open the check program under %s", SL_PIN_DIR);
		sl_maps_close(&m);
		return check_fd < 0 ? check_fd : -EIO;
	}
	if (cfg.sync.enabled && cfg.sync.check_central) {
		/* connects at the first check: a store that is down at start
		 * is an outage like any other (checks fail open)
		 */
		central = sl_central_new(cfg.sync.url, cfg.sync.interval_ms);
		if (!central) {
			err = -EINVAL;
			goto out;
		}
		if (cfg.sync.auth &&
		    sl_central_set_auth(central, cfg.sync.username,
					cfg.sync.password)) {
			pr_error("check: out of memory");
			err = -ENOMEM;
			goto out;
		}
		sl_checker_set_central(&checker, central);
		pr_notice("check: /v1/check decided in redis at %s (layout central); packets as delayed-sync",
			  cfg.sync.url);
	}
	/* before the API answers: whoever sees it up sees this run's state */
	st.pid = getpid();
	st.check_central = central != NULL;
	st.started_ms = sl_now_tai_ms();
	publish(&st);
	if (cfg.http_enabled) {
		http = sl_http_start(&cfg.http_addr, &checker);
		if (!http) {
			pr_error("http: cannot listen on %s (in use? a privileged port?)",
				 cfg.http_listen);
			err = -EADDRINUSE;
			goto out;
		}
		pr_notice("http: listening on %s", cfg.http_listen);
	}

	if (cfg.sync.enabled)
		sync = sl_sync_service_start(&cfg.sync, &m);
	if (!sync) {
		/* decide alone: no sync configured, pinned maps from a run
		 * with sync, or sync that cannot start (its error is above).
		 * Peers failing must not take the limiter down (NFR-3).
		 */
		bpf_map_update_elem(m.sync, &(__u32){ 0 },
				    &(struct sl_sync_conf){ 0 }, BPF_ANY);
		if (cfg.sync.enabled)
			pr_warn("sync: not running; this node decides on its own counts");
	}

	pr_notice("running (pid %d): SIGHUP reloads, SIGTERM stops", getpid());
	while (!sigwait(&sigs, &sig) && sig == SIGHUP)
		reload(path, &cfg, &st);
	pr_notice("stopping on signal %d", sig);
out:
	sl_sync_service_stop(sync);
	sl_http_stop(http);
	sl_checker_fini(&checker);
	sl_central_free(central);
	close(check_fd);
	sl_maps_close(&m);
	/* no service holds the devices from here on */
	sl_service_state_unpin();
	if (!cfg.keep_attached) {
		for (i = 0; i < cfg.nr_devices; i++)
			sl_detach(cfg.devices[i].name);
		sl_unpin_if_unused();
	} else {
		pr_warn("keep_attached: the programs stay attached and enforcing");
	}
	return err;
}
