/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SL_TYPES_LISTS_H
#define SL_TYPES_LISTS_H

#include "types/common.h"
#include "types/rules.h"

/* ---- block and allow lists at run time (bpf/lists.h) ---- */

/* Bits of sl_config_lists(), written into the live generation by the
 * list commands and into the next one by every rules apply
 * (user/instance/lists.c, user/rules/tables.c): a packet looks a list up
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

#endif /* SL_TYPES_LISTS_H */
