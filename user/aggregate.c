// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include "aggregate.h"

/* Values per batch: about 4 MiB of per-CPU values a syscall. */
#define SL_BATCH_BYTES	(4u << 20)

int sl_for_each_client_in(const struct sl_maps *m, int fd, __u32 value_size,
			  sl_client_fn fn, void *ctx)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	size_t stride = (size_t)((value_size + 7) & ~7u) * m->nr_cpus;
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
