// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include "service/result_body.h"

/* json-c escapes '"', '\\', '/' and every byte below 0x20; a string
 * with none of them is written as it is.
 */
static bool plain(const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || *s == '/' ||
		    (unsigned char)*s < 0x20)
			return false;
	return true;
}

int sl_result_body_format_json_c(const struct sl_result_body *b, char *buf,
				 size_t size)
{
	json_object *o = json_object_new_object();
	const char *text;
	size_t len;

	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "allowed", json_object_new_boolean(b->allowed));
	json_object_object_add(o, "rule", json_object_new_string(b->rule));
	json_object_object_add(o, "key", json_object_new_string(b->key));
	json_object_object_add(o, "limit", json_object_new_int64(b->limit));
	json_object_object_add(o, "window_s", json_object_new_int64(b->window_s));
	json_object_object_add(o, "used", json_object_new_int64(b->used));
	json_object_object_add(o, "remaining", json_object_new_int64(b->remaining));
	json_object_object_add(o, "reset_s", json_object_new_int64(b->reset_s));
	json_object_object_add(o, "retry_after_s",
			       json_object_new_int64(b->retry_after_s));
	json_object_object_add(o, "decision", json_object_new_string(b->decision));
	text = json_object_to_json_string_length(o, JSON_C_TO_STRING_SPACED, &len);
	if (!text || len >= size) {
		json_object_put(o);
		return text ? -ENOSPC : -ENOMEM;
	}
	memcpy(buf, text, len + 1);
	json_object_put(o);
	return (int)len;
}

int sl_result_body_format(const struct sl_result_body *b, char *buf,
			  size_t size)
{
	int n;

	if (!plain(b->rule) || !plain(b->key) || !plain(b->decision))
		return sl_result_body_format_json_c(b, buf, size);
	n = snprintf(buf, size,
		     "{ \"allowed\": %s, \"rule\": \"%s\", \"key\": \"%s\", "
		     "\"limit\": %" PRId64 ", \"window_s\": %" PRId64 ", "
		     "\"used\": %" PRId64 ", \"remaining\": %" PRId64 ", "
		     "\"reset_s\": %" PRId64 ", \"retry_after_s\": %" PRId64 ", "
		     "\"decision\": \"%s\" }",
		     b->allowed ? "true" : "false", b->rule, b->key, b->limit,
		     b->window_s, b->used, b->remaining, b->reset_s,
		     b->retry_after_s, b->decision);
	return n < 0 ? -EINVAL : (size_t)n >= size ? -ENOSPC : n;
}
