/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The hash of the sync engine's client table. Its keys are client
 * addresses, which whoever sends packets chooses: with an unkeyed hash a
 * flood of addresses picked to share one bucket turns every lookup into a
 * walk of the whole table, in the thread every sync round runs in. So it
 * is keyed (SipHash-2-4, libsodium's crypto_shorthash) with a key drawn
 * at random per table, which the sender cannot know.
 */
#ifndef SL_SYNC_CLIENT_HASH_H
#define SL_SYNC_CLIENT_HASH_H

#include <stddef.h>
#include <sodium.h>
#include "slicelimit.h"

struct sl_client_hash {
	unsigned char key[crypto_shorthash_KEYBYTES];
};

/* A fresh random key. 0, or -EIO when libsodium cannot start. */
int sl_client_hash_init(struct sl_client_hash *h);
size_t sl_client_hash(const struct sl_client_hash *h,
		      const struct sl_client_key *k);

#endif /* SL_SYNC_CLIENT_HASH_H */
