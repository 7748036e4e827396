// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The service's start-up, a function a step, in the order
 * sl_service_run takes them: the config and rules read and the pinned
 * programs upgraded, the rules applied and the devices attached; the
 * check program and the central store; the run's state recorded; the
 * API and the rate limit service listening; the sync started.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "instance/build_id.h"
#include "util/clock.h"
#include "instance/loader.h"
#include "util/log.h"
#include "service/http.h"
#include "service/privdrop.h"
#include "service/rls.h"
#include "service/service_run.h"
#include "sync/thread.h"
#include "sync/wire.h"

_Static_assert(SL_WIRE_KEY == SL_CENTRAL_SECRET, "the sync key keys the central ids");

/* The config and the rules read (once, and checked before anything is
 * touched), this build's programs loaded, the rules applied (first: the
 * program never runs on a device without them), the devices attached.
 * On success r->m is open and r->rs holds the rules; a failure leaves
 * nothing of its own.
 */
int sl_run_load(const char *path, struct sl_run *r)
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
	r->epoch = sl_run_applied_epoch(&r->m);
	sl_run_rules_applied(&r->st, r->cfg.rules_path, rs.nr);
	err = sl_run_attach_devices(&r->cfg, &r->st);
	if (err)
		goto err_maps;
	r->rs = rs;
	return 0;

err_maps:
	/* sl_run_attach_devices took back its own attaches */
	sl_maps_close(&r->m);
	if (r->loaded)
		sl_unpin_if_unused();
out:
	sl_rules_free(&rs);
	return err;
}

int sl_run_open_checker(struct sl_run *r)
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

/* The central ids keyed with the fleet's sync key, or said unkeyed. */
static int central_id_key(struct sl_central *central,
			  const struct sl_sync_config *sc)
{
	uint8_t key[SL_WIRE_KEY];

	if (!sc->key_file[0]) {
		pr_warn("check: sync.key_file not set: API keys are stored in redis under an unkeyed hash (a guessable key can be found by trying); set the fleet's key_file");
		return 0;
	}
	if (sl_wire_key_load(sc->key_file, key))
		return -EINVAL;
	sl_central_set_id_key(central, key);
	explicit_bzero(key, sizeof(key));
	return 0;
}

/* Layout central: /v1/check decided in the store. It connects at the
 * first check: a store that is down at start is an outage like any
 * other (checks fail open).
 */
int sl_run_start_central(struct sl_run *r)
{
	const struct sl_sync_config *sc = &r->cfg.sync;
	int err;

	if (!sc->enabled || !sc->check_central)
		return 0;
	r->central = sl_central_new(sc->url, sc->interval_ms);
	if (!r->central)
		return -EINVAL;
	if (sc->auth && sl_central_set_auth(r->central, sc->username,
					    sc->password)) {
		pr_error("check: out of memory");
		err = -ENOMEM;
		goto err_free;
	}
	sl_central_set_max_reply(r->central, sc->max_reply);
	err = central_id_key(r->central, sc);
	if (err)
		goto err_free;
	sl_checker_set_central(&r->checker, r->central);
	pr_notice("check: /v1/check decided in redis at %s (layout central); packets as delayed-sync",
		  sc->url);
	return 0;

err_free:
	sl_central_free(r->central);
	r->central = NULL;
	return err;
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

/* Before the API answers: whoever sees it up sees this run's state
 * (published by path, as root: the service keeps the record open for
 * later).
 */
void sl_run_record(struct sl_run *r, const struct sl_service_user *user)
{
	r->st.pid = getpid();
	r->st.check_central = r->central != NULL;
	if (r->cfg.sync.enabled && r->cfg.sync.backend == SL_SYNC_REDIS)
		public_url(r->cfg.sync.url, r->st.sync_url, sizeof(r->st.sync_url));
	r->st.started_ms = sl_now_tai_ms();
	if (r->cfg.http.socket_enabled)
		snprintf(r->st.http_socket, sizeof(r->st.http_socket), "%s",
			 r->cfg.http.socket);
	r->st.http_socket_mode = r->cfg.http.socket_mode;
	if (r->cfg.http.tcp_enabled)
		snprintf(r->st.http_listen, sizeof(r->st.http_listen), "%s",
			 r->cfg.http.listen);
	r->st.uid = user->uid;
	snprintf(r->st.user, sizeof(r->st.user), "%s", user->name);
	sl_service_state_publish_or_warn(&r->st);
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

static int start_http(struct sl_run *r)
{
	const struct sl_http_config *hc = &r->cfg.http;
	bool on_socket = false;

	if (!hc->socket_enabled && !hc->tcp_enabled)
		return 0;
	return listening("http", hc, sl_http_start(hc, &r->checker, &r->http,
						   &on_socket), on_socket);
}

/* Envoy's rate limit service, counting into the API's stats (/metrics) */
static int start_rls(struct sl_run *r)
{
	const struct sl_http_config *rc = &r->cfg.rls;
	bool on_socket = false;

	if (!rc->socket_enabled && !rc->tcp_enabled)
		return 0;
	return listening("rls", rc, sl_rls_start(rc, &r->checker,
			 r->http ? sl_http_stats_of(r->http) : NULL, &r->rs,
			 &r->rls, &on_socket), on_socket);
}

/* The API, then the rate limit service; the rules the start applied are
 * not needed after them.
 */
int sl_run_start_listeners(struct sl_run *r)
{
	int err = start_http(r);

	if (!err)
		err = start_rls(r);
	sl_rules_free(&r->rs);
	return err;
}

void sl_run_start_sync(struct sl_run *r)
{
	r->st.sync_wanted = r->cfg.sync.enabled;
	r->st.sync_down[0] = 0;
	if (r->cfg.sync.enabled)
		r->sync = sl_sync_service_start(&r->cfg.sync, &r->m,
						r->st.sync_down,
						sizeof(r->st.sync_down));
	if (r->sync) {
		r->st.sync_down[0] = 0;
		sl_service_state_publish_or_warn(&r->st);
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
		sl_service_state_publish_or_warn(&r->st);
	}
}
