/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Types shared by the BPF programs and userspace: map keys and values,
 * rules, configuration and counters. Plain fixed-size types only, explicit
 * padding, byte order stated per field, so the same bytes mean the same
 * thing on both sides and `bpftool map dump` prints named fields from BTF.
 */
#ifndef SLICELIMIT_H
#define SLICELIMIT_H

#include <linux/types.h>
#include <linux/bpf.h>	/* struct bpf_spin_lock */

#define SL_PIN_DIR		"/sys/fs/bpf/slicelimit"

/* Rules are matched by bitmaps: bit i of a bitmap is the rule at priority
 * position i. A packet's candidate set is the AND of the bitmaps that its
 * port, source and destination select; the first set bit wins. The cost is
 * SL_RULE_WORDS word operations whatever the number of rules loaded.
 */
#define SL_MAX_RULES		1024
#define SL_RULE_WORDS		(SL_MAX_RULES / 64)

/* Two copies of every rule table; sl_active picks the live one, so
 * `rules apply` fills the idle copy and switches with one word write.
 */
#define SL_GENS			2

/* Port-class table layout, per generation: TCP ports, UDP ports, then one
 * slot for ICMP/ICMPv6 and one for every other protocol.
 */
#define SL_SLOT_TCP		0
#define SL_SLOT_UDP		65536
#define SL_SLOT_ICMP		131072
#define SL_SLOT_OTHER		131073
#define SL_PORT_SLOTS		131074

/* Each rule splits its protocol's port space at most twice, so a rule set
 * has at most 2 * (2 * SL_MAX_RULES + 1) + 2 distinct port classes. Class 0
 * is reserved for "no rule can match": the no-rule path stops there.
 */
#define SL_MAX_CLASSES		4104

/* Per-client records of the sliding algorithm; 12 gives the 1.1 x bound
 * (see include/sl_algo.h).
 */
#define SL_RECORDS		12

#define SL_DEFAULT_CLIENTS	262144
#define SL_MAX_CPUS		256

/* Longest window: record times are u32 milliseconds compared by wrapping
 * difference, exact while ages stay below 2^31 ms (24.8 days); a CPU's
 * records can be up to two windows old, so a window is at most 12 days.
 */
#define SL_MAX_WINDOW_MS	(12ULL * 24 * 3600 * 1000)

/* Longest step back of the clock (NTP, PTP, an operator) that a client's
 * state keeps counting through: its counts stay, in the windows they were
 * made in, so the client is held at most its window plus the step. A
 * longer step back forgets the state (include/sl_algo.h,
 * sl_client_idle): every u32 number derived from the clock in a state
 * then stays within 2^31 of now's, where wrapping differences are exact
 * (at most SL_MAX_WINDOW_MS, or two windows for a sliding record, behind
 * and this far ahead).
 */
#define SL_MAX_STEP_MS		SL_MAX_WINDOW_MS

enum sl_algorithm {
	SL_ALGO_SLIDING = 0,		/* slices with first-accept times: the default */
	SL_ALGO_SLIDING_PLAIN = 1,	/* the design study's plain slice sum */
	SL_ALGO_FIXED = 2,		/* fixed window */
	SL_ALGO_TOKEN_BUCKET = 3,	/* continuous refill (GCRA) */
	SL_ALGO_SLIDING_LOG = 4,	/* exact log of accept times */
	SL_ALGO_SLIDING_COUNTER = 5,	/* two windows, previous weighted */
	SL_ALGO__COUNT,
};

/* sliding-plain and sliding-counter keep one counter per slice;
 * sliding-log one time per accept. They live in maps of their own
 * (sl_clients_plain, sl_clients_log)
 * so that their size is paid only by the clients of rules that use them.
 */
#define SL_MAX_PLAIN_SLICES	64
#define SL_MAX_LOG		4096

enum sl_action {
	SL_ACTION_DROP = 0,
	SL_ACTION_SHADOW = 1,	/* count and report, never drop */
};

