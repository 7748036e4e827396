// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include <strings.h>
#include "service/bearer.h"

void sl_bearer_hash(const char *token, unsigned char hash[SL_BEARER_HASH_BYTES])
{
	crypto_generichash(hash, SL_BEARER_HASH_BYTES,
			   (const unsigned char *)token, strlen(token), NULL, 0);
}

bool sl_bearer_ok(const char *value, size_t len,
		  const unsigned char hash[SL_BEARER_HASH_BYTES])
{
	unsigned char got[SL_BEARER_HASH_BYTES];
	bool ok;

	if (!value || len < 7 || strncasecmp(value, "Bearer ", 7))
		return false;
	value += 7;
	len -= 7;
	while (len && *value == ' ') {
		value++;
		len--;
	}
	crypto_generichash(got, sizeof(got), (const unsigned char *)value,
			   len, NULL, 0);
	ok = !sodium_memcmp(got, hash, sizeof(got));
	sodium_memzero(got, sizeof(got));
	return ok;
}
