/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The JSON body of POST /v1/check: {"rule": NAME, "key": KEY, "cost": N},
 * each member optional (the query says what the body does not), nothing
 * else in it: one JSON object and white space after it, no member the
 * API does not know, strings without NUL, a cost that is a JSON integer
 * from 1 to 2^32 - 1.
 */
#ifndef SL_SERVICE_CHECK_BODY_H
#define SL_SERVICE_CHECK_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>
#include <linux/types.h>

#define SL_CHECK_COST_RANGE "'cost' must be a whole number of units from 1 to the rule's limit (GET /v1/clients/KEY reads without charging)"

struct sl_check_body {
	const char *rule, *key;		/* NULL: not in the body */
	bool has_cost;
	__u32 cost;
	json_object *o;			/* holds rule and key */
};

/* 0 with *B filled in (sl_check_body_free after), -EINVAL with WHY
 * saying what is wrong, -ENOMEM
 */
int sl_check_body_parse(const char *text, size_t len, struct sl_check_body *b,
			char *why, size_t size);
void sl_check_body_free(struct sl_check_body *b);

#endif /* SL_SERVICE_CHECK_BODY_H */