enum sl_unit {
	SL_UNIT_PACKETS = 0,
	SL_UNIT_SYN = 1,	/* TCP SYN without ACK: new connections */
	SL_UNIT_BYTES = 2,
};

enum sl_protocol {
	SL_PROTO_ANY = 0,
	SL_PROTO_TCP = 1,
	SL_PROTO_UDP = 2,
	SL_PROTO_ICMP = 3,	/* ICMP and ICMPv6 */
};

struct sl_bitmap {
	__u64 word[SL_RULE_WORDS];
};

/* Addresses everywhere are 16 bytes in network byte order; IPv4 is stored
 * IPv4-mapped (::ffff:a.b.c.d) so one key type covers both families and an
 * IPv4 /24 is an IPv6 /120. Four-aligned (every struct holds it at a
 * multiple of four, so no layout moves): copies and masks of it are then
 * four or two words, not sixteen bytes one by one, which BPF code pays
 * for on every packet's key.
 */
struct sl_addr {
	__u8 byte[16];
} __attribute__((aligned(4)));

/* LPM trie key of the source, destination and exempt tables. The generation
 * is the first byte of the data, so prefixlen = 8 + address bits.
 */
struct sl_lpm_key {
	__u32 prefixlen;	/* host byte order */
	__u8 gen;
	__u8 addr[16];		/* network byte order */
	__u8 pad[3];
};

/* One rule, as the kernel reads it: array sl_rules, index
 * gen * SL_MAX_RULES + priority position. The match fields are compiled
 * into the bitmap tables; they are kept here so that `rules list` and a
 * bpftool dump describe the running rule in full.
 */
struct sl_rule {
	char name[32];
	__u64 limit;		/* units per window */
	__u32 window_ms;
	__u32 slice_ms;		/* window / slices */
	__u16 id;		/* stable across applies: stats index, client key */
	__u8 algorithm;		/* enum sl_algorithm */
	__u8 action;		/* enum sl_action */
	__u8 unit;		/* enum sl_unit */
	__u8 key_ipv4_prefix;	/* source bits kept in the client key */
	__u8 key_ipv6_prefix;
	__u8 key_by_port;	/* destination port is part of the client key */
	__u8 protocol;		/* enum sl_protocol */
	__u8 src_prefixlen;	/* 0..128 over src, 0 = any */
	__u8 dst_prefixlen;
	__u8 nr_exempt;
	__u16 port_min;		/* host byte order; 0..65535 = any */
	__u16 port_max;
	__u32 priority;
	__u8 continues;		/* after this rule passes a packet, apply the
				 * next rule that matches it too (stacking a
				 * per-prefix rule on a per-address one) */
	__u8 api_key_is_address;	/* userspace only: a check API key that
				 * parses as an address charges that
				 * address's packet state; else it is
				 * hashed like any other key */
	__u8 pad[2];
	__u64 bucket_capacity;	/* token-bucket: burst, in units */
	__u64 token_ns;		/* token-bucket: refill interval per unit */
	struct sl_addr src;
	struct sl_addr dst;
};

/* Client key of sl_clients. */
struct sl_client_key {
	struct sl_addr addr;	/* source masked to the rule's prefix */
	__u16 rule_id;		/* host byte order */
	__u16 dport;		/* network byte order; 0 unless key_by_port */
};

/* One slice of the sliding algorithm: 8 bytes, two in a word. What
 * only the open record needs (the accept sequence it opened at) is kept
 * once, in the state (struct sl_client, open_seq).
 */
struct sl_record {
	__u32 first_ms;		/* model/TAI ms of the slice's first accept,
				 * cut to u32 (wraps every 49.7 days): read by
				 * wrapping difference, within two windows
				 * behind and SL_MAX_STEP_MS ahead of now in a
				 * counting state (include/sl_algo.h) */
	__u32 count;		/* units accepted into this slice */
};

