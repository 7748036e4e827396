/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A peer's socket address: its length for sendto and bind, and its name
 * ("ADDR:PORT", "[ADDR]:PORT") as the config writes it.
 */
#ifndef SL_SYNC_PEER_ADDR_H
#define SL_SYNC_PEER_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

socklen_t sl_peer_addr_len(const struct sockaddr_storage *ss);
void sl_peer_addr_format(const struct sockaddr_storage *ss, char *buf,
			 size_t len);

#endif /* SL_SYNC_PEER_ADDR_H */
