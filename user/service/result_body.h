/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The JSON body of a check or client lookup, the same bytes json-c's
 * json_object_to_json_string() writes for it, without its allocations
 * (or printf's parsing) when no string in it needs escaping.
 */
#ifndef SL_SERVICE_RESULT_BODY_H
#define SL_SERVICE_RESULT_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_result_body {
	bool allowed;
	const char *rule;
	const char *key;
	int64_t limit;
	int64_t window_s;
	int64_t used;
	int64_t remaining;
	int64_t reset_s;
	int64_t retry_after_s;
	const char *decision;
};

/* Write it into BUF (SIZE bytes, NUL-terminated): its length, or -ENOSPC
 * or -ENOMEM.
 */
int sl_result_body_format(const struct sl_result_body *b, char *buf,
			  size_t size);

/* The same through json-c (the reference the fast path must equal). */
int sl_result_body_format_json_c(const struct sl_result_body *b, char *buf,
				 size_t size);

/* V in decimal into BUF (room for 21 bytes), NUL-terminated: its length. */
size_t sl_format_u64(uint64_t v, char *buf);
size_t sl_format_i64(int64_t v, char *buf);

#endif /* SL_SERVICE_RESULT_BODY_H */
