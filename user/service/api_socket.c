// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "service/api_socket.h"

static int fill_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memcpy(sa->sun_path, path, strlen(path));
	return 0;
}

/* A file at PATH from an earlier run: removed when it is a socket nobody
 * answers on. 0 (nothing there now), -EADDRINUSE, -EEXIST, -errno.
 */
static int clear_stale(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, err;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	/* a regular file or a link is someone else's: never unlinked */
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) ? -errno : 0;
	close(fd);
	if (!err)
		return -EADDRINUSE;	/* a live instance: refused */
	if (err != -ECONNREFUSED)
		return err;
	/* nobody listens: the file of an instance that died */
	return unlink(path) && errno != ENOENT ? -errno : 0;
}

static int make_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int sl_api_socket_listen(const char *path, unsigned mode, bool group_set,
			 unsigned gid)
{
	struct sockaddr_un sa;
	mode_t old;
	int fd, err;

	err = fill_addr(path, &sa);
	if (!err)
		err = make_parent(path);
	if (!err)
		err = clear_stale(path, &sa);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* the file is created owner-only and opened up to MODE after its
	 * group is set: never, even for an instant, wider than asked. The
	 * umask is the process's: no other thread creates files yet.
	 */
	old = umask(0177);
	err = bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old);
	if (err)
		goto fail;
	if ((group_set && chown(path, (uid_t)-1, gid)) || chmod(path, mode)) {
		err = -errno;
		unlink(path);
		goto fail;
	}
	if (listen(fd, SOMAXCONN)) {
		err = -errno;
		unlink(path);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

void sl_api_socket_remove(const char *path)
{
	struct stat st;

	if (!lstat(path, &st) && S_ISSOCK(st.st_mode))
		unlink(path);
}