/* sliding-plain and sliding-counter: one counter per slice, ring indexed
 * by slice number (token-bucket: per peer slice, see sl_bucket; fixed: the
 * window last counted in). Slice and count are one aligned 64-bit word, so
 * that a CPU takes a slot over for a new slice with one compare-and-swap
 * of both (sl_slot_add in include/sl_algo.h) and no other CPU's add is
 * lost to it.
 */
struct sl_slot {
	__u32 slice;		/* now_ms / slice_ms (fixed: / window_ms) cut
				 * to u32: past 2^31 at today's clock for
				 * short slices, wraps every 2^32 slices;
				 * read by wrapping difference, a slot ahead
				 * believed only with a count and within
				 * sl_max_ahead (include/sl_algo.h) */
	__u32 count;
} __attribute__((aligned(8)));

/* token-bucket as GCRA: the theoretical arrival time; and the node's own
 * accepts per peer slice (sl_bucket_slice_ms), ring indexed by slice
 * number, which the fleet's level is taken over together with the peers'
 * (include/sl_peer.h, sl_peer_tally_bucket). Fits the union beside the
 * sliding records: the state does not grow.
 */
#define SL_BUCKET_SLOTS		16

struct sl_bucket {
	__u64 tat_ns;		/* ns on the model/TAI clock: no wrap (2^64 ns
				 * is 584 years); a step back leaves it ahead:
				 * held the refill time plus the step */
	struct sl_slot slot[SL_BUCKET_SLOTS];	/* peer slices, read only by
				 * the sender within the ring behind now's
				 * slice: one ahead (a step back) is not sent,
				 * one exactly 2^32 slices old is sent again */
};

/* The header every client state starts with (all three maps). What the
 * over-limit check reads (blocked_*) and what an accept of a host without
 * peers reads and writes (last_ms, accepted, current) come first, in the
 * value's first 32 bytes; event_ms is read once per block; the sync and
 * share-round words are read only by a host that syncs (bpf/limit.h,
 * sl_note_round), and sit behind.
 */
#define SL_CLIENT_HEADER						\
	__u64 last_ms;		/* last accept, model/TAI ms: no wrap; what	\
				 * tells a counting state (sl_client_idle) */	\
	__u64 blocked_until;	/* cache: over the limit until the low 40	\
				 * bits, on bpf/clock.h's cache clock (exact	\
				 * within 2^39 units of now, about 17 years);	\
				 * the high 24 check the generation's halves	\
				 * below (bpf/limit.h) */			\
	__u32 accepted;		/* units accepted, wrapping */			\
	__u32 blocked_epoch;	/* the block's generation: rules epoch */	\
	__u32 blocked_sync;	/* ... and sync conf (sl_generation) */		\
	__u32 current;		/* sliding: open record; log: first valid */	\
	__u32 event_ms;		/* last drop event sent for this client, u32	\
				 * ms: wraps every 49.7 days; an event 2^32 ms	\
				 * old reads as new and holds the next one	\
				 * back for a window (events only) */		\
	__u32 sync_round;	/* sync round of the last accept: its key	\
				 * went to sl_changed (see sl_sync_conf);	\
				 * compared for equality: a state untouched	\
				 * for exactly 2^32 rounds (over a year at	\
				 * the shortest interval) misses one send */	\
	__u32 share_round;	/* bounded: share round of the last accept,	\
				 * compared for equality with sl_sync_conf's:	\
				 * at 2^32 rounds on, the old round_units	\
				 * count for one round, holding back, never	\
				 * letting more through */			\
	__u32 round_units;	/* units accepted in that share round: what	\
				 * peers do not know of yet */

struct sl_client_hdr {
	SL_CLIENT_HEADER
};

/* Client state, one per client shared by every CPU (sl_clients is an LRU
 * hash; see include/sl_algo.h for why not per CPU, and for the sliding
 * part's running total and its proof).
 */
