/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The receiver's replay state on disk, so that it survives a restart:
 * per peer node its incarnation and the sequence numbers seen, and a
 * bound on the sending times of every datagram this node may have
 * accepted (`accepted_until_ms`, written before any datagram dated
 * later is accepted: see sl_sync_receive). One small file per node,
 * written whole to a temporary file, synced, and renamed over the old
 * one, so that a crash leaves either the old file or the new one.
 */
#ifndef SL_SYNC_REPLAY_STATE_H
#define SL_SYNC_REPLAY_STATE_H

#include <stdint.h>
#include "slicelimit.h"

struct sl_replay_peer {
	uint32_t node;
	uint64_t incarnation;
	uint64_t max_seq;
	uint64_t window;	/* bit i: max_seq - i was seen */
};

struct sl_replay_state {
	uint32_t node;			/* the receiver's own id */
	uint64_t accepted_until_ms;	/* no datagram dated later was
					 * accepted (TAI ms) */
	unsigned nr_peers;
	struct sl_replay_peer peer[SL_MAX_PEERS];
};

/* Read `path`: 0, -ENOENT when there is none, -EBADMSG when it is not a
 * whole file of this format for node `node` (torn, another node's, or
 * altered), or -errno.
 */
int sl_replay_state_load(const char *path, uint32_t node,
			 struct sl_replay_state *rs);

/* Write `rs` to `path` atomically and durably (tmp + fsync + rename +
 * fsync of the directory). 0 or -errno.
 */
int sl_replay_state_save(const char *path, const struct sl_replay_state *rs);

#endif /* SL_SYNC_REPLAY_STATE_H */
