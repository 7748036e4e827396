// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `slicelimit run --config FILE`: the service. It attaches the configured
 * devices, applies the rules, serves the HTTP API, and runs until SIGTERM
 * or SIGINT. SIGHUP re-reads the config and the rules; a bad file is
 * reported and the running state kept. Everything the kernel needs is
 * pinned, so a service killed with -9 leaves the programs enforcing, and
 * the next start adopts the pinned state rather than attaching twice.
 */
#define _GNU_SOURCE	/* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include "instance/build_id.h"
#include "service/check.h"
#include "instance/lists.h"
#include "util/log.h"
#include "util/clock.h"
#include "service/config.h"
#include "service/http.h"
#include "instance/loader.h"
#include "instance/instance_maps.h"
#include "instance/pin_lock.h"
#include "rules/rules.h"
#include "service/privdrop.h"
#include "service/rls.h"
#include "service/service.h"
#include "service/state.h"
#include "service/sync_watch.h"
#include "sync/health.h"
#include "sync/thread.h"
#include "sync/wire.h"

_Static_assert(SL_WIRE_KEY == SL_CENTRAL_SECRET, "the sync key keys the central ids");

/* Attach what the config names and is not attached yet, and note in st
 * how this run holds each device. One it holds already keeps how it came:
 * a reload must not turn "attached" into "adopted". A failure detaches
 * again the devices this call attached, last first; st is unchanged.
 */
static int attach_devices(const struct sl_service_config *cfg,
			  struct sl_service_state *st)
{
	struct sl_service_device held[SL_MAX_DEVICES] = {};
	struct sl_load_opts lo = { .clients = cfg->clients };
	bool fresh[SL_MAX_DEVICES] = {};
	enum sl_service_how how;
	unsigned i;
	int err;

	for (i = 0; i < cfg->nr_devices; i++) {
		const struct sl_config_device *d = &cfg->devices[i];

		how = sl_service_device_how(st, d->name);
		if (sl_is_attached(d->name)) {
			if (how == SL_SERVICE_NONE) {
				how = SL_SERVICE_ADOPTED;
				pr_notice("%s: already attached: adopted", d->name);
			}
		} else {
			err = sl_attach(d->name, d->mode, &lo);
			if (err)
				goto err_detach;
			fresh[i] = true;
			how = SL_SERVICE_ATTACHED;
			pr_notice("%s: attached (%s)", d->name, sl_mode_name(d->mode));
		}
		snprintf(held[i].name, sizeof(held[i].name), "%s", d->name);
		held[i].how = how;
	}
	memcpy(st->dev, held, sizeof(held));
	st->nr_devices = cfg->nr_devices;
	return 0;

err_detach:
	while (i--)
		if (fresh[i])
			sl_detach(cfg->devices[i].name);
	return err;
}

/* A start that fails takes back the devices this run attached, last
 * first; not those it adopted: they were running before it.
 */
