// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "util/secret_file.h"

/* The service's user and group when it drops root to them; 0: it does
 * not.
 */
static uid_t service_uid;
static gid_t service_gid;

void sl_secret_set_service_user(uid_t uid, gid_t gid)
{
	service_uid = uid;
	service_gid = gid;
}

/* Root's, and readable by the service's group only: root reads it at
 * the start without CAP_DAC_OVERRIDE (not in the unit's bounding set),
 * the service's user through its group after the drop.
 */
static bool shared_with_service(const struct stat *st)
{
	return st->st_uid == 0 && st->st_gid == service_gid &&
	       (st->st_mode & S_IRGRP) &&
	       !(st->st_mode & (S_IWGRP | S_IXGRP | S_IRWXO));
}

static enum sl_secret_problem secret_problem(const struct stat *st)
{
	if (!S_ISREG(st->st_mode))
		return SL_SECRET_NOT_REGULAR;
	if (service_uid) {
		if (shared_with_service(st))
			return SL_SECRET_OK;
		if (st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IRWXO)))
			return SL_SECRET_NOT_SERVICE;
		if (st->st_uid != service_uid && st->st_uid != 0)
			return SL_SECRET_OWNER;
	} else if (st->st_uid != 0 && st->st_uid != geteuid()) {
		return SL_SECRET_OWNER;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return SL_SECRET_WRITABLE;
	if (st->st_mode & (S_IRGRP | S_IROTH))
		return SL_SECRET_READABLE;
	return SL_SECRET_OK;
}

int sl_secret_open(const char *path, struct stat *st,
		   enum sl_secret_problem *problem)
{
	int fd, err;

	*problem = SL_SECRET_OK;
	/* O_NONBLOCK: a FIFO put in its place does not hang the open */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
		  O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st)) {
		err = -errno;
		close(fd);
		return err;
	}
	*problem = secret_problem(st);
	if (*problem) {
		close(fd);
		return -EACCES;
	}
	return fd;
}

static const char *who(mode_t mode, mode_t other)
{
	return mode & other ? "every user" : "its group";
}

void sl_secret_describe(char *buf, size_t len, const char *path, int err,
			const struct stat *st, enum sl_secret_problem problem)
{
	unsigned mode = st ? (unsigned)(st->st_mode & 07777) : 0;

	if (err == -ELOOP) {
		snprintf(buf, len, "'%s' is a symbolic link: name the file itself",
			 path);
		return;
	}
	if (err != -EACCES || !st || !problem) {
		snprintf(buf, len, "cannot open '%s': %s", path, strerror(-err));
		return;
	}
	switch (problem) {
	case SL_SECRET_NOT_REGULAR:
		snprintf(buf, len, "'%s' is not a regular file", path);
		break;
	case SL_SECRET_OWNER:
		snprintf(buf, len, "'%s' is owned by uid %u, not by root or this service's user (uid %u): chown it",
			 path, (unsigned)st->st_uid,
			 (unsigned)(service_uid ? service_uid : geteuid()));
		break;
	case SL_SECRET_NOT_SERVICE:
		snprintf(buf, len, "'%s' is root's and its group (gid %u) may not read it, but the service reads it again as its user (uid %u, gid %u) when it reloads: chgrp %u it and chmod 640",
			 path, (unsigned)st->st_gid, (unsigned)service_uid,
			 (unsigned)service_gid, (unsigned)service_gid);
		break;
	case SL_SECRET_WRITABLE:
		snprintf(buf, len, "'%s' is writable by %s (mode %04o): chmod 600 it",
			 path, who(st->st_mode, S_IWOTH), mode);
		break;
	default:
		snprintf(buf, len, "'%s' is readable by %s (mode %04o): chmod 600 it",
			 path, who(st->st_mode, S_IROTH), mode);
		break;
	}
}
