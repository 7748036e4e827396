/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The service's drop from root to its own user, once the programs are
 * loaded and attached and the pins it needs are open: what it parses
 * after that (HTTP, sync datagrams, Redis replies, a reloaded config)
 * reaches an unprivileged process. docs/SECURITY.md says what it keeps.
 */
#ifndef SL_SERVICE_PRIVDROP_H
#define SL_SERVICE_PRIVDROP_H

#include <stdbool.h>
#include <sys/types.h>

/* The user when neither --user nor SLICELIMIT_USER names one; the
 * Debian package creates it (a system user with no login).
 */
#define SL_SERVICE_USER		"slicelimit"

struct sl_service_user {
	char name[32];
	uid_t uid;
	gid_t gid;
	bool root;		/* --user root: no drop, every privilege kept */
};

/* NAME's ids. -ENOENT when there is no such user (reported, with the
 * fix), -ENAMETOOLONG, or -errno.
 */
int sl_privdrop_lookup(const char *name, struct sl_service_user *u);
/* The same, reporting nothing. */
int sl_privdrop_find(const char *name, struct sl_service_user *u);
/* SL_RUN_DIR made (if missing) and given to U, so that what the service
 * creates there after the drop (its API socket) it may create. 0 or
 * -errno (reported).
 */
int sl_privdrop_runtime_dir(const struct sl_service_user *u);
/* Become U for good: its uid, gid and supplementary groups, no new
 * privileges, and no capabilities (effective, permitted, bounding: no
 * exec gets any back). Call before any thread starts: ids and
 * capabilities are per thread. 0 or -errno (reported).
 */
int sl_privdrop_apply(const struct sl_service_user *u);

/* The monitor (root, forked before the drop; it detaches and unpins at
 * the stop): of the capabilities only CAP_BPF, CAP_NET_ADMIN and
 * CAP_SYS_ADMIN (libxdp reads the programs on a device by id). Reported
 * when it cannot, and then it keeps what it had.
 */
void sl_privdrop_monitor_caps(void);

#endif /* SL_SERVICE_PRIVDROP_H */
