// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <json-c/json.h>
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

/* A text being written into a buffer: full once it would not fit. */
struct out {
	char *p, *end;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->full || (size_t)(o->end - o->p) <= n) {
		o->full = true;
		return;
	}
	memcpy(o->p, s, n);
	o->p += n;
}

static void put_str(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void put_i64(struct out *o, int64_t v)
{
	char digits[24];

	put(o, digits, sl_format_i64(v, digits));
}

size_t sl_format_u64(uint64_t v, char *buf)
{
	char tmp[20];
	size_t n = 0, i;

	do {
		tmp[n++] = '0' + v % 10;
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

size_t sl_format_i64(int64_t v, char *buf)
{
	if (v >= 0)
		return sl_format_u64(v, buf);
	buf[0] = '-';
	/* the magnitude as unsigned: INT64_MIN has no positive int64 */
	return 1 + sl_format_u64(-(uint64_t)v, buf + 1);
}

int sl_result_body_format(const struct sl_result_body *b, char *buf,
			  size_t size)
{
	struct out o = { buf, buf + size, false };

	if (!plain(b->rule) || !plain(b->key) || !plain(b->decision))
		return sl_result_body_format_json_c(b, buf, size);
	put_str(&o, b->allowed ? "{ \"allowed\": true, \"rule\": \"" :
				 "{ \"allowed\": false, \"rule\": \"");
	put_str(&o, b->rule);
	put_str(&o, "\", \"key\": \"");
	put_str(&o, b->key);
	put_str(&o, "\", \"limit\": ");
	put_i64(&o, b->limit);
	put_str(&o, ", \"window_s\": ");
	put_i64(&o, b->window_s);
	put_str(&o, ", \"used\": ");
	put_i64(&o, b->used);
	put_str(&o, ", \"remaining\": ");
	put_i64(&o, b->remaining);
	put_str(&o, ", \"reset_s\": ");
	put_i64(&o, b->reset_s);
	put_str(&o, ", \"retry_after_s\": ");
	put_i64(&o, b->retry_after_s);
	put_str(&o, ", \"decision\": \"");
	put_str(&o, b->decision);
	put_str(&o, "\" }");
	if (o.full)
		return -ENOSPC;
	*o.p = '\0';
	return (int)(o.p - buf);
}
