/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SL_UTIL_TCP_LISTEN_H
#define SL_UTIL_TCP_LISTEN_H

#include <sys/socket.h>

/* A non-blocking listening socket bound to `addr` (SO_REUSEADDR; an IPv6
 * address IPv6 only), or -errno.
 */
int sl_tcp_listen(const struct sockaddr_storage *addr);

#endif
