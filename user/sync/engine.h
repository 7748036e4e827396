/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sync engine of one node, whatever carries its messages (UDP peers,
 * Redis, or the multi-node replay); a round, step by step, is
 * sync/round.c:
 *  - collect (sync/collect.c): read the state of each client the kernel
 *    reported changed (one record shared by every CPU), per peer slice,
 *    into one list of entries: the units accepted since the last round
 *    (include/sl_peer.h). The transport encodes that list: as sealed
 *    datagrams (sync/wire.h), or as pushes to a Redis store
 *    (sync/redis.h);
 *  - receive (sync/receive.c): admit a datagram (a configured peer, from
 *    its address, sealed with the pair's key), then check its sender
 *    incarnation and sequence: each is applied at most once) and merge
 *    it into sl_peer_view (sync/merge.c), or set a store's totals there;
 *  - settle (sync/round.c): the bounded layout's shares start over;
 *  - publish (sync/engine.c): write the health counters to
 *    sl_sync_status.
 * A restart adopts what the previous service sent (sync/restart.c).
 * Time is always passed in (TAI ms, or the replay's model ms).
 */
#ifndef SL_SYNC_ENGINE_H
#define SL_SYNC_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "instance/instance_maps.h"
#include "sl_peer.h"
#include "sync/wire.h"

struct sl_sync_opts {
	enum sl_layout layout;
	unsigned node;			/* 1..65535, unique in the fleet */
	unsigned interval_ms;
	unsigned nodes;			/* split-quota: the limit's divisor */
	unsigned peers_configured;	/* for status */
	struct sl_wire_keys keys;	/* this node and its peers: who is
					 * admitted, and each pair's keys */
	uint64_t incarnation;		/* TAI ns at start: orders restarts */
	/* the replay state's file (sync/replay_state.h), kept across
	 * restarts; NULL or "": in memory only
	 */
	const char *replay_state;
};

struct sl_sync_engine;

/* The engine over an instance's maps (kept open by the caller). Writes
 * the layout to sl_sync. NULL with errno set on failure.
 */
struct sl_sync_engine *sl_sync_new(const struct sl_maps *m,
				   const struct sl_sync_opts *o);
void sl_sync_free(struct sl_sync_engine *s);

/* A configured peer: who may hold one of the peer slots. */
struct sl_sync_member {
	uint32_t node;		/* its node id (0: any) */
	char host[48];		/* its address, as sl_sync_receive's `from`
				 * without the port ("" : any) */
};

/* Give the peer slots to these members only, each to one sender: a
 * datagram from a node id or an address no free member matches is
 * refused (rejected_unknown_peer), and a slot stays bound to the address
 * (and node id) it was given to, so that senders the config does not
 * name can neither take a configured peer's slot nor crowd it out.
 * Without a call (the replay, unit tests), any node id gets a slot while
 * one is free. Call it before the first datagram. 0 or -errno.
 */
int sl_sync_admit_only(struct sl_sync_engine *s, const struct sl_sync_member *m,
		       unsigned n);

/* ---- a round: collect -> entries -> the transport sends them ---- */

/* What a round collected, for its transport to carry: per changed client
 * (address, rule name hash, destination port) and peer slice, the units
 * accepted since the last round. The transport owns the list and
 * encodes it its own way (datagrams: sl_sync_collect; Redis batches:
 * sync/redis_round.c); a round appends to it, up to `max` entries.
 */
struct sl_sync_entries {
	struct sl_wire_entry *e;
	size_t nr, cap;
	size_t max;	/* entries past it are given up (an undercount) and
			 * counted as a send error */
};

/* Who carries a round, which says what its entries hold. */
enum sl_sync_carrier {
	/* deltas to the peers: start_ms is the units' earliest first
	 * accept (a receiver counts them until it leaves the window); the
	 * bounded layout's live nodes are the peers heard lately
	 */
	SL_SYNC_TO_PEERS,
	/* a store of totals keyed by slice (Redis), up when the round
	 * collects: start_ms is the slice's start (a lower bound too,
	 * leaving up to a slice early); every node is live
	 */
	SL_SYNC_TO_STORE,
};

/* One round: append the changed clients' units to `out`, and record
 * them as sent. On an error (-errno) `out` holds what was collected
 * before it, recorded as sent too: send it.
 */
int sl_sync_collect_entries(struct sl_sync_engine *s, uint64_t now_ms,
			    enum sl_sync_carrier to,
			    struct sl_sync_entries *out);

/* The round for peers over datagrams, its collect and send steps
 * (sync/round.c): the entries as sealed messages (sl_wire_send), each
 * passed to emit; a heartbeat when nothing changed, so peers know this
 * node is alive. 0 or -errno.
 */
int sl_sync_collect(struct sl_sync_engine *s, uint64_t now_ms,
		    sl_wire_emit_fn emit, void *ctx);

/* The round's settle step (sync/round.c): its units have reached the
 * peers and theirs this node (the service calls it a settling delay
 * after the round; replay at once): the bounded layout's shares start
 * over from what is now known to all.
 */
int sl_sync_settle(struct sl_sync_engine *s, uint64_t now_ms);

/* A service restarted over pinned maps: record what the previous one
 * sent (the slices begun by its last round, from the pinned sl_sync_status)
 * as sent, without sending it again, which would count it twice at every
 * peer; what was accepted while no service ran goes out in the next round.
 * Datagrams sent before now_ms are refused from then on.
 */
int sl_sync_adopt(struct sl_sync_engine *s, uint64_t now_ms);

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
	SL_SYNC_STALE = 104,		/* sent too long ago, or before we started
					 * (or before the previous run's last
					 * accepted datagram) */
	SL_SYNC_UNKNOWN = 105,		/* a sender the config does not name */
};

