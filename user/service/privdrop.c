// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cap-ng.h>
#include <linux/capability.h>
#include "util/log.h"
#include "instance/pin_lock.h"
#include "service/privdrop.h"

int sl_privdrop_find(const char *name, struct sl_service_user *u)
{
	struct passwd *pw;

	memset(u, 0, sizeof(*u));
	if (strlen(name) >= sizeof(u->name))
		return -ENAMETOOLONG;
	errno = 0;
	pw = getpwnam(name);
	if (!pw)
		return errno ? -errno : -ENOENT;
	snprintf(u->name, sizeof(u->name), "%s", name);
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	u->root = pw->pw_uid == 0;
	return 0;
}

int sl_privdrop_lookup(const char *name, struct sl_service_user *u)
{
	int err = sl_privdrop_find(name, u);

	if (err == -ENAMETOOLONG) {
		pr_error("user '%s': name too long", name);
	} else if (err) {
		if (err == -ENOENT)
			pr_error("user '%s' does not exist: create it (useradd --system --no-create-home --shell /usr/sbin/nologin %s; the Debian package does), name another with --user, or keep root with --user root",
				 name, name);
		else
			pr_error("cannot look up user '%s': %s", name, strerror(-err));
	}
	return err;
}

int sl_privdrop_runtime_dir(const struct sl_service_user *u)
{
	struct stat st;
	int fd, err = 0;

	if (mkdir(SL_RUN_DIR, 0755) && errno != EEXIST)
		goto err;
	/* O_NOFOLLOW: only root writes /run, but a link there is not ours */
	fd = open(SL_RUN_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto err;
	/* readable by all: the API socket's own mode and group say who
	 * may connect; the writers' lock inside stays root's. The mode
	 * first: once the directory is the user's, root would need
	 * CAP_FOWNER (not in the unit's bounding set) to change it.
	 */
	if (fstat(fd, &st))
		err = -errno;
	else if ((st.st_uid != u->uid || st.st_gid != u->gid) &&
		 (fchmod(fd, 0755) || fchown(fd, u->uid, u->gid)))
		err = -errno;
	close(fd);
	if (!err)
		return 0;
	errno = -err;
err:
	err = -errno;
	pr_error("cannot make %s the service user's (%s): %s", SL_RUN_DIR,
		 u->name, strerror(-err));
	return err;
}

int sl_privdrop_apply(const struct sl_service_user *u)
{
	int err;

	/* set-id binaries the service might run can give nothing back */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		err = -errno;
		pr_error("cannot set no_new_privs: %s", strerror(-err));
		return err;
	}
	/* none kept: with unprivileged_bpf_disabled set, kernels since 5.19
	 * refuse only map creation and program loads to a process without
	 * CAP_BPF, not the commands on descriptors it holds (map reads and
	 * writes, BPF_PROG_TEST_RUN), which is all the service does now
	 */
	capng_clear(CAPNG_SELECT_BOTH);
	/* the user's own groups (initgroups), as systemd's User= gives
	 * them, not root's: an operator can add the user to the group its
	 * API socket is to belong to
	 */
	err = capng_change_id((int)u->uid, (int)u->gid,
			      CAPNG_INIT_SUPP_GRP | CAPNG_CLEAR_BOUNDING);
	if (err) {
		pr_error("cannot become user %s (uid %u, gid %u): libcap-ng's capng_change_id failed (%d)",
			 u->name, (unsigned)u->uid, (unsigned)u->gid, err);
		return -EPERM;
	}
	/* the drop must be for good: no way back to uid 0 */
	if (setuid(0) == 0 || getuid() != u->uid || geteuid() != u->uid ||
	    getgid() != u->gid) {
		pr_error("the drop to user %s did not hold", u->name);
		return -EPERM;
	}
	return 0;
}

void sl_privdrop_monitor_caps(void)
{
	capng_clear(CAPNG_SELECT_BOTH);
	if (capng_updatev(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED,
			  CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN, -1) ||
	    capng_apply(CAPNG_SELECT_BOTH))
		pr_warn("monitor: cannot give up the capabilities the stop does not need");
}
