/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Counters and events the datapath writes for userspace to read.
 */
#ifndef SL_TYPES_STATS_H
#define SL_TYPES_STATS_H

#include "types/common.h"
#include "types/state.h"

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

#endif /* SL_TYPES_STATS_H */