static void detach_attached(const struct sl_service_state *st)
{
	unsigned i;

	for (i = st->nr_devices; i--;)
		if (st->dev[i].how == SL_SERVICE_ATTACHED)
			sl_detach(st->dev[i].name);
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

/* The rule file in the state, as a full path when it resolves. */
static void publish_rules_path(struct sl_service_state *st, const char *path)
{
	char full[PATH_MAX];

	if (!realpath(path, full) || strlen(full) >= sizeof(st->rules))
		snprintf(full, sizeof(full), "%s", path);
	memset(st->rules, 0, sizeof(st->rules));
	memcpy(st->rules, full, strnlen(full, sizeof(st->rules) - 1));
}

static __u32 applied_epoch(const struct sl_maps *m)
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

/* A reload that failed after attaching: the devices it attached go
 * again, and the service holds what it held before (st = before, its
 * counters kept), so that stop() finds every device it must detach.
 */
static void put_back_devices(struct sl_service_state *st,
			     const struct sl_service_state *before)
{
	unsigned i;

	for (i = st->nr_devices; i--;) {
		if (st->dev[i].how != SL_SERVICE_ATTACHED ||
		    sl_service_device_how(before, st->dev[i].name) != SL_SERVICE_NONE)
			continue;
		if (!sl_detach(st->dev[i].name))
			pr_notice("%s: detached again (the reload failed)",
				  st->dev[i].name);
	}
	memcpy(st->dev, before->dev, sizeof(st->dev));
	st->nr_devices = before->nr_devices;
}

/* SIGHUP: everything new is checked before anything changes; the rule
 * file is read once, checked and then applied. *epoch becomes the
 * applied rules' epoch.
 */
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
		refused(st, path, "not valid");
		return -EINVAL;
	}
	if (sl_rules_load_file(next->rules_path, rs)) {
		pr_error("%s: not valid; keeping the running rules", next->rules_path);
		refused(st, next->rules_path, "not valid");
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
static void reload_done(const char *path, struct sl_service_config *cfg,
			struct sl_service_config *next,
			struct sl_service_state *st, struct sl_rls *rls,
			const struct sl_ruleset *rs)
{
	/* the rules run: the rate limit service answers by theirs */
	if (rls && sl_rls_set_rules(rls, rs))
		pr_error("rls: out of memory: answering by the rules before this reload");
	next->sync = cfg->sync;
	next->http = cfg->http;
	next->rls = cfg->rls;
	*cfg = *next;
	st->reloads_applied++;
	st->changed_ms = 0;
	st->changed[0] = '\0';
	publish(st);
	pr_notice("%s: reloaded", path);
}

/* A reload after the drop: attaching and detaching need root, which the
 * service gave up once it attached; the rules go through the maps it
 * kept open (the pins' directory is root's).
 */
static void reload_dropped(const char *path, struct sl_service_config *cfg,
			   struct sl_service_state *st, __u32 *epoch,
			   const struct sl_maps *m, struct sl_rls *rls)
{
	struct sl_service_config next;
	struct sl_ruleset rs;

	if (reload_read(path, cfg, st, &next, &rs))
		return;
	if (!same_devices(&next, cfg))
		pr_warn("devices changed: take effect at the next start (the service gave up root once it attached)");
	if (next.keep_attached != cfg->keep_attached)
		pr_warn("keep_attached changed: takes effect at the next start");
	if (sl_rules_apply_open(next.rules_path, &rs, m, NULL)) {
		refused(st, next.rules_path, "cannot apply");
		goto out;
	}
	*epoch = applied_epoch(m);
	publish_rules_path(st, next.rules_path);
	pr_notice("%s: applied %u rule%s", next.rules_path, rs.nr,
		  rs.nr == 1 ? "" : "s");
	/* and the devices stay as they are, without root */
	memcpy(next.devices, cfg->devices, sizeof(next.devices));
	next.nr_devices = cfg->nr_devices;
	next.keep_attached = cfg->keep_attached;
	reload_done(path, cfg, &next, st, rls, &rs);
out:
	sl_rules_free(&rs);
}

static void reload(const char *path, struct sl_service_config *cfg,
		   struct sl_service_state *st, __u32 *epoch, struct sl_rls *rls)
{
	struct sl_service_config next;
	struct sl_service_state before;
	struct sl_ruleset rs;
	struct sl_maps m;
	unsigned i;
	bool loaded;

	if (reload_read(path, cfg, st, &next, &rs))
		return;
	before = *st;
	if (attach_devices(&next, st)) {
		pr_error("attaching the new devices failed; keeping the running rules");
		refused(st, path, "cannot attach the new devices");
		goto out;
	}
	/* the pins are there: the devices hold them */
	if (sl_rules_apply_pinned(next.rules_path, &rs, NULL, &loaded, &m)) {
		put_back_devices(st, &before);
		refused(st, next.rules_path, "cannot apply");
		goto out;
	}
	*epoch = applied_epoch(&m);
	sl_maps_close(&m);
	publish_rules_path(st, next.rules_path);
	pr_notice("%s: applied %u rule%s", next.rules_path, rs.nr,
		  rs.nr == 1 ? "" : "s");
	/* the devices the config no longer names go once the new rules run */
	for (i = 0; i < cfg->nr_devices; i++) {
		if (config_has_device(&next, cfg->devices[i].name))
			continue;
		if (!sl_detach(cfg->devices[i].name))
			pr_notice("%s: detached (not in %s any more)",
				  cfg->devices[i].name, path);
	}
	reload_done(path, cfg, &next, st, rls, &rs);
out:
	sl_rules_free(&rs);
}

/* The store's URL as status shows it: without the userinfo a URL may
 * carry (redis://user:secret@host).
 */
static void public_url(const char *url, char *out, size_t len)
{
	const char *at = strrchr(url, '@'), *scheme = strstr(url, "://");

	if (at && scheme && scheme < at)
		snprintf(out, len, "%.*s%s", (int)(scheme + 3 - url), url, at + 1);
	else
		snprintf(out, len, "%s", url);
}

/* What one run of the service holds, in the order it takes it. */
struct run {
	struct sl_service_config cfg;
	struct sl_service_state st;
	bool loaded;		/* this run loaded the pins */
	struct sl_maps m;
	int check_fd;
	struct sl_checker checker;
	struct sl_central *central;
	struct sl_http *http;
	struct sl_rls *rls;
	/* the rules start() applied, until the rate limit service has
	 * their envoy: blocks
	 */
	struct sl_ruleset rs;
	struct sl_sync_service *sync;
	__u32 epoch;		/* of the rules it applied last */
	__u64 missing;		/* bit i: st.dev[i] found detached */
	struct sl_sync_watch sync_watch;
	/* after the drop: the root child that detaches at the stop */
	pid_t monitor;
	int monitor_fd;		/* the pipe it reads what to do from; -1: none */
};

/* Ended list entries are no entries to the data path already; the
 * sweep only gives their room back, so a few seconds late is fine.
 */
#define SL_LIST_SWEEP_MS	10000

/* Remove the list entries that ended (bpf/lists.h), so that the tries do
 * not fill with them. A prefix blocked again between the sweep's look
 * and its delete loses its new entry: the sweep looks again just before
 * it deletes, which leaves that to a few microseconds.
 */
static void sweep_lists(struct run *r)
{
	static __u64 last_ms;
	__u64 now = sl_now_tai_ms();
	unsigned removed;
	int err;

	if (now - last_ms < SL_LIST_SWEEP_MS)
		return;
	last_ms = now;
	err = sl_list_sweep(&r->m, now, &removed);
	if (err)
		pr_warn("cannot sweep the block and allow lists: %s", strerror(-err));
	else if (removed)
		pr_info("lists: %u ended entr%s removed", removed,
			removed == 1 ? "y" : "ies");
}

/* The config and the rules read (once, and checked before anything is
 * touched), this build's programs loaded, the rules applied (first: the
 * program never runs on a device without them), the devices attached.
 * On success r->m is open; a failure leaves nothing of its own.
 */
static int start(const char *path, struct run *r)
{
	struct sl_load_opts lo;
	struct sl_build_rec build;
	struct sl_ruleset rs;
	int err;

	if (sl_config_load(path, &r->cfg))
		return -EINVAL;
	if (sl_rules_load_file(r->cfg.rules_path, &rs))
		return -EINVAL;
	lo = (struct sl_load_opts){ .clients = r->cfg.clients };
	/* pins of another build (an upgraded package): this build's
	 * programs in their place, on the maps that still fit
	 */
	err = sl_upgrade_pinned(&lo, &build);
	if (err)
		goto out;
	err = sl_rules_apply_pinned(r->cfg.rules_path, &rs, &lo, &r->loaded,
				    &r->m);
	if (err)
		goto out;
	r->epoch = applied_epoch(&r->m);
	publish_rules_path(&r->st, r->cfg.rules_path);
	pr_notice("%s: applied %u rule%s", r->cfg.rules_path, rs.nr,
		  rs.nr == 1 ? "" : "s");
	err = attach_devices(&r->cfg, &r->st);
	if (err)
		goto err_maps;
	r->rs = rs;
	return 0;

err_maps:
	/* attach_devices took back its own attaches */
	sl_maps_close(&r->m);
	if (r->loaded)
		sl_unpin_if_unused();
out:
	sl_rules_free(&rs);
	return err;
}

static int open_checker(struct run *r)
{
	r->check_fd = sl_open_check_prog();
	if (r->check_fd < 0 || sl_checker_init(&r->checker, r->check_fd, &r->m)) {
		pr_error("cannot open the check program under %s", SL_PIN_DIR);
		if (r->check_fd < 0)
			return r->check_fd;
		close(r->check_fd);
		return -EIO;
	}
	return 0;
}

/* Layout central: /v1/check decided in the store. It connects at the
 * first check: a store that is down at start is an outage like any
 * other (checks fail open).
 */
static int start_central(struct run *r)
{
	const struct sl_sync_config *sc = &r->cfg.sync;

	if (!sc->enabled || !sc->check_central)
		return 0;
	r->central = sl_central_new(sc->url, sc->interval_ms);
	if (!r->central)
		return -EINVAL;
	if (sc->auth && sl_central_set_auth(r->central, sc->username,
					    sc->password)) {
		pr_error("check: out of memory");
		sl_central_free(r->central);
		r->central = NULL;
		return -ENOMEM;
	}
	sl_central_set_max_reply(r->central, sc->max_reply);
	if (sc->key_file[0]) {
		uint8_t key[SL_WIRE_KEY];

		if (sl_wire_key_load(sc->key_file, key)) {
			sl_central_free(r->central);
			r->central = NULL;
			return -EINVAL;
		}
		sl_central_set_id_key(r->central, key);
		explicit_bzero(key, sizeof(key));
	} else {
		pr_warn("check: sync.key_file not set: API keys are stored in redis under an unkeyed hash (a guessable key can be found by trying); set the fleet's key_file");
	}
	sl_checker_set_central(&r->checker, r->central);
	pr_notice("check: /v1/check decided in redis at %s (layout central); packets as delayed-sync",
		  sc->url);
	return 0;
}

/* A listener's start, said once for the API (SEC "http") and the rate
 * limit service ("rls"): where it listens, or why it cannot.
 */
static int listening(const char *sec, const struct sl_http_config *lc,
		     int err, bool on_socket)
{
	if (err == -EEXIST && on_socket)
		pr_error("%s: %s is there and is not a socket: remove it or set %s.socket",
			 sec, lc->socket, sec);
	else if (err == -EADDRINUSE && on_socket)
		pr_error("%s: an instance answers on %s already: stop it, or give this one another %s.socket",
			 sec, lc->socket, sec);
	else if (err && on_socket)
		pr_error("%s: cannot listen on %s: %s", sec, lc->socket,
			 strerror(-err));
	else if (err)
		pr_error("%s: cannot listen on %s (in use? not this host's address?)",
			 sec, lc->listen);
	if (err)
		return err;
	if (lc->socket_enabled)
		pr_notice("%s: listening on %s (mode %04o)", sec, lc->socket,
			  lc->socket_mode);
	if (lc->tcp_enabled)
		pr_notice("%s: listening on %s (bearer token required)", sec,
			  lc->listen);
	return 0;
}

static int start_http(struct run *r)
{
	const struct sl_http_config *hc = &r->cfg.http;
	bool on_socket;

	if (!hc->socket_enabled && !hc->tcp_enabled)
		return 0;
	return listening("http", hc, sl_http_start(hc, &r->checker, &r->http,
						   &on_socket), on_socket);
}

/* Envoy's rate limit service, counting into the API's stats (/metrics) */
static int start_rls(struct run *r)
{
	const struct sl_http_config *rc = &r->cfg.rls;
	bool on_socket;

	if (!rc->socket_enabled && !rc->tcp_enabled)
		return 0;
	return listening("rls", rc, sl_rls_start(rc, &r->checker,
			 r->http ? sl_http_stats_of(r->http) : NULL, &r->rs,
			 &r->rls, &on_socket), on_socket);
}

static void start_sync(struct run *r)
{
	r->st.sync_wanted = r->cfg.sync.enabled;
	r->st.sync_down[0] = 0;
	if (r->cfg.sync.enabled)
		r->sync = sl_sync_service_start(&r->cfg.sync, &r->m,
						r->st.sync_down,
						sizeof(r->st.sync_down));
	if (r->sync) {
		r->st.sync_down[0] = 0;
		publish(&r->st);
		return;
	}
	/* decide alone: no sync configured, pinned maps from a run with
	 * sync, or sync that cannot start (its error is above). Peers
	 * failing must not take the limiter down (NFR-3).
	 */
	bpf_map_update_elem(r->m.sync, &(__u32){ 0 },
			    &(struct sl_sync_conf){ 0 }, BPF_ANY);
	/* unhealthy from here on: the fleet would enforce each node's
	 * whole limit on its own (status, /healthz and /metrics say so)
	 */
	if (r->cfg.sync.enabled) {
		pr_warn("sync: not running; this node decides on its own counts");
		publish(&r->st);
	}
}

/* A sync whose rounds stopped (its thread stuck) is down as one that
 * never started: status and /metrics say so with /healthz, and it is
 * up again when the rounds resume. Said in the log once per change.
 */
static void watch_sync_rounds(struct run *r)
{
	struct sl_sync_health h;
	char why[sizeof(r->st.sync_down)] = "";

	if (!r->sync)
		return;
	if (!sl_sync_health_read(&r->m, sl_now_tai_ms(), &h) &&
	    h.last_round_ago_ms > (__u64)SL_PEER_UP_INTERVALS * h.st.interval_ms)
		snprintf(why, sizeof(why), "its rounds stopped (none for over %llu ms)",
			 (unsigned long long)SL_PEER_UP_INTERVALS * h.st.interval_ms);
	if (!strncmp(why, r->st.sync_down, sizeof(why)))
		return;
	if (why[0])
		pr_warn("sync: %s; this node decides on its own counts", why);
	else
		pr_notice("sync: rounds again");
	memcpy(r->st.sync_down, why, sizeof(why));
	publish(&r->st);
}

/* A signalled stop: the devices go with the service unless the config
 * keeps them attached.
 */
static void stop_serving(struct run *r)
{
	sl_sync_service_stop(r->sync);
	/* before the API's: it counts into the API's stats */
	sl_rls_stop(r->rls);
	sl_http_stop(r->http);
	sl_checker_fini(&r->checker);
	sl_central_free(r->central);
	close(r->check_fd);
	sl_maps_close(&r->m);
}

/* root's part of the stop: by the service itself, or by its monitor */
static void stop_devices(struct run *r)
{
	unsigned i;

	/* no service holds the devices from here on */
	sl_service_state_unpin();
	if (!r->cfg.keep_attached) {
		for (i = 0; i < r->cfg.nr_devices; i++)
			if (!sl_detach(r->cfg.devices[i].name))
				pr_notice("%s: detached", r->cfg.devices[i].name);
		if (access(SL_PIN_DIR, F_OK))
			pr_notice("unpinned %s", SL_PIN_DIR);
		else if (!sl_unpin_if_unused() && access(SL_PIN_DIR, F_OK))
			pr_notice("unpinned %s", SL_PIN_DIR);
	} else {
		pr_warn("keep_attached: the programs stay attached and enforcing");
	}
}

static void stop(struct run *r)
{
	stop_serving(r);
	stop_devices(r);
}

/* What the service asks of its monitor. */
#define SL_MONITOR_STOP		's'	/* the stop: detach (unless kept) */
#define SL_MONITOR_KEEP		'k'	/* the stop, keep_attached */
#define SL_MONITOR_FAILED	'f'	/* a failed start: take back its attaches */

/* The monitor: a child forked as root before the drop, with only what
 * detaching and unpinning need. It waits on a pipe; the service writes
 * what to do and waits for it. A service killed (-9) writes nothing: its
 * programs stay attached and pinned, as they would without the drop, and
 * the next start adopts them.
 */
static void __attribute__((noreturn)) monitor(struct run *r, int fd)
{
	char what = 0;
	ssize_t n;

	/* the service holds the writers' lock until it serves */
	sl_writer_forget();
	sl_privdrop_monitor_caps();
	do
		n = read(fd, &what, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1) {
		sl_writer_lock();	/* reported if not taken: go on */
		if (what == SL_MONITOR_FAILED) {
			sl_service_state_unpin();
			detach_attached(&r->st);
			if (r->loaded)
				sl_unpin_if_unused();
		} else {
			r->cfg.keep_attached = what == SL_MONITOR_KEEP;
			stop_devices(r);
		}
		sl_service_unlock();
		sl_writer_unlock();
	}
	_exit(0);
}

static int start_monitor(struct run *r)
{
	int p[2], err;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC)) {
		err = -errno;
		pr_error("cannot make the monitor's pipe: %s", strerror(-err));
		return err;
	}
	/* no thread runs yet: the child is a whole copy */
	pid = fork();
	if (pid < 0) {
		err = -errno;
		pr_error("cannot fork the monitor: %s", strerror(-err));
		close(p[0]);
		close(p[1]);
		return err;
	}
	if (!pid) {
		close(p[1]);
		monitor(r, p[0]);
	}
	close(p[0]);
	r->monitor = pid;
	r->monitor_fd = p[1];
	return 0;
}

