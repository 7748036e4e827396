// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --key KEY of query and reset: a check API key named as the API names it. */
#include <errno.h>
#include <sodium.h>
#include <string.h>
#include "cli/commands.h"
#include "core/log.h"
#include "service/check_local.h"

/* as /v1/check takes it (service/http.c) */
#define SL_KEY_ARG_MAX	256

int sl_client_key_arg(const char *key, struct sl_addr *addr)
{
	bool hashed;

	if (!*key || strlen(key) > SL_KEY_ARG_MAX) {
		pr_error("--key: '%.40s' is not a key of 1 to %u bytes", key,
			 SL_KEY_ARG_MAX);
		return -EINVAL;
	}
	/* as the service does before its first check (sl_checker_init) */
	if (sodium_init() < 0) {
		pr_error("--key: cannot initialise libsodium to hash the key");
		return -EIO;
	}
	/* an address is named as an address (query ADDR): --key is the
	 * hashed key, as the API counts it under a rule without
	 * api_key_is_address
	 */
	sl_check_key_addr(key, false, addr, &hashed);
	return 0;
}
