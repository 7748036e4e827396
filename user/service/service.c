// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `slicelimit run --config FILE`: the service. It attaches the configured
 * devices, applies the rules, serves the HTTP API, and runs until SIGTERM
 * or SIGINT. SIGHUP re-reads the config and the rules; a bad file is
 * reported and the running state kept. Everything the kernel needs is
 * pinned, so a service killed with -9 leaves the programs enforcing, and
 * the next start adopts the pinned state rather than attaching twice.
 *
 * sl_service_run below is its life from top to bottom; each step lives in
 * the file service_run.h names.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "instance/loader.h"
#include "util/log.h"
#include "instance/pin_lock.h"
#include "service/http.h"
#include "service/privdrop.h"
#include "service/rls.h"
#include "service/service.h"
#include "service/service_run.h"
#include "sync/thread.h"

/* Blocked before any thread starts, so that all of them inherit it and
 * the signals reach sigtimedwait() in serve().
 */
static void block_signals(sigset_t *sigs)
{
	sigemptyset(sigs);
	sigaddset(sigs, SIGTERM);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
	/* a peer or Redis gone mid-write must not end the service */
	signal(SIGPIPE, SIG_IGN);
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

/* The writers' lock (held until the service serves) and the service's
 * (held for its life), and the config's full path in the state.
 */
static int take_locks(const char *path, struct sl_run *r)
{
	char full[PATH_MAX];
	int err;

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
	if (!realpath(path, full) || strlen(full) >= sizeof(r->st.config))
		snprintf(full, sizeof(full), "%s", path);
	memcpy(r->st.config, full, sizeof(r->st.config) - 1);
	return 0;
}

/* Until SIGTERM or SIGINT: a SIGHUP reloads, and once a second with no
 * signal the watches run. Returns the signal that ended it.
 */
static int serve(const char *path, struct sl_run *r, const sigset_t *sigs)
{
	const struct timespec watch = { .tv_sec = 1 };
	int sig, wait_err;

	for (;;) {
		sig = sigtimedwait(sigs, NULL, &watch);
		if (sig < 0) {
			/* the watches may leave errno changed: a failed read
			 * must not end the service
			 */
			wait_err = errno;
			if (wait_err == EAGAIN)
				sl_run_watch(r);
			if (wait_err == EAGAIN || wait_err == EINTR)
				continue;
			return sig;
		}
		if (sig != SIGHUP)
			return sig;
		if (sl_writer_lock()) {
			sl_run_refused(&r->st, path, "cannot lock the pins");
			continue;	/* reported; the next SIGHUP tries again */
		}
		sl_run_reload(path, r);
		sl_writer_unlock();
	}
}

/* The listeners, the sync and the maps: all but root's part of a stop. */
static void stop_serving(struct sl_run *r)
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

/* A signalled stop: the devices go with the service unless the config
 * keeps them attached; after the drop, the monitor takes them back.
 */
static void stop(struct sl_run *r)
{
	stop_serving(r);
	if (r->monitor_fd >= 0) {
		sl_run_tell_monitor(r, r->cfg.keep_attached ? SL_MONITOR_KEEP :
				    SL_MONITOR_STOP);
		return;
	}
	sl_writer_lock();	/* reported if not taken: stop regardless */
	sl_run_stop_devices(r);
	sl_service_unlock();
	sl_writer_unlock();
}

/* The steps of a run in order; a failed start unwinds them in reverse
 * (after the drop, the monitor takes back the devices).
 */
int sl_service_run(const char *path, const struct sl_service_user *user)
{
	struct sl_run r = { .check_fd = -1, .monitor_fd = -1 };
	sigset_t sigs;
	int err;

	block_signals(&sigs);
	err = take_locks(path, &r);
	if (err)
		return err;
	err = sl_run_load(path, &r);
	if (err)
		goto err_locks;
	err = sl_run_open_checker(&r);
	if (err)
		goto err_detach;
	err = sl_run_start_central(&r);
	if (err)
		goto err_checker;
	sl_run_record(&r, user);
	if (user->root)
		pr_warn("running as root (its user is %s): every privilege kept while it parses HTTP, sync and Redis input",
			user->name);
	else
		err = sl_run_drop_root(&r, user);
	if (!err)
		err = sl_run_start_listeners(&r);
	if (err)
		goto err_state;
	sl_run_start_sync(&r);
	/* it wrote the layout the checks' client view follows */
	sl_checker_sync_changed(&r.checker);
	sl_writer_unlock();

	pr_notice("running (pid %d): SIGHUP reloads, SIGTERM stops", getpid());
	pr_notice("stopping on signal %d", serve(path, &r, &sigs));
	stop(&r);
	return 0;

err_state:
	if (r.monitor_fd >= 0) {
		stop_serving(&r);
		sl_run_tell_monitor(&r, SL_MONITOR_FAILED);
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
	sl_run_detach_attached(&r.st);
	sl_maps_close(&r.m);
	if (r.loaded)
		sl_unpin_if_unused();
err_locks:
	sl_service_unlock();
	sl_writer_unlock();
	return err;
}