struct sl_client {
	SL_CLIENT_HEADER
	union {
		struct {			/* sliding */
			__u32 total;	/* the records' counts summed: what
					 * the window holds while no record
					 * has left it (sl_sliding_tally) */
			__u32 oldest_ms; /* first_ms of the earliest record
					 * with a count (u32, wrapping); the
					 * first to leave the window */
			__u32 live;	/* records with a count */
			__u32 open_seq;	/* `accepted` when the open record
					 * (`current`) opened */
			struct sl_record rec[SL_RECORDS];
		};
		struct sl_slot fixed;	/* slice: now_ms / window_ms */
		struct sl_bucket bucket;
	};
};

struct sl_client_plain {
	SL_CLIENT_HEADER
	struct sl_slot slot[SL_MAX_PLAIN_SLICES];
};

/* sliding-log: ring of accept times; `accepted` is the write position. */
struct sl_client_log {
	SL_CLIENT_HEADER
	__u32 stamp_ms[SL_MAX_LOG];	/* model/TAI ms cut to u32: the valid
					 * ones (current ..) are within two
					 * windows behind, SL_MAX_STEP_MS
					 * ahead (sl_client_log_charge) */
};

/* Array sl_config, one entry per generation, written by userspace only.
 * The live generation is the single word in sl_active: a packet reads it
 * once, then sees only that generation's config and tables.
 */
struct sl_config {
	__u32 gen;		/* this entry's own generation */
	__u32 rules_epoch;	/* bumped by every apply; invalidates caches */
	__u32 nr_rules;		/* rules in the live generation */
	__u8 has_src;		/* any live rule matches on source prefix */
	__u8 has_dst;
	__u8 has_exempt;
	__u8 pad;		/* SL_LISTS_*, read and written through
				 * sl_config_lists(): which of the block and
				 * allow lists hold an entry. Named as before
				 * it held them: an upgrade keeps a pinned map
				 * whose value type is the same, member names
				 * included, and this one holds the rules */
	struct sl_bitmap all_rules;	/* every live rule: the bitmap of an
					 * address no rule restricts */
};

/* ---- block and allow lists at run time (bpf/lists.h) ---- */

/* Bits of sl_config_lists(), written into the live generation by the
 * list commands and into the next one by every rules apply
 * (user/core/lists.c, user/rules/tables.c): a packet looks a list up
 * only while its bit is set. A bit set over an empty list costs a
 * lookup, never a verdict.
 */
#define sl_config_lists(cfg)	((cfg)->pad)
#define SL_LISTS_ALLOW		1
#define SL_LISTS_BLOCK		2

/* Entries of each list (sl_allow_list, sl_block_list). */
#define SL_LIST_MAX		65536
/* Bytes of an entry's reason, with its NUL (sl_list_notes). */
#define SL_LIST_REASON_MAX	256

/* LPM trie key of sl_allow_list and sl_block_list: a source prefix. */
struct sl_list_key {
	__u32 prefixlen;	/* host byte order; of the 128-bit form:
				 * 96 + bits for IPv4 */
	struct sl_addr addr;	/* network byte order, IPv4-mapped for v4 */
};

/* One list entry, as the data path reads it. */
struct sl_list_entry {
	__u64 expires_ms;	/* on the decision clock (TAI ms, or the model
				 * clock's), past which the entry is no entry;
				 * 0: until removed */
	__u64 hits;		/* packets it decided (atomic adds) */
	__u32 event_ms;		/* its last drop event, decision clock cut to
				 * u32: one a second at most (block list) */
	__u32 pad;
};

/* Hash sl_list_notes: what only userspace reads of an entry. */
struct sl_list_note_key {
	struct sl_list_key key;
	__u32 kind;		/* SL_LISTS_ALLOW or SL_LISTS_BLOCK */
};

struct sl_list_note {
	__u64 added_ms;		/* TAI ms */
	char reason[SL_LIST_REASON_MAX];	/* NUL-terminated, may be "" */
};

