// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A listening TCP socket for the service's listeners (the HTTP API and
 * the rate limit service alike): non-blocking, an IPv6 one IPv6 only.
 */
#include <errno.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "util/tcp_listen.h"

int sl_tcp_listen(const struct sockaddr_storage *addr)
{
	socklen_t len = addr->ss_family == AF_INET6 ?
			sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	int fd, one = 1, err;

	fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)addr, len) ||
	    listen(fd, SOMAXCONN)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}
