// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "core/instance_maps.h"
#include "core/log.h"
#include "core/pin_lock.h"
#include "slicelimit.h"

/* The bpffs directory that holds SL_PIN_DIR. */
#define SL_WRITER_LOCK_DIR	"/sys/fs/bpf"
/* A reload or an apply holds the lock for well under a second; a writer
 * stuck longer is reported rather than waited for without end.
 */
#define SL_WRITER_WAIT_MS	10000
#define SL_WRITER_POLL_MS	20

static int writer_fd = -1;
static unsigned writer_depth;
static int service_fd = -1;
static bool service_made_dir;

int sl_writer_lock(void)
{
	const struct timespec poll = { .tv_nsec = SL_WRITER_POLL_MS * 1000000L };
	unsigned waited;
	int fd;

	if (writer_depth) {
		writer_depth++;
		return 0;
	}
	/* its own message: the lock's directory is the bpffs */
	fd = sl_require_bpffs();
	if (fd)
		return fd;
	fd = open(SL_WRITER_LOCK_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		pr_error("cannot open %s to lock it: %s%s", SL_WRITER_LOCK_DIR,
			 strerror(-err), sl_privilege_hint(err));
		return err;
	}
	for (waited = 0; flock(fd, LOCK_EX | LOCK_NB); waited += SL_WRITER_POLL_MS) {
		if (errno != EWOULDBLOCK || waited >= SL_WRITER_WAIT_MS) {
			int err = errno == EWOULDBLOCK ? -EBUSY : -errno;

			pr_error("cannot lock %s: %s", SL_WRITER_LOCK_DIR,
				 err == -EBUSY ? "another slicelimit command has been changing the pins for 10 s" :
				 strerror(-err));
			close(fd);
			return err;
		}
		nanosleep(&poll, NULL);
	}
	writer_fd = fd;
	writer_depth = 1;
	return 0;
}

void sl_writer_unlock(void)
{
	if (!writer_depth || --writer_depth)
		return;
	close(writer_fd);	/* lets go of the lock */
	writer_fd = -1;
}

static int open_pin_dir(void)
{
	return open(SL_PIN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int sl_service_lock(void)
{
	int fd, err;

	service_made_dir = !mkdir(SL_PIN_DIR, 0700);
	if (!service_made_dir && errno != EEXIST) {
		err = -errno;
		pr_error("cannot create %s: %s", SL_PIN_DIR, strerror(errno));
		return err;
	}
	fd = open_pin_dir();
	if (fd < 0) {
		err = -errno;
		pr_error("cannot open %s: %s", SL_PIN_DIR, strerror(errno));
		return err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (err != -EBUSY)
			pr_error("cannot lock %s: %s", SL_PIN_DIR, strerror(-err));
		close(fd);
		return err;
	}
	service_fd = fd;
	return 0;
}

void sl_service_unlock(void)
{
	if (service_fd < 0)
		return;
	close(service_fd);
	service_fd = -1;
	if (service_made_dir)
		rmdir(SL_PIN_DIR);	/* only if empty: a failed start's */
	service_made_dir = false;
}

bool sl_service_holds_pins(void)
{
	bool held;
	int fd;

	if (service_fd >= 0)
		return false;	/* ours: this process is the service */
	fd = open_pin_dir();
	if (fd < 0)
		return false;
	held = flock(fd, LOCK_SH | LOCK_NB) && errno == EWOULDBLOCK;
	close(fd);	/* and with it the shared lock, if taken */
	return held;
}
