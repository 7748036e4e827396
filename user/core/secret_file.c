// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "core/secret_file.h"

/* The service's user when it drops root to it; 0: it does not. */
static uid_t service_uid;

void sl_secret_set_service_uid(uid_t uid)
{
	service_uid = uid;
}

static enum sl_secret_problem secret_problem(const struct stat *st)
{
	if (!S_ISREG(st->st_mode))
		return SL_SECRET_NOT_REGULAR;
	if (service_uid) {
		if (st->st_uid != service_uid)
			return st->st_uid == 0 || st->st_uid == geteuid() ?
			       SL_SECRET_NOT_SERVICE : SL_SECRET_OWNER;
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
		snprintf(buf, len, "'%s' is owned by uid %u, but the service reads it again as its user (uid %u) when it reloads: chown %u it (mode 600)",
			 path, (unsigned)st->st_uid, (unsigned)service_uid,
			 (unsigned)service_uid);
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