/* Per-CPU array sl_list_stats, one entry: what the lists decided. */
struct sl_list_stats {
	__u64 allowed;		/* passed on the allow list: no rule saw them */
	__u64 allowed_bytes;
	__u64 blocked;		/* dropped on the block list */
	__u64 blocked_bytes;
};

/* The rule_id of a drop event the block list made (struct
 * sl_drop_event): no rule has it.
 */
#define SL_LIST_EVENT_RULE	0xffff

/* Per-rule counters, per-CPU array sl_rule_stats indexed by rule id. */
struct sl_rule_stats {
	__u64 passed;		/* matched and under the limit (or not counted) */
	__u64 dropped;
	__u64 shadow_dropped;	/* over the limit in shadow mode: passed */
	__u64 exempt;		/* source on the rule's exempt list */
	__u64 passed_bytes;	/* every packet let through: passed,
				 * shadow_dropped and exempt */
	__u64 dropped_bytes;
};

/* Global counters, per-CPU array sl_global_stats with one entry. */
struct sl_global_stats {
	__u64 packets;
	__u64 non_ip;		/* not IPv4/IPv6: passed */
	__u64 malformed;	/* truncated or invalid headers: passed */
	__u64 fragments;	/* IP fragments, first and later: decided */
	__u64 no_rule;		/* no rule matched: passed */
	__u64 fail_open;	/* client table refused an insert: passed */
	__u64 new_clients;	/* client states created */
	__u64 events_lost;	/* drop events the full ring buffer refused */
	__u64 changed_lost;	/* changed clients sl_changed had no room for:
				 * the next sync round walks every client */
	/* Fragments (also counted in `fragments`) and long IPv6 chains;
	 * slicelimit-rules(5), PACKET SHAPES, states the policy these count.
	 */
	__u64 frag_first;	/* first fragments: decided by their ports */
	__u64 frag_later;	/* later fragments that followed their first's
				 * verdict (sl_frags) */
	__u64 frag_later_dropped; /* of those, dropped: the datagram was */
	__u64 frag_orphans;	/* later fragments with no first remembered:
				 * counted under the first rule of their
				 * protocol and addresses, any port */
	__u64 long_chains;	/* IPv6 chains longer than the walk */
	__u64 long_chains_dropped; /* of those, dropped: a rule matched their
				 * addresses */
	__u64 icmp_control;	/* ICMP errors, ND, MLD: passed, never limited */
	__u64 newcomers;	/* first packets of keys the client tables do
				 * not hold, counted on probation
				 * (sl_newcomers) instead of creating a state */
	__u64 promoted;		/* keys seen again on probation: moved into
				 * the client tables with what they were
				 * charged there */
	__u64 newcomers_displaced;	/* probation entries overwritten by a
					 * later newcomer before their key came
					 * back: a spoofed flood shows here */
	__u64 mapped_v4;	/* IPv6 from an IPv4-mapped source
				 * (::ffff:0:0/96): dropped, never charged */
	__u64 vlan_deep;	/* frames with more VLAN tags than the parser
				 * walks: decided by their addresses */
	__u64 vlan_deep_dropped; /* of those, dropped: a rule matched their
				 * addresses */
	__u64 front_skipped;	/* packets that did not look in the front
				 * cache (bpf/front.h): it was quiet */
	__u64 front_probes;	/* packets that looked while it was quiet */
};

/* LRU hash sl_frags: what a datagram's first fragment was decided, for
 * its later fragments, which carry no ports.
 */
struct sl_frag_key {
	struct sl_addr src;	/* network byte order, IPv4-mapped for v4 */
	struct sl_addr dst;
	__u32 id;		/* IP identification, network byte order */
	__u8 proto;		/* IPv6: the fragment header's next header */
	__u8 family;		/* 4 or 6 */
	__u16 pad;
};

struct sl_frag {
	__u32 slot;		/* the first fragment's SL_SLOT_* + port */
	__u16 dport;		/* network byte order */
	__u8 dropped;		/* the datagram was dropped */
	__u8 pad;
};