/* Hand WHAT to the monitor and wait until it is done. */
static void tell_monitor(struct run *r, char what)
{
	int status;

	if (write(r->monitor_fd, &what, 1) != 1)
		pr_error("cannot reach the monitor (pid %d): %s", (int)r->monitor,
			 strerror(errno));
	close(r->monitor_fd);
	r->monitor_fd = -1;
	while (waitpid(r->monitor, &status, 0) < 0 && errno == EINTR)
		;
}

/* After the attach, before anything parses input: the monitor forked,
 * then this process becomes USER with no capabilities.
 */
static int drop_root(struct run *r, const struct sl_service_user *user)
{
	int err;

	err = sl_privdrop_runtime_dir(user);
	if (err)
		return err;
	err = start_monitor(r);
	if (err)
		return err;
	err = sl_privdrop_apply(user);
	if (err)
		return err;
	pr_notice("running as user %s (uid %u), with no capabilities", user->name,
		  (unsigned)user->uid);
	return 0;
}

/* What the service manages, changed by another command (--force): said
 * once per change, in the log and in status, until a reload puts its
 * config back.
 */
static void changed_under(struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void changed_under(struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->st.changed, sizeof(r->st.changed), fmt, ap);
	va_end(ap);
	r->st.changed_ms = sl_now_tai_ms();
	pr_warn("changed under the service: %s; 'slicelimit reload' puts %s back",
		r->st.changed, r->st.config);
	publish(&r->st);
}

