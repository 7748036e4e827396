/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What one run of `slicelimit run` holds, and the steps of its life that
 * sl_service_run (service.c) takes in order: the start-up
 * (service_start.c), the devices it attaches and gives back
 * (service_devices.c), the drop to its user and the root monitor
 * (service_monitor.c), the once-a-second watches (service_watch.c) and
 * the SIGHUP reload (service_reload.c). Internal to the service.
 */
#ifndef SL_SERVICE_SERVICE_RUN_H
#define SL_SERVICE_SERVICE_RUN_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>
#include "instance/instance_maps.h"
#include "rules/rules.h"
#include "service/check.h"
#include "service/config.h"
#include "service/state.h"
#include "service/sync_watch.h"

struct sl_http;
struct sl_rls;
struct sl_sync_service;
struct sl_service_user;

/* What one run of the service holds, in the order it takes it. */
struct sl_run {
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

/* service_start.c: the start-up, step by step (each 0 or -errno) */
int sl_run_load(const char *path, struct sl_run *r);
int sl_run_open_checker(struct sl_run *r);
int sl_run_start_central(struct sl_run *r);
void sl_run_record(struct sl_run *r, const struct sl_service_user *user);
int sl_run_start_listeners(struct sl_run *r);
void sl_run_start_sync(struct sl_run *r);

/* service_devices.c: the devices this run attaches, adopts and gives back */
int sl_run_attach_devices(const struct sl_service_config *cfg,
			  struct sl_service_state *st);
void sl_run_detach_attached(const struct sl_service_state *st);
void sl_run_put_back_devices(struct sl_service_state *st,
			     const struct sl_service_state *before);
void sl_run_stop_devices(struct sl_run *r);

/* service_monitor.c: the drop to USER, and the root monitor that stops */
#define SL_MONITOR_STOP		's'	/* the stop: detach (unless kept) */
#define SL_MONITOR_KEEP		'k'	/* the stop, keep_attached */
#define SL_MONITOR_FAILED	'f'	/* a failed start: take back its attaches */
int sl_run_drop_root(struct sl_run *r, const struct sl_service_user *user);
void sl_run_tell_monitor(struct sl_run *r, char what);

/* service_watch.c: what the service checks once a second */
void sl_run_watch(struct sl_run *r);

/* service_reload.c: SIGHUP, and what the start shares with it */
void sl_run_reload(const char *path, struct sl_run *r);
void sl_run_refused(struct sl_service_state *st, const char *file,
		    const char *error);
void sl_run_rules_applied(struct sl_service_state *st, const char *path,
			  unsigned nr);
__u32 sl_run_applied_epoch(const struct sl_maps *m);

#endif /* SL_SERVICE_SERVICE_RUN_H */