/* Per-CPU array sl_proto_rules, one entry: the rules a packet of a
 * protocol can meet whatever its port (those of the protocol and of
 * `any`), for fragments that carry no ports. Rebuilt by the program
 * itself when the rule set changes (bpf/classify.h).
 */
struct sl_proto_rules {
	__u32 rules_epoch;	/* of the rule set the bitmaps are of */
	__u32 gen;
	__u32 nr_rules;
	__u32 valid;
	struct sl_bitmap tcp;
	struct sl_bitmap udp;
};

/* Probation of the keys the client tables do not hold (include/
 * sl_newcomer.h): array sl_newcomers of buckets, each a few ways of one
 * newcomer's first accept, found by a keyed hash of the client key.
 * Way i is tag[i], units[i] and first_ms[i]: the tags side by side, so
 * that the pass over them every new key makes reads one cache line
 * with the lock, however many ways.
 */
#define SL_NEWCOMER_WAYS	16	/* a power of two */

struct sl_newcomer_bucket {
	struct bpf_spin_lock lock;	/* the ways change under it only */
	__u32 pad;
	__u32 tag[SL_NEWCOMER_WAYS];	/* the key's hash (never 0); 0: free */
	__u32 units[SL_NEWCOMER_WAYS];	/* what its first packet was charged */
	__u64 first_ms[SL_NEWCOMER_WAYS]; /* model/TAI ms of that packet: u64,
					   * no wrap; charged at this time on
					   * promotion, so an old one finds
					   * the state idle */
};

/* Array sl_newcomer_conf, one entry, written by userspace once, when the
 * tables are created: the hash key and the number of buckets. 0 buckets:
 * no probation, every new key gets a state at once.
 */
struct sl_newcomer_conf {
	__u64 seed;		/* random; keys the bucket hash */
	__u32 buckets;		/* sl_newcomers' max_entries */
	__u32 pad;
};

/* Ring buffer sl_events: the first drop of a client in a window (not one
 * per packet), for `slicelimit events`.
 */
struct sl_drop_event {
	__u64 time_ms;		/* model/TAI ms */
	struct sl_client_key key;
	__u32 pad;
	__u64 used;		/* units counted in the window */
	__u64 retry_after_ms;	/* until the count can fall below the limit */
};

/* Input of the sl_check program (BPF_PROG_TEST_RUN only, never attached):
 * count one request for a key under a rule, with the kernel's own code.
 * It answers XDP_PASS (accepted), XDP_DROP (over the limit) or
 * XDP_ABORTED (no such rule: the rule set changed; read it again).
 */
#define SL_CHECK_MAGIC		0x534c4332	/* "SLC2": with units */
#define SL_CHECK_RAW_KEY	1	/* addr is the key itself: no mask */

struct sl_check_req {
	__u32 magic;
	__u32 position;		/* the rule's priority position */
	__u32 rules_epoch;	/* of the rule set the position is from */
	__u16 rule_id;
	__u16 flags;		/* SL_CHECK_* */
	struct sl_addr addr;	/* client address, or a hashed string key */
	__u32 units;		/* the request's cost, >= 1: it fits
				 * whole or is refused whole */
	__u32 pad;
};

/* ---- peer sync (see include/sl_peer.h) ---- */

/* How a node counts a client together with its peers. */
enum sl_layout {
	SL_LAYOUT_LOCAL = 0,		/* no peers: the node's own count */
	SL_LAYOUT_DELAYED_SYNC = 1,	/* own count + peers' last synced counts */
	SL_LAYOUT_SPLIT_QUOTA = 2,	/* own count against limit / nodes */
	SL_LAYOUT_PREDICTIVE = 3,	/* delayed sync + peers' recent rate */
	SL_LAYOUT_BOUNDED = 4,		/* delayed sync + each node's share of
					 * what the fleet has left per round */
	SL_LAYOUT__COUNT,
};

