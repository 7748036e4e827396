/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The service's sync rounds, timer to settle (user/sync/round.c). */
#ifndef SL_SYNC_ROUND_H
#define SL_SYNC_ROUND_H

#include <sys/socket.h>
#include "sync/engine.h"

struct sl_redis;

/* What a service's rounds run over: its engine and one transport. */
struct sl_sync_round {
	struct sl_sync_engine *engine;
	struct sl_redis *redis;		/* NULL: the peers, over UDP */
	int sock;			/* the peers' datagrams (-1: none) */
	int stop_fd;			/* readable: the rounds end */
	unsigned interval_ms;
	/* the peers' addresses, in the order of the engine's pair keys */
	const struct sockaddr_storage *peers;
};

/* Run rounds until stop_fd is readable: the sync thread's body. */
void sl_sync_run_rounds(struct sl_sync_round *r);

#endif /* SL_SYNC_ROUND_H */
