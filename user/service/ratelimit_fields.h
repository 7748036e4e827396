/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The numbers a check's answer carries, and the IETF RateLimit and
 * RateLimit-Policy header fields that say them: written once, for the
 * HTTP API's headers and for the rate limit service's
 * response_headers_to_add, so both say the same.
 */
#ifndef SL_SERVICE_RATELIMIT_FIELDS_H
#define SL_SERVICE_RATELIMIT_FIELDS_H

#include "service/check.h"

/* The longest field value: a rule name of 31 bytes, two 20-digit numbers */
#define SL_RATELIMIT_FIELD_MAX	96

struct sl_ratelimit_numbers {
	__u64 limit;		/* the rule's quota per window */
	__u64 window_s;		/* the window, in seconds rounded up */
	__u64 remaining;
	__u64 reset_s;		/* until the count next falls */
	/* until a request of the units asked fits; a denial's is at
	 * least 1 (RFC 9110's delay-seconds), the same number in every
	 * place that says it
	 */
	__u64 retry_s;
	__u64 until_s;		/* RateLimit's t=: reset_s, or retry_s when denied */
};

void sl_ratelimit_numbers(const struct sl_check_result *res,
			  struct sl_ratelimit_numbers *n);

/* RateLimit-Policy: "NAME";q=LIMIT;w=WINDOW and RateLimit:
 * "NAME";r=REMAINING;t=UNTIL, each into BUF (SL_RATELIMIT_FIELD_MAX + 1
 * bytes), NUL-terminated: BUF.
 */
const char *sl_ratelimit_policy_field(char *buf, const char *rule,
				      const struct sl_ratelimit_numbers *n);
const char *sl_ratelimit_field(char *buf, const char *rule,
			       const struct sl_ratelimit_numbers *n);

#endif /* SL_SERVICE_RATELIMIT_FIELDS_H */
