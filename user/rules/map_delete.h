/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Deleting the keys of a map that a test accepts, while the data path may
 * evict keys of the same map.
 */
#ifndef SL_RULES_MAP_DELETE_H
#define SL_RULES_MAP_DELETE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

typedef bool (*sl_key_match_fn)(const void *key, const void *arg);

/* Delete every key of map FD (of KEY_SIZE bytes) that MATCH accepts;
 * *deleted (NULL: not wanted) grows by their number. 0 or -errno.
 */
int sl_map_delete_where(int fd, size_t key_size, sl_key_match_fn match,
			const void *arg, __u64 *deleted);

#endif /* SL_RULES_MAP_DELETE_H */