static void watch_ownership(struct run *r)
{
	__u32 epoch = applied_epoch(&r->m), i;

	if (epoch && epoch != r->epoch) {
		changed_under(r, "the rules were replaced (epoch %u, the service applied %u)",
			      epoch, r->epoch);
		r->epoch = epoch;
	}
	/* the device records, in the map this run opened: a detach
	 * removes its record there, and this reads it without the pins'
	 * directory (root's, and out of reach once the service dropped it)
	 */
	for (i = 0; i < r->st.nr_devices && i < SL_MAX_DEVICES; i++) {
		bool gone = !sl_maps_has_device(&r->m, r->st.dev[i].name);

		if (gone && !(r->missing & (1ULL << i)))
			changed_under(r, "%s was detached", r->st.dev[i].name);
		r->missing = gone ? r->missing | (1ULL << i) :
				    r->missing & ~(1ULL << i);
	}
}

/* The service's name in the error of a second one: from its state. */
static void already_running(void)
{
	struct sl_service_state other;

	if (sl_service_state_read(&other) || !other.pid)
		pr_error("already running (another service holds %s)", SL_PIN_DIR);
	else
		pr_error("already running (pid %u, config %.*s)", other.pid,
			 (int)sizeof(other.config), other.config);
}

int sl_service_run(const char *path, const struct sl_service_user *user)
{
	const struct timespec watch = { .tv_sec = 1 };
	struct run r = { .check_fd = -1, .monitor_fd = -1 };
	char full[PATH_MAX];
	sigset_t sigs;
	int sig, err;

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

	err = sl_writer_lock();
	if (err)
		return err;
	err = sl_service_lock();
	if (err) {
		if (err == -EBUSY)
			already_running();
		sl_writer_unlock();
		return err;
	}
	if (!realpath(path, full) || strlen(full) >= sizeof(r.st.config))
		snprintf(full, sizeof(full), "%s", path);
	memcpy(r.st.config, full, sizeof(r.st.config) - 1);
	err = start(path, &r);
	if (err)
		goto err_locks;
	err = open_checker(&r);
	if (err)
		goto err_detach;
	err = start_central(&r);
	if (err)
		goto err_checker;
	/* before the API answers: whoever sees it up sees this run's state */
	r.st.pid = getpid();
	r.st.check_central = r.central != NULL;
	if (r.cfg.sync.enabled && r.cfg.sync.backend == SL_SYNC_REDIS)
		public_url(r.cfg.sync.url, r.st.sync_url,
				    sizeof(r.st.sync_url));
	r.st.started_ms = sl_now_tai_ms();
	if (r.cfg.http.socket_enabled)
		snprintf(r.st.http_socket, sizeof(r.st.http_socket), "%s",
			 r.cfg.http.socket);
	r.st.http_socket_mode = r.cfg.http.socket_mode;
	if (r.cfg.http.tcp_enabled)
		snprintf(r.st.http_listen, sizeof(r.st.http_listen), "%s",
			 r.cfg.http.listen);
	r.st.uid = user->uid;
	snprintf(r.st.user, sizeof(r.st.user), "%s", user->name);
	/* by path, as root: the service keeps the record open for later */
	publish(&r.st);
	if (user->root) {
		pr_warn("running as root (its user is %s): every privilege kept while it parses HTTP, sync and Redis input",
			user->name);
	} else {
		err = drop_root(&r, user);
		if (err)
			goto err_state;
	}
	err = start_http(&r);
	if (!err)
		err = start_rls(&r);
	sl_rules_free(&r.rs);
	if (err)
		goto err_state;
	start_sync(&r);
	/* it wrote the layout the checks' client view follows */
	sl_checker_sync_changed(&r.checker);
	sl_writer_unlock();

	pr_notice("running (pid %d): SIGHUP reloads, SIGTERM stops", getpid());
	for (;;) {
		sig = sigtimedwait(&sigs, NULL, &watch);
		if (sig < 0) {
			/* the watches below may leave errno changed: a failed
			 * read must not end the service
			 */
			int wait_err = errno;

			if (wait_err == EAGAIN) {
				watch_ownership(&r);
				if (r.sync)
					sl_sync_watch(&r.sync_watch, &r.m,
						      r.st.sync_url[0] ? r.st.sync_url : NULL,
						      sl_now_tai_ms());
				watch_sync_rounds(&r);
				sweep_lists(&r);
			}
			if (wait_err == EAGAIN || wait_err == EINTR)
				continue;
			break;
		}
		if (sig != SIGHUP)
			break;
		if (sl_writer_lock()) {
			refused(&r.st, path, "cannot lock the pins");
			continue;	/* reported; the next SIGHUP tries again */
		}
		if (r.monitor_fd >= 0)
			reload_dropped(path, &r.cfg, &r.st, &r.epoch, &r.m,
				       r.rls);
		else
			reload(path, &r.cfg, &r.st, &r.epoch, r.rls);
		r.missing = 0;
		sl_writer_unlock();
	}
	pr_notice("stopping on signal %d", sig);
	if (r.monitor_fd >= 0) {
		stop_serving(&r);
		tell_monitor(&r, r.cfg.keep_attached ? SL_MONITOR_KEEP :
			     SL_MONITOR_STOP);
		return 0;
	}
	sl_writer_lock();	/* reported if not taken: stop regardless */
	stop(&r);
	sl_service_unlock();
	sl_writer_unlock();
	return 0;

err_state:
	if (r.monitor_fd >= 0) {
		stop_serving(&r);
		tell_monitor(&r, SL_MONITOR_FAILED);
		return err;
	}
	sl_rls_stop(r.rls);
	sl_http_stop(r.http);
	sl_service_state_unpin();
	sl_central_free(r.central);
err_checker:
	sl_checker_fini(&r.checker);
	close(r.check_fd);
err_detach:
	detach_attached(&r.st);
	sl_maps_close(&r.m);
	if (r.loaded)
		sl_unpin_if_unused();
err_locks:
	sl_service_unlock();
	sl_writer_unlock();
	return err;
}
