/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every part of the shared layout needs: the pin folder, the
 * limits that size the maps and values, and the enums a rule names.
 */
#ifndef SL_TYPES_COMMON_H
#define SL_TYPES_COMMON_H

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
 * (see include/algo/sliding.h).
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
 * longer step back forgets the state (include/algo/common.h,
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

#endif /* SL_TYPES_COMMON_H */
