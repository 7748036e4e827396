/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sync engine of one node, whatever carries its messages (UDP peers,
 * Redis, or the multi-node replay):
 *  - collect: walk the client tables, sum each changed client's per-CPU
 *    state per peer slice, and emit the units accepted since the last
 *    round as signed messages (include/sl_peer.h, user/sync/wire.h);
 *  - receive: check a message (tag, then sender incarnation and sequence:
 *    each is applied at most once) and merge it into sl_peer_view;
 *  - publish: write the health counters to sl_sync_status.
 * Time is always passed in (TAI ms, or the replay's model ms).
 */
#ifndef SL_SYNC_H
#define SL_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/instance_maps.h"
#include "sl_peer.h"
#include "sync/wire.h"

struct sl_sync_opts {
	enum sl_layout layout;
	unsigned node;			/* 1..65535, unique in the fleet */
	unsigned interval_ms;
	unsigned nodes;			/* split-quota: the limit's divisor */
	unsigned peers_configured;	/* for status */
	uint8_t key[SL_WIRE_KEY];
	uint64_t incarnation;		/* TAI ns at start: orders restarts */
};

struct sl_sync;

/* The engine over an instance's maps (kept open by the caller). Writes
 * the layout to sl_sync. NULL with errno set on failure.
 */
struct sl_sync *sl_sync_new(const struct sl_maps *m,
			    const struct sl_sync_opts *o);
void sl_sync_free(struct sl_sync *s);

/* Called with each datagram to send; a non-zero return is counted as a
 * send error, and the round goes on.
 */
typedef int (*sl_sync_emit_fn)(void *ctx, const uint8_t *msg, size_t len);

/* One round: emit the changed clients' units (a heartbeat when nothing
 * changed, so peers know this node is alive). 0 or -errno.
 */
int sl_sync_collect(struct sl_sync *s, uint64_t now_ms, sl_sync_emit_fn emit,
		    void *ctx);

/* The round's units have reached the peers and theirs this node (the
 * service calls it a settling delay after the round; replay at once):
 * the bounded layout's shares start over from what is now known to all.
 */
int sl_sync_settle(struct sl_sync *s, uint64_t now_ms);

/* The same round for a store that keeps totals (Redis): the entries
 * (units accepted since the last round) in batches of at most
 * SL_WIRE_MAX_ENTRIES, unsigned; nothing for a heartbeat.
 */
typedef int (*sl_sync_emit_entries_fn)(void *ctx,
				       const struct sl_wire_entry *e,
				       unsigned n);
int sl_sync_collect_entries(struct sl_sync *s, uint64_t now_ms,
			    sl_sync_emit_entries_fn emit, void *ctx);

/* A service restarted over pinned maps: record what the previous one
 * sent (the slices begun by its last round, from the pinned sl_sync_status)
 * as sent, without sending it again, which would count it twice at every
 * peer; what was accepted while no service ran goes out in the next round.
 * Datagrams sent before now_ms are refused from then on.
 */
int sl_sync_adopt(struct sl_sync *s, uint64_t now_ms);

/* Check and merge one datagram from `from` (for status). Returns
 * SL_WIRE_OK when merged, else why it was refused (SL_WIRE_* or one of
 * the engine's reasons below); every refusal is counted.
 */
enum sl_sync_verdict {
	SL_SYNC_MERGED = 0,
	SL_SYNC_REPLAYED = 100,		/* seen, too old, or older incarnation */
	SL_SYNC_OWN = 101,		/* carries this node's id */
	SL_SYNC_TOO_MANY_PEERS = 102,
	SL_SYNC_FUTURE = 103,		/* sent too far ahead of our clock */
	SL_SYNC_STALE = 104,		/* sent too long ago, or before we started */
};

/* How far a sender's clock may run ahead of ours, or a message be late:
 * TAI from NTP or PTP agrees to milliseconds, and a round's datagrams
 * arrive within it. A message from further ahead is refused, so that
 * slices "from the future" cannot be parked in the peer view; one older
 * is refused as stale, so that a replay captured before this node
 * restarted (its replay window is in memory) cannot count again.
 */
#define SL_SYNC_MAX_SKEW_MS	SL_PEER_MAX_AHEAD_MS
int sl_sync_receive(struct sl_sync *s, const uint8_t *msg, size_t len,
		    const char *from, uint64_t now_ms);

/* Merge decoded entries from a store that keeps totals (Redis): `units`
 * are the other nodes' totals of the slice, set rather than added.
 */
void sl_sync_merge_totals(struct sl_sync *s, const struct sl_wire_entry *e,
			  unsigned n, uint64_t now_ms);

struct sl_sync_status *sl_sync_status(struct sl_sync *s);

/* Write the status to the pinned sl_sync_status map. */
int sl_sync_publish(struct sl_sync *s, uint64_t now_ms);

const char *sl_layout_name(unsigned layout);
int sl_parse_layout(const char *s, enum sl_layout *layout);

#endif /* SL_SYNC_H */
