// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The service's drop to its user once it attached, and the root monitor
 * forked before the drop that takes the devices back at the stop.
 */
#define _GNU_SOURCE	/* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "instance/loader.h"
#include "util/log.h"
#include "instance/pin_lock.h"
#include "service/privdrop.h"
#include "service/service_run.h"

/* The monitor: a child forked as root before the drop, with only what
 * detaching and unpinning need. It waits on a pipe; the service writes
 * what to do and waits for it. A service killed (-9) writes nothing: its
 * programs stay attached and pinned, as they would without the drop, and
 * the next start adopts them.
 */
static void __attribute__((noreturn)) monitor(struct sl_run *r, int fd)
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
			sl_run_detach_attached(&r->st);
			if (r->loaded)
				sl_unpin_if_unused();
		} else {
			r->cfg.keep_attached = what == SL_MONITOR_KEEP;
			sl_run_stop_devices(r);
		}
		sl_service_unlock();
		sl_writer_unlock();
	}
	_exit(0);
}

static int start_monitor(struct sl_run *r)
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
void sl_run_tell_monitor(struct sl_run *r, char what)
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
int sl_run_drop_root(struct sl_run *r, const struct sl_service_user *user)
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
