/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The bearer token a TCP listener requires (the HTTP API's, the rate
 * limit service's): kept as its hash, and a request's compared hash to
 * hash in constant time, whatever the length sent.
 */
#ifndef SL_SERVICE_BEARER_H
#define SL_SERVICE_BEARER_H

#include <stdbool.h>
#include <sodium.h>

#define SL_BEARER_HASH_BYTES	crypto_generichash_BYTES

void sl_bearer_hash(const char *token, unsigned char hash[SL_BEARER_HASH_BYTES]);

/* Is VALUE (an Authorization header's, LEN bytes, NULL: none) "Bearer
 * TOKEN" with the token whose hash is HASH? The scheme's name is
 * case-insensitive (RFC 9110).
 */
bool sl_bearer_ok(const char *value, size_t len,
		  const unsigned char hash[SL_BEARER_HASH_BYTES]);

#endif /* SL_SERVICE_BEARER_H */
