/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The block and allow lists (bpf/lists.h) as the commands, the service
 * and the HTTP API change and read them. Expiry is on the decision clock
 * (TAI ms; the caller passes `now_ms` on it), which the data path
 * compares itself: an ended entry is no entry there, before any sweep.
 */
#ifndef SL_INSTANCE_LISTS_H
#define SL_INSTANCE_LISTS_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>
#include "instance/instance_maps.h"
#include "slicelimit.h"

/* The longest --for (and the API's "for"): a year. Longer is "until
 * removed", said plainly.
 */
#define SL_LIST_MAX_FOR_MS	(366ULL * 86400000)

/* One entry as `lists` shows it. */
struct sl_list_item {
	unsigned kind;			/* SL_LISTS_ALLOW or SL_LISTS_BLOCK */
	struct sl_list_key key;		/* prefix of the 128-bit form */
	struct sl_list_entry entry;
	struct sl_list_note note;	/* zero when it has none */
};

/* "block" / "allow", and back (0 for neither). */
const char *sl_list_name(unsigned kind);
unsigned sl_list_kind(const char *name);

/* Put ADDR/LEN128 on a list until now_ms + for_ms (for_ms 0: until
 * removed), with REASON (NULL: none; -ENAMETOOLONG past
 * SL_LIST_REASON_MAX - 1 bytes). An entry already there is replaced
 * and keeps its hits. -ENOSPC when the list is full.
 */
int sl_list_add(const struct sl_maps *m, unsigned kind,
		const struct sl_addr *addr, unsigned len128, __u64 for_ms,
		const char *reason, __u64 now_ms);
/* Take ADDR/LEN128 off a list: 0, or -ENOENT when it is not there. */
int sl_list_remove(const struct sl_maps *m, unsigned kind,
		   const struct sl_addr *addr, unsigned len128);
/* Every entry of both lists that has not ended at now_ms, allow list
 * first (free *items).
 */
int sl_list_read(const struct sl_maps *m, __u64 now_ms,
		 struct sl_list_item **items, size_t *nr);
/* Remove the entries ended at now_ms (*removed counts them), then
 * publish which lists hold entries.
 */
int sl_list_sweep(const struct sl_maps *m, __u64 now_ms, unsigned *removed);
/* Which lists hold an entry (SL_LISTS_* bits), from the maps. */
__u8 sl_lists_in_use(const struct sl_maps *m);
/* Write sl_lists_in_use into the live generation's config, so that the
 * data path looks up exactly the lists that hold entries.
 */
int sl_lists_publish(const struct sl_maps *m);
/* Held by sl_lists_publish and by a rules apply around its config write
 * and switch: in one process, they never interleave.
 */
void sl_lists_config_lock(void);
void sl_lists_config_unlock(void);
/* The lists' counters, summed over CPUs. */
int sl_list_stats_read(const struct sl_maps *m, struct sl_list_stats *out);

/* An entry as JSON: kind, prefix, expires_ms and added_ms (Unix ms:
 * TAI less tai_offset), remaining_ms at now_tai, reason, hits.
 */
json_object *sl_list_item_to_json(const struct sl_list_item *it,
				  __u64 now_tai, __u64 tai_offset);

/* The lists' counters and sizes (ended entries not yet swept count):
 * {allowed, allowed_bytes, blocked, blocked_bytes, allow_entries,
 * block_entries}.
 */
json_object *sl_list_stats_to_json(const struct sl_maps *m);

#endif /* SL_INSTANCE_LISTS_H */