/* How far a sender's clock may run ahead of ours, or a message be late:
 * TAI from NTP or PTP agrees to milliseconds, and a round's datagrams
 * arrive within it. A message from further ahead is refused, so that
 * slices "from the future" cannot be parked in the peer view; one older
 * is refused as stale, so that a replay captured before this node
 * restarted (its replay window is in memory) cannot count again.
 */
#define SL_SYNC_MAX_SKEW_MS	SL_PEER_MAX_AHEAD_MS
/* Checked, in order: the tag; not our own id; sent_ms within the skew of
 * now and after this run's start (and after every datagram a previous
 * run may have accepted); the sender's incarnation (its start) not after
 * its sent_ms; a peer slot (sl_sync_admit_only); the sequence. Each entry
 * is then cut to what a node can accept of its client, less what the peer
 * view still counts of the same peer's reports of it (clamped_entries;
 * sync/peer_units.h), and
 * one that would add a client to sl_peer_view past its sender's share of
 * the map is refused (view_capped): see sl_sync_merge_entry.
 */
int sl_sync_receive(struct sl_sync_engine *s, const uint8_t *msg, size_t len,
		    const char *from, uint64_t now_ms);

/* Merge decoded entries from a store that keeps totals (Redis): `units`
 * are the other nodes' totals of the slice, set rather than added.
 */
void sl_sync_merge_totals(struct sl_sync_engine *s,
			  const struct sl_wire_entry *e, unsigned n,
			  uint64_t now_ms);

/* A store's transport on the store, for status (backend_*). */
struct sl_sync_store {
	bool up;
	uint64_t errors;	/* failed round trips, since the start */
	uint64_t reconnects;
};
void sl_sync_store_report(struct sl_sync_engine *s,
			  const struct sl_sync_store *st);

struct sl_sync_status *sl_sync_status(struct sl_sync_engine *s);

/* Write the status to the pinned sl_sync_status map. */
int sl_sync_publish(struct sl_sync_engine *s, uint64_t now_ms);

const char *sl_layout_name(unsigned layout);
int sl_parse_layout(const char *s, enum sl_layout *layout);

#endif /* SL_SYNC_ENGINE_H */