/* Array sl_sync, one entry, written by the service (userspace only). */
struct sl_sync_conf {
	__u32 layout;		/* enum sl_layout */
	__u32 nodes;		/* split-quota: the limit is divided by this */
	__u32 interval_ms;	/* sync interval: how far a rate is projected */
	__u32 round;		/* bumped by the service every sync round; a
				 * client's first accept in a round sends its
				 * key to sl_changed. 0: no service reads it */
	__u32 live_nodes;	/* bounded: nodes that hear each other,
				 * this one included; 1: alone (local) */
	__u32 share_round;	/* bounded: follows `round` once the round
				 * is settled (what this node sent has
				 * reached its peers, theirs it); a
				 * client's units count as unknown to the
				 * peers since its last change */
	__u64 round_ms;		/* model/TAI ms the share round began: u64,
				 * no wrap; share_round itself wraps after
				 * 2^32 rounds (see the client header) */
};

/* Peers' counts of a client, in slices of sl_peer_slice_ms(window),
 * numbered from the TAI epoch so that every node means the same slice.
 * Ring indexed by slice % SL_PEER_SLOTS; a window spans at most
 * SL_PEER_SLOTS - 1 slices, so every slice that can count has its slot.
 */
#define SL_PEER_SLOTS		16

/* Peers' units of one slice: counted while their earliest first accept
 * is inside the window (so, like a node's own slices, never units older
 * than the window, and never early by more than the slice's spread).
 */
struct sl_peer_slot {
	/* slice and the ms stamps are cut to u32, read by wrapping
	 * difference: a slot counts only within the ring behind now's slice
	 * and while its stamp is in the window; the service deletes an
	 * entry once nothing of it counts (user/sync/engine.c), long
	 * before either number wraps (2^32 slices or ms)
	 */
	__u32 slice;		/* first_ms / sl_peer_slice_ms(window) */
	__u32 first_ms;		/* earliest first accept merged (wrapping) */
	__u32 count;		/* units merged; bounded: the own included */
	__u32 own;		/* bounded: this node's part of count, as it
				 * sent it */
	__u32 last_ms;		/* latest merge: no unit of the slot was
				 * accepted after it (wrapping) */
};

/* Hash sl_peer_view keyed by sl_client_key, written by userspace only
 * (the merge of peers' messages); the kernel adds it to the node's count.
 */
struct sl_peer_view {
	__u32 slice_ms;		/* the slice length the slots were made with:
				 * an entry made under another window (the
				 * rule changed) counts for nothing */
	__u32 round_ms;		/* predictive: when this round of merges began
				 * (model/TAI ms, wrapping); its age is taken
				 * up to one interval, and the service rewrites
				 * it every round */
	__u32 round_units;	/* predictive: peers' units merged since */
	__u32 pad;		/* the kernel never reads it; the sync engine
				 * keeps there the node id whose report made
				 * the entry (its per-peer share of the map).
				 * Still named pad: a pinned view stays the
				 * same type across an upgrade */
	struct sl_peer_slot slot[SL_PEER_SLOTS];
};

/* What sl_check writes after its request when the test run's packet has
 * room (struct sl_check_msg): the client as the decision left it, so
 * that the service answers with one bpf() call, not a map lookup or more
 * after it. sliding-log's state is too large to copy: its view is read
 * from the map, as is a client without a state (on probation).
 */
#define SL_CHECK_HAS_STATE	1	/* state: the client's */
#define SL_CHECK_HAS_SYNC	2	/* sync: the layout (not local) */
#define SL_CHECK_HAS_PEERS	4	/* peers: the client's peer view
					 * (under a layout, none: no peer
					 * counted it) */
#define SL_CHECK_HAS_EXEMPT	8	/* the rule exempts the address:
					 * nothing counted, nothing copied */

