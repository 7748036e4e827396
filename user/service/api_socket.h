/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The check API's Unix socket: who may connect is who may open the file,
 * so its mode and group are the API's access control (nginx's workers in
 * the group). A socket file left by an instance that died is replaced; one
 * that an instance still answers on is not.
 */
#ifndef SL_SERVICE_API_SOCKET_H
#define SL_SERVICE_API_SOCKET_H

#include <stdbool.h>

/* Bind and listen on PATH (its directory created, 0755, when missing),
 * the file given MODE and, when GROUP_SET, group GID. The listening
 * descriptor (non-blocking, close-on-exec), or -EADDRINUSE (an instance
 * answers on PATH), -EEXIST (PATH is not a socket: left alone), -errno.
 */
int sl_api_socket_listen(const char *path, unsigned mode, bool group_set,
			 unsigned gid);

/* At stop: remove the socket file if a socket is still at PATH (one
 * instance runs per pin directory, so it is this one's).
 */
void sl_api_socket_remove(const char *path);

#endif /* SL_SERVICE_API_SOCKET_H */
