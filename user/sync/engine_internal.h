/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sync engine's state, shared by the files that each do one of its
 * jobs (engine.c, collect.c, peer_view.c, merge.c, receive.c, restart.c,
 * round.c); nothing outside user/sync/ includes it: the engine's
 * interface is sync/engine.h.
 */
#ifndef SL_SYNC_ENGINE_INTERNAL_H
#define SL_SYNC_ENGINE_INTERNAL_H

#include <stdbool.h>
#include "state/aggregate.h"
#include "sl_key.h"
#include "sl_peer.h"
#include "sync/client_hash.h"
#include "sync/engine.h"
#include "sync/peer_units.h"
#include "sync/replay_state.h"

/* What this node last reported of a client, per peer slice: the next
 * round sends only what grew. `accepted` (the client's accept counter)
 * tells in one compare whether anything changed at all.
 */
struct sent_client {
	struct sl_client_key key;
	__u32 accepted;
	bool in_use;
	__u64 changed_ms;
	struct sl_slot sent[SL_PEER_SLOTS];
};

/* Replay protection per sender: its incarnation, the highest sequence
 * seen, and which of the 64 below it were seen (as IPsec does).
 */
struct peer_seen {
	__u64 incarnation;
	__u64 max_seq;
	__u64 window;		/* bit i: max_seq - i was seen */
};

struct rule_ref {
	__u32 hash;
	__u16 id;
	__u8 algorithm;
	__u32 window_ms;
	struct sl_rule rule;
};

struct sl_sync_engine {
	struct sl_maps maps;		/* a copy: fds owned by the caller */
	struct sl_sync_opts o;
	struct sl_sync_conf conf;	/* what sl_sync holds: the layout, and
					 * the round that marks changed clients */
	struct sl_changed *changed;	/* the reader of sl_changed */
	struct sl_wire_sender sender;	/* node, incarnation, key, sequence */
	struct sl_sync_status st;
	bool store_reported;	/* st.backend_up holds a round's report */
	struct peer_seen seen[SL_MAX_PEERS];

	/* who may hold a peer slot (sl_sync_admit_only) */
	bool admit_set;
	struct sl_sync_member members[SL_MAX_PEERS];
	unsigned nr_members;
	unsigned member_of[SL_MAX_PEERS];	/* slot -> member index + 1 */

	/* sl_peer_view entries per node id that made them (the entry's
	 * pad), and how many one peer may make: see view_share()
	 */
	__u32 *view_entries;
	__u64 view_share;

	/* the replay state on disk (sync/replay_state.h) */
	char *state_path;		/* NULL: memory only */
	__u64 accepted_until_ms;	/* as written: no datagram dated later
					 * is accepted before it is moved */
	bool state_warned;		/* a failed write was logged */
	struct sl_replay_state restored;	/* the previous run's windows */

	/* what each peer reported per client lately: the cap of a peer's
	 * entries is over its datagrams, not per datagram (merge_entry)
	 */
	struct peer_units_table peer_units;

	struct sent_client *table;	/* open addressing, power of two */
	struct sl_client_hash hash;	/* its keyed hash */
	size_t cap, used, max_cap;

	struct rule_ref *rules;		/* live rules */
	unsigned nr_rules;
	__u32 rules_epoch;		/* of the rules read */
	struct rule_ref *by_id[SL_MAX_RULES];

	struct sl_wire_entry in[SL_WIRE_MAX_ENTRIES];	/* decoded */
	struct sl_sync_entries datagrams;	/* sl_sync_collect's round */
	/* the round being collected, into `out` (NULL: sl_sync_adopt's,
	 * which sends nothing)
	 */
	struct sl_sync_entries *out;
	enum sl_sync_carrier to;
	bool out_full;		/* entries were given up: a send error */
	__u64 now_ms;
	__u64 prev_ms;		/* when the previous round began */
	__u64 before_prev_ms;	/* and the one before: a peer heard since
				 * is live (bounded) */
	__u64 started_ms;	/* sl_sync_adopt: older messages are refused */
	bool walk_all;		/* the next round reads every client, not
				 * only sl_changed's */
	__u64 sent_until_ms;	/* the previous service's last round */
};

/* engine.c: re-read the live rules when their epoch moved (0 or
 * -errno), and a live rule by its name's hash (NULL: none).
 */
int sl_sync_refresh_rules(struct sl_sync_engine *s);
const struct rule_ref *sl_sync_rule_by_hash(const struct sl_sync_engine *s,
					    __u32 hash);

/* collect.c: the round, the rules read, into `out` (NULL: nothing is
 * sent, only recorded as sent), then every round's housekeeping.
 */
int sl_sync_collect_into(struct sl_sync_engine *s, uint64_t now_ms,
			 enum sl_sync_carrier to, struct sl_sync_entries *out);

/* peer_view.c: how many sl_peer_view entries one node's reports may
 * make, and the sweep of entries that no longer count.
 */
__u64 sl_sync_view_share(struct sl_sync_engine *s);
int sl_sync_sweep_peer_view(struct sl_sync_engine *s, __u64 now_ms);

/* merge.c: one entry into sl_peer_view (`from`: the peer that sent it,
 * NULL for this node's own or a store's totals), and under bounded the
 * round's own entries from index `from` on.
 */
void sl_sync_merge_entry(struct sl_sync_engine *s,
			 const struct sl_wire_entry *e, bool set,
			 __u64 now_ms, int how, struct sl_sync_peer *from);
void sl_sync_merge_own(struct sl_sync_engine *s,
		       const struct sl_sync_entries *l, size_t from,
		       __u64 now_ms);

/* restart.c: move the bound on the dates of accepted datagrams past
 * `sent_ms`, on disk, before that datagram is taken.
 */
void sl_sync_replay_state_lease(struct sl_sync_engine *s, __u64 sent_ms,
				__u64 now_ms);

#endif /* SL_SYNC_ENGINE_INTERNAL_H */
