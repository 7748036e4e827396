// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The client table's keyed hash, its key drawn at start
 * (sync/client_hash.h).
 */
#include <errno.h>
#include <string.h>
#include "sync/client_hash.h"

int sl_client_hash_init(struct sl_client_hash *h)
{
	if (sodium_init() < 0)
		return -EIO;
	randombytes_buf(h->key, sizeof(h->key));
	return 0;
}

size_t sl_client_hash(const struct sl_client_hash *h,
		      const struct sl_client_key *k)
{
	unsigned char out[crypto_shorthash_BYTES];
	__u64 v;

	crypto_shorthash(out, (const unsigned char *)k, sizeof(*k), h->key);
	memcpy(&v, out, sizeof(v));
	return (size_t)v;
}
