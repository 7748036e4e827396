// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/clock.h"
#include "instance/lists.h"
#include "util/parse.h"
#include "state/pinned.h"
#include "service/lists_api.h"

static unsigned fail(json_object **out, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static unsigned fail(json_object **out, unsigned status, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	*out = json_object_new_object();
	json_object_object_add(*out, "error", json_object_new_string(msg));
	return status;
}

static unsigned get_lists(const struct sl_maps *m, json_object **out)
{
	struct sl_list_item *items;
	__u64 now = sl_now_tai_ms(), offset = now - sl_now_real_ms();
	json_object *arr;
	size_t nr, i;
	int err;

	err = sl_list_read(m, now, &items, &nr);
	if (err)
		return fail(out, 503, "cannot read the lists: %s", strerror(-err));
	arr = json_object_new_array();
	for (i = 0; i < nr; i++)
		json_object_array_add(arr, sl_list_item_to_json(&items[i], now, offset));
	free(items);
	*out = sl_list_stats_to_json(m);
	json_object_object_add(*out, "lists", arr);
	return 200;
}

/* {"for": DUR, "reason": TEXT}, both optional: 0, or the status of a
 * failure answered in *out.
 */
static unsigned read_body(const char *body, size_t len, uint64_t *for_ms,
			  const char **reason, json_object **obj,
			  json_object **out)
{
	struct json_tokener *tok;
	json_object *o, *v;
	size_t end;

	*obj = NULL;
	if (!len)
		return 0;
	tok = json_tokener_new();
	if (!tok)
		return fail(out, 503, "out of memory");
	o = json_tokener_parse_ex(tok, body, len);
	end = tok->char_offset;
	json_tokener_free(tok);
	while (end < len && strchr(" \t\r\n", body[end]))
		end++;
	if (!o || !json_object_is_type(o, json_type_object) || end != len) {
		json_object_put(o);
		return fail(out, 400, "body is not one JSON object");
	}
	*obj = o;
	json_object_object_foreach(o, name, val) {
		(void)val;
		if (strcmp(name, "for") && strcmp(name, "reason"))
			return fail(out, 400, "unknown field '%.64s': the body has 'for' and 'reason' only",
				    name);
	}
	if (json_object_object_get_ex(o, "for", &v)) {
		const char *s = json_object_get_string(v);

		if (!json_object_is_type(v, json_type_string) ||
		    sl_parse_duration_ms(s, for_ms) || !*for_ms ||
		    *for_ms > SL_LIST_MAX_FOR_MS)
			return fail(out, 400, "'for' must be a duration from 1ms to 366d, as a string (\"90s\", \"1h\")");
	}
	if (json_object_object_get_ex(o, "reason", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return fail(out, 400, "'reason' must be a string");
		*reason = json_object_get_string(v);
		if (strlen(*reason) != (size_t)json_object_get_string_len(v))
			return fail(out, 400, "'reason' contains a NUL byte");
		if (strlen(*reason) >= SL_LIST_REASON_MAX)
			return fail(out, 400, "'reason' is %zu bytes, more than %u",
				    strlen(*reason), SL_LIST_REASON_MAX - 1);
	}
	return 0;
}

static unsigned change(const struct sl_maps *m, bool put, unsigned kind,
		       const char *prefix, const char *body, size_t len,
		       json_object **out)
{
	const char *reason = NULL;
	json_object *obj = NULL;
	struct sl_addr addr;
	uint64_t for_ms = 0;
	unsigned len128, status;
	char pfx[64];
	__u64 now;
	int err;

	err = sl_parse_prefix(prefix, &addr, &len128);
	if (err)
		return fail(out, 400, err == -EDOM ?
			    "'%.64s' has bits set past its prefix length" :
			    "'%.64s' is not an IPv4 or IPv6 address or prefix",
			    prefix);
	if (put) {
		status = read_body(body, len, &for_ms, &reason, &obj, out);
		if (status) {
			json_object_put(obj);
			return status;
		}
	}
	now = sl_now_tai_ms();
	err = put ? sl_list_add(m, kind, &addr, len128, for_ms, reason, now) :
		    sl_list_remove(m, kind, &addr, len128);
	json_object_put(obj);
	sl_format_prefix(&addr, len128, pfx, sizeof(pfx));
	if (err == -ENOENT && !put)
		return fail(out, 404, "%s is not on the %s list", pfx,
			    sl_list_name(kind));
	if (err)
		return fail(out, err == -ENOSPC ? 507 : 503, "cannot change the %s list: %s",
			    sl_list_name(kind), strerror(-err));
	*out = json_object_new_object();
	json_object_object_add(*out, put ? "added" : "removed",
			       json_object_new_string(sl_list_name(kind)));
	json_object_object_add(*out, "prefix", json_object_new_string(pfx));
	if (put)
		json_object_object_add(*out, "expires_ms", for_ms ?
			json_object_new_int64(now + for_ms - (now - sl_now_real_ms())) :
			NULL);
	return 200;
}

unsigned sl_lists_api(const struct sl_maps *m, const char *method,
		      const char *path, const char *body, size_t len,
		      json_object **out)
{
	bool get = !strcmp(method, "GET"), put = !strcmp(method, "PUT");
	bool del = !strcmp(method, "DELETE");
	const char *rest;
	unsigned kind;

	if (!*path || !strcmp(path, "/")) {
		if (get)
			return get_lists(m, out);
		return fail(out, 405, "method not allowed: GET /v1/lists");
	}
	if (!strncmp(path, "/block/", 7)) {
		kind = SL_LISTS_BLOCK;
		rest = path + 7;
	} else if (!strncmp(path, "/allow/", 7)) {
		kind = SL_LISTS_ALLOW;
		rest = path + 7;
	} else {
		return fail(out, 404, "no such endpoint: /v1/lists, /v1/lists/block/PREFIX, /v1/lists/allow/PREFIX");
	}
	if (!put && !del)
		return fail(out, 405, "method not allowed: PUT or DELETE /v1/lists/%s/PREFIX",
			    sl_list_name(kind));
	return change(m, put, kind, rest, body, len, out);
}
