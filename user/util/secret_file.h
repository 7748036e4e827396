/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Opening a file that holds a secret (the sync key, the Redis password):
 * the file itself, never a symbolic link to it, owned by root or by the
 * user the service runs as, and neither writable nor readable by its
 * group or by others (but for the service's group when the service drops
 * root: sl_secret_set_service_user). Everything is checked on the open descriptor
 * (fstat), so the file checked is the file read: a rename or a link
 * swapped in between is not followed.
 */
#ifndef SL_UTIL_SECRET_FILE_H
#define SL_UTIL_SECRET_FILE_H

#include <stddef.h>
#include <sys/stat.h>

/* What is wrong with a secret file that opened. */
enum sl_secret_problem {
	SL_SECRET_OK = 0,
	SL_SECRET_NOT_REGULAR,	/* a directory, a device, a FIFO */
	SL_SECRET_OWNER,	/* owned by neither root nor this user */
	SL_SECRET_WRITABLE,	/* group or others may write it */
	SL_SECRET_READABLE,	/* group or others may read it */
	SL_SECRET_NOT_SERVICE,	/* root's, but the service's group may not
				 * read it, though the service reads it
				 * again as its user on a reload */
};

/* The service runs as UID:GID once it dropped root, and reads the
 * secrets again as that user when it reloads. From here on a secret is
 * root's with mode 0640 (or 0440) and group GID: root reads it at the
 * start, and the user through its group. A root-owned 0600 one, which
 * would open now and fail at the next reload, is refused. One of the
 * user's own (0600) is accepted too, though root without
 * CAP_DAC_OVERRIDE (the unit's) cannot open it at the start.
 */
void sl_secret_set_service_user(uid_t uid, gid_t gid);

/* Open `path` read-only without following a symbolic link, and check it.
 * Returns the descriptor; or -errno when it does not open (-ELOOP: the
 * path is a symbolic link); or -EACCES with *problem and *st set when it
 * opened but is not fit to hold a secret (the descriptor is closed).
 */
int sl_secret_open(const char *path, struct stat *st,
		   enum sl_secret_problem *problem);

/* One line saying what is wrong with `path` and what to do about it, for
 * an error sl_secret_open() returned: `err`, and for -EACCES the *st and
 * *problem it set.
 */
void sl_secret_describe(char *buf, size_t len, const char *path, int err,
			const struct stat *st, enum sl_secret_problem problem);

#endif /* SL_UTIL_SECRET_FILE_H */
