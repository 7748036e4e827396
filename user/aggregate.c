// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "aggregate.h"

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

struct changed_keys {
	struct sl_client_key *key;
	size_t nr, cap;
};

static int take_key(void *ctx, void *data, size_t len)
{
	struct changed_keys *k = ctx;

	if (len < sizeof(*k->key))
		return 0;
	if (k->nr == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 1024;
		void *q = realloc(k->key, cap * sizeof(*k->key));

		if (!q)
			return -ENOMEM;
		k->key = q;
		k->cap = cap;
	}
	memcpy(&k->key[k->nr++], data, sizeof(*k->key));
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct sl_client_key));
}

int sl_for_each_changed_client(const struct sl_maps *m, __u64 *lost_seen,
			       sl_table_of_fn table_of, sl_client_fn fn,
			       void *ctx)
{
	struct changed_keys k = { 0 };
	struct sl_global_stats gs;
	struct ring_buffer *rb;
	void *state = NULL;
	__u32 value_size;
	size_t i;
	int err, fd;

	/* the lost count first: a key lost after this read is seen next time */
	err = sl_percpu_sum_u64(m, m->global_stats, 0, &gs, sizeof(gs));
	if (err)
		return err;
	rb = ring_buffer__new(m->changed, take_key, &k, NULL);
	if (!rb)
		return -errno;
	err = ring_buffer__consume(rb);
	ring_buffer__free(rb);
	if (err < 0)
		goto out;
	err = 0;
	/* two CPUs may both have sent a client's first accept of a round */
	if (k.nr > 1)	/* (qsort of NULL is undefined, even for none) */
		qsort(k.key, k.nr, sizeof(*k.key), key_cmp);
	state = malloc(sizeof(struct sl_client_log));	/* the largest state */
	if (!state) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; fn && i < k.nr && !err; i++) {
		if (i && !key_cmp(&k.key[i - 1], &k.key[i]))
			continue;
		fd = table_of(ctx, &k.key[i], &value_size);
		if (fd < 0 || value_size > sizeof(struct sl_client_log))
			continue;
		/* gone since (evicted): nothing of it to read */
		if (bpf_map_lookup_elem(fd, &k.key[i], state))
			continue;
		err = fn(ctx, &k.key[i], state, value_size);
	}
	if (!err && gs.changed_lost != *lost_seen) {
		*lost_seen = gs.changed_lost;
		err = -ENOBUFS;
	}
out:
	free(state);
	free(k.key);
	return err;
}
