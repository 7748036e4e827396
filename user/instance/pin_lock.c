// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "instance/instance_maps.h"
#include "util/log.h"
#include "instance/pin_lock.h"
#include "slicelimit.h"

/* What to do with a pin directory someone else made or may change. */
#define SL_PIN_DIR_FIX	"remove it (rm -r " SL_PIN_DIR "), mount the bpffs with -o mode=0700 so that only root may create there, and run again"

/* A reload or an apply holds the lock for well under a second; a writer
 * stuck longer is reported rather than waited for without end.
 */
#define SL_WRITER_WAIT_MS	10000
#define SL_WRITER_POLL_MS	20

/* Open for the life of the process once taken: the service takes the
 * lock again after it dropped root, when it could not open the directory
 * any more, and its monitor shares the descriptor (and so the lock).
 */
static int writer_fd = -1;
static unsigned writer_depth;
static int service_fd = -1;
static bool service_made_dir;

/* A directory only root may have made and only root may change: one
 * another user made or may write could be swapped or held by that user.
 */
static int check_root_dir(int fd, const char *path, const char *fix)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	if (st.st_uid != 0)
		pr_error("%s is owned by uid %u, not root: not made by slicelimit; %s",
			 path, (unsigned)st.st_uid, fix);
	else
		pr_error("%s is writable by %s (mode %04o); %s", path,
			 st.st_mode & S_IWOTH ? "every user" : "its group",
			 (unsigned)(st.st_mode & 07777), fix);
	return -EPERM;
}

/* The lock's directory, made root's and private when missing. */
static int open_writer_dir(void)
{
	int fd, err;

	if (mkdir(SL_RUN_DIR, 0755) && errno != EEXIST)
		goto err_mkdir;
	if (mkdir(SL_WRITER_LOCK_DIR, 0700) && errno != EEXIST)
		goto err_mkdir;
	fd = open(SL_WRITER_LOCK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		  O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		pr_error("cannot open %s to lock it: %s%s", SL_WRITER_LOCK_DIR,
			 strerror(-err), sl_privilege_hint(err));
		return err;
	}
	err = check_root_dir(fd, SL_WRITER_LOCK_DIR,
			     "remove it (rmdir " SL_WRITER_LOCK_DIR ") and run again");
	if (err) {
		close(fd);
		return err;
	}
	return fd;

err_mkdir:
	err = -errno;
	pr_error("cannot create %s: %s%s", SL_WRITER_LOCK_DIR, strerror(-err),
		 sl_privilege_hint(err));
	return err;
}

int sl_writer_lock(void)
{
	const struct timespec poll = { .tv_nsec = SL_WRITER_POLL_MS * 1000000L };
	unsigned waited;
	int fd;

	if (writer_depth) {
		writer_depth++;
		return 0;
	}
	/* every writer writes the pins: no bpffs, nothing to lock for */
	fd = sl_require_bpffs();
	if (fd)
		return fd;
	if (writer_fd < 0) {
		fd = open_writer_dir();
		if (fd < 0)
			return fd;
		writer_fd = fd;
	}
	for (waited = 0; flock(writer_fd, LOCK_EX | LOCK_NB);
	     waited += SL_WRITER_POLL_MS) {
		if (errno != EWOULDBLOCK || waited >= SL_WRITER_WAIT_MS) {
			int err = errno == EWOULDBLOCK ? -EBUSY : -errno;

			pr_error("cannot lock %s: %s", SL_WRITER_LOCK_DIR,
				 err == -EBUSY ? "another slicelimit command has been changing the pins for 10 s" :
				 strerror(-err));
			return err;
		}
		nanosleep(&poll, NULL);
	}
	writer_depth = 1;
	return 0;
}

void sl_writer_unlock(void)
{
	if (!writer_depth || --writer_depth)
		return;
	flock(writer_fd, LOCK_UN);
}

void sl_writer_forget(void)
{
	writer_depth = 0;
}

static int open_pin_dir(void)
{
	return open(SL_PIN_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int sl_pin_dir_check(void)
{
	int fd = open_pin_dir(), err;

	if (fd < 0) {
		err = -errno;
		pr_error("cannot open %s: %s%s", SL_PIN_DIR, strerror(-err),
			 sl_privilege_hint(err));
		return err;
	}
	err = check_root_dir(fd, SL_PIN_DIR, SL_PIN_DIR_FIX);
	close(fd);
	return err;
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
	err = check_root_dir(fd, SL_PIN_DIR, SL_PIN_DIR_FIX);
	if (err) {
		close(fd);
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
