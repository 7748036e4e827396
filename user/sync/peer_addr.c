// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A peer's socket address: its length, and its name as the config
 * writes it.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include "sync/peer_addr.h"

socklen_t sl_peer_addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

void sl_peer_addr_format(const struct sockaddr_storage *ss, char *buf,
			 size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port;

	if (ss->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)ss)->sin6_addr)) {
		/* an IPv4 peer reaching a socket bound to [::] is named as
		 * the config names it
		 */
		const struct sockaddr_in6 *a = (const void *)ss;

		inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], host,
			  sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(a->sin6_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		const struct sockaddr_in *a = (const void *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
		snprintf(buf, len, "%s:%u", host, port);
	}
}
