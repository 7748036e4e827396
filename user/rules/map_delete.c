// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Deleting the keys of a map that a test accepts (rules/map_delete.h):
 * the client states an apply forgets, the prefix entries of a generation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "util/grow.h"
#include "rules/map_delete.h"

/* Keys read per batched lookup: about 4 MiB of keys and values a call. */
#define SL_DELETE_BATCH_BYTES	(4u << 20)

/* The keys `match` accepts, appended to *doomed (*nr of them). */
static int doom(char **doomed, size_t *nr, size_t *cap, const void *key,
		size_t key_size)
{
	if (sl_grow((void **)doomed, cap, *nr + 1, key_size))
		return -ENOMEM;
	memcpy(*doomed + (*nr)++ * key_size, key, key_size);
	return 0;
}

static bool is_hash(__u32 type)
{
	return type == BPF_MAP_TYPE_HASH || type == BPF_MAP_TYPE_LRU_HASH ||
	       type == BPF_MAP_TYPE_PERCPU_HASH ||
	       type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

/* A hash map's keys by batched lookups: the kernel's cursor is a bucket
 * index and moves on whatever the data path evicts meanwhile, so the walk
 * ends after one pass. (get_next_key starts again from the first bucket
 * when the key it is given has gone, which under churn need never end.)
 */
static int collect_batched(int fd, const struct bpf_map_info *info,
			   sl_key_match_fn match, const void *arg,
			   char **doomed, size_t *nr, size_t *cap)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	size_t vsize = info->value_size, ksize = info->key_size;
	__u32 batch, count, i;
	__u64 cursor = 0;
	void *in = NULL;
	char *keys, *vals;
	int err = 0, ret;

	if (info->type == BPF_MAP_TYPE_PERCPU_HASH ||
	    info->type == BPF_MAP_TYPE_LRU_PERCPU_HASH)
		vsize = ((vsize + 7) & ~(size_t)7) * libbpf_num_possible_cpus();
	batch = SL_DELETE_BATCH_BYTES / (vsize + ksize);
	if (batch < 1)
		batch = 1;
	keys = calloc(batch, ksize);
	vals = calloc(batch, vsize);
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	do {
		count = batch;
		ret = bpf_map_lookup_batch(fd, in, &cursor, keys, vals, &count,
					   &opts);
		if (ret && errno != ENOENT) {
			err = -errno;
			break;
		}
		for (i = 0; i < count && !err; i++)
			if (match(keys + i * ksize, arg))
				err = doom(doomed, nr, cap, keys + i * ksize, ksize);
		in = &cursor;
	} while (!ret && !err);
out:
	free(vals);
	free(keys);
	return err;
}

/* Any other map (the prefix tries, which only userspace writes: nothing
 * evicts their keys) key by key.
 */
static int collect_walked(int fd, size_t key_size, sl_key_match_fn match,
			  const void *arg, char **doomed, size_t *nr,
			  size_t *cap)
{
	char key[64], next[64];
	void *prev = NULL;
	int err = 0;

	if (key_size > sizeof(key))
		return -E2BIG;
	while (!err && !bpf_map_get_next_key(fd, prev, next)) {
		if (match(next, arg))
			err = doom(doomed, nr, cap, next, key_size);
		memcpy(key, next, key_size);
		prev = key;
	}
	return err;
}

/* Delete every key of map `fd` that `match` accepts. Keys are collected
 * first: deleting while walking would skip entries. Deleted in batches;
 * a key the data path evicted meanwhile is stepped over.
 */
int sl_map_delete_where(int fd, size_t key_size, sl_key_match_fn match,
			const void *arg, __u64 *deleted)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), count;
	size_t nr = 0, cap = 0, done = 0;
	char *doomed = NULL;
	int err;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.key_size != key_size)
		return -EINVAL;
	err = is_hash(info.type) ?
	      collect_batched(fd, &info, match, arg, &doomed, &nr, &cap) :
	      collect_walked(fd, key_size, match, arg, &doomed, &nr, &cap);
	while (!err && done < nr) {
		count = nr - done;
		if (is_hash(info.type) &&
		    !bpf_map_delete_batch(fd, doomed + done * key_size, &count,
					  &opts)) {
			done += count;
			continue;
		}
		/* the batch stopped at a key already gone (or the map has no
		 * batch delete): that one alone, then on
		 */
		if (is_hash(info.type))
			done += count;
		if (done < nr &&
		    bpf_map_delete_elem(fd, doomed + done * key_size) &&
		    errno != ENOENT)
			err = -errno;
		done++;
	}
	/* a key the data path evicted meanwhile is counted too: it was
	 * there when the walk saw it
	 */
	if (!err && deleted)
		*deleted += nr;
	free(doomed);
	return err;
}
