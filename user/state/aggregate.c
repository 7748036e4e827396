// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "state/aggregate.h"
#include "util/grow.h"

/* Values per batch: about 4 MiB of values a syscall. */
#define SL_BATCH_BYTES	(4u << 20)

int sl_for_each_client_in(const struct sl_maps *m, int fd, __u32 value_size,
			  sl_client_fn fn, void *ctx)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	size_t stride = value_size;
	__u32 batch = SL_BATCH_BYTES / stride, count, i, out;
	struct sl_client_key *keys;
	void *vals, *in = NULL;
	int err = 0, ret;

	if (batch < 1)
		batch = 1;
	keys = calloc(batch, sizeof(*keys));
	vals = calloc(batch, stride);
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	do {
		count = batch;
		ret = bpf_map_lookup_batch(fd, in, &out, keys, vals, &count, &opts);
		if (ret && errno != ENOENT) {
			err = -errno;
			break;
		}
		for (i = 0; i < count && !err; i++)
			err = fn(ctx, &keys[i], (char *)vals + i * stride,
				 value_size);
		in = &out;	/* the kernel's cursor: opaque, a bucket index */
	} while (!ret && !err);
out:
	free(vals);
	free(keys);
	return err;
}

int sl_for_each_client(const struct sl_maps *m, sl_client_fn fn, void *ctx)
{
	int err;

	err = sl_for_each_client_in(m, m->clients, sizeof(struct sl_client),
				    fn, ctx);
	if (!err)
		err = sl_for_each_client_in(m, m->clients_plain,
					    sizeof(struct sl_client_plain),
					    fn, ctx);
	if (!err)
		err = sl_for_each_client_in(m, m->clients_log,
					    sizeof(struct sl_client_log), fn,
					    ctx);
	return err;
}

/* ---- the changed clients ---- */

/* Opened once per sync engine: the ring's mmap and the key and state
 * buffers are set up once, not every round.
 */
struct sl_changed {
	struct ring_buffer *rb;
	struct sl_client_key *key;
	size_t nr, cap;
	__u64 lost_seen;	/* sl_global_stats.changed_lost seen */
	union {			/* the largest state of a table */
		struct sl_client c;
		struct sl_client_plain plain;
		struct sl_client_log log;
	} state;
};

static int take_key(void *ctx, void *data, size_t len)
{
	struct sl_changed *k = ctx;

	if (len < sizeof(*k->key))
		return 0;
	if (sl_grow((void **)&k->key, &k->cap, k->nr + 1, sizeof(*k->key)))
		return -ENOMEM;
	memcpy(&k->key[k->nr++], data, sizeof(*k->key));
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct sl_client_key));
}

struct sl_changed *sl_changed_open(const struct sl_maps *m)
{
	struct sl_changed *k = calloc(1, sizeof(*k));
	struct sl_global_stats gs;
	int err = -ENOMEM;

	if (!k)
		goto fail;
	/* what was lost before this reader is no reason to walk everything */
	err = sl_percpu_sum_u64(m, m->global_stats, 0, &gs, sizeof(gs));
	if (err)
		goto fail;
	k->lost_seen = gs.changed_lost;
	k->rb = ring_buffer__new(m->changed, take_key, k, NULL);
	if (!k->rb) {
		err = -errno;
		goto fail;
	}
	return k;
fail:
	free(k);
	errno = -err;
	return NULL;
}

void sl_changed_close(struct sl_changed *k)
{
	if (!k)
		return;
	ring_buffer__free(k->rb);
	free(k->key);
	free(k);
}

int sl_for_each_changed_client(struct sl_changed *k, const struct sl_maps *m,
			       sl_table_of_fn table_of, sl_client_fn fn,
			       void *ctx)
{
	struct sl_global_stats gs;
	__u32 value_size;
	size_t i;
	int err, fd;

	/* the lost count first: a key lost after this read is seen next time */
	err = sl_percpu_sum_u64(m, m->global_stats, 0, &gs, sizeof(gs));
	if (err)
		return err;
	k->nr = 0;
	err = ring_buffer__consume(k->rb);
	if (err < 0)
		return err;
	err = 0;
	/* two CPUs may both have sent a client's first accept of a round */
	if (k->nr > 1)	/* (qsort of NULL is undefined, even for none) */
		qsort(k->key, k->nr, sizeof(*k->key), key_cmp);
	for (i = 0; fn && i < k->nr && !err; i++) {
		if (i && !key_cmp(&k->key[i - 1], &k->key[i]))
			continue;
		fd = table_of(ctx, &k->key[i], &value_size);
		if (fd < 0 || value_size > sizeof(k->state))
			continue;
		/* gone since (evicted): nothing of it to read */
		if (bpf_map_lookup_elem(fd, &k->key[i], &k->state))
			continue;
		err = fn(ctx, &k->key[i], &k->state, value_size);
	}
	if (!err && gs.changed_lost != k->lost_seen) {
		k->lost_seen = gs.changed_lost;
		err = -ENOBUFS;
	}
	return err;
}