struct sl_check_reply {
	__u64 now_ms;		/* the decision's clock (TAI, or the
				 * model's) */
	__u32 has;		/* SL_CHECK_HAS_* */
	__u32 pad;
	struct sl_sync_conf sync;
	struct sl_peer_view peers;
	union {
		/* sliding, fixed, token-bucket */
		struct sl_client client;
		/* sliding-plain, sliding-counter */
		struct sl_client_plain plain;
	} state;
};

/* The test run's packet: the request, and room for the reply. */
struct sl_check_msg {
	struct sl_check_req req;
	struct sl_check_reply reply;
};

/* Sync health, array sl_sync_status with one entry: written by the running
 * service every round, read by `status` and `stats` (userspace only).
 */
#define SL_MAX_PEERS		32

struct sl_sync_peer {
	__u32 node;		/* the peer's node id; 0: free */
	__u32 view_refused;	/* entries it would have added to sl_peer_view
				 * past its share of the map */
	__u64 last_heard_ms;	/* TAI ms of its last accepted message */
	__u64 lag_ms;		/* arrival - sending time of that message */
	__u64 messages;		/* accepted */
	__u64 entries;		/* client slices merged from it */
	__u64 bytes;
	__u64 rejected;		/* replayed or duplicate messages */
	char addr[48];		/* where its last message came from */
};

struct sl_sync_status {
	__u32 node;		/* this node's id; 0: no sync configured */
	__u32 layout;		/* enum sl_layout */
	__u32 interval_ms;
	__u32 peers_configured;
	__u64 updated_ms;	/* TAI ms of the last round */
	__u64 rounds;
	__u64 sent_messages;
	__u64 sent_bytes;
	__u64 sent_entries;
	__u64 send_errors;
	__u64 collect_us;	/* the last aggregation pass, microseconds */
	__u64 collect_clients;	/* clients it walked */
	__u64 collect_changed;	/* clients it found changed */
	__u64 rejected_forged;	/* did not open with the pair's key */
	__u64 rejected_malformed;
	__u64 rejected_replayed;	/* seen sequence, or an older incarnation */
	__u64 rejected_own;	/* carrying this node's own id */
	__u64 rejected_future;	/* sent (or its sender started) more than
				 * SL_SYNC_MAX_SKEW_MS ahead */
	__u64 rejected_stale;	/* sent too long ago, or before this start */
	__u64 rejected_unknown_peer;	/* sender id not a configured peer, or
					 * no peer slot is left for it */
	__u64 rejected_wrong_address;	/* not from the peer's address */
	__u64 clamped_entries;	/* entries claiming more units than a node
				 * can accept in a round: cut to that */
	__u64 view_capped;	/* entries refused for their peer's share of
				 * sl_peer_view (per peer: view_refused) */
	__u64 unknown_rule;	/* entries for a rule this node does not have */
	__u64 view_full;	/* entries sl_peer_view had no room for */
	__u64 untracked;	/* changed clients not sent: no room to
				 * remember what was sent of them */
	__u64 backend_errors;	/* redis: failed round trips */
	__u64 backend_reconnects;
	__u64 store_transitions; /* redis: times backend_up changed from one
				 * round to the next (down, up), each logged
				 * once */
	__u32 backend_up;	/* redis: connected */
	__u32 nr_peers;		/* peer[] entries in use */
	__u32 live_nodes;	/* bounded: nodes sharing the room, this
				 * one included (sl_sync_conf.live_nodes) */
	__u32 pad;
	struct sl_sync_peer peer[SL_MAX_PEERS];
};

/* Attached devices, hash sl_devices keyed by ifindex (userspace only). */
enum sl_attach_mode {
	SL_MODE_XDP = 0,	/* native XDP */
	SL_MODE_XDP_GENERIC = 1,
	SL_MODE_TC = 2,		/* TC ingress (clsact) */
};

struct sl_device {
	char name[16];
	__u32 mode;		/* enum sl_attach_mode */
	__u32 prog_id;
};

#endif /* SLICELIMIT_H */
