// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --key KEY of query and reset: a check API key named as the API names it. */
#include <errno.h>
#include <sodium.h>
#include <string.h>
#include "cli/commands.h"
#include "util/log.h"
#include "service/check.h"

/* as /v1/check takes it (service/http.c) */
#define SL_KEY_ARG_MAX	256

int sl_client_key_arg(const char *key)
{
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
	return 0;
}

void sl_client_key_addr(const char *key, const struct sl_rule *rule,
			struct sl_addr *addr)
{
	bool hashed;

	/* the one mapping /v1/check and /v1/clients use: a key that is an
	 * address names the packets' client only under a rule that says so
	 */
	sl_check_key_addr(key, rule->api_key_is_address, addr, &hashed);
}
