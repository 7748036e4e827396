// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "service/check_body.h"

/* The string member NAME: 0 (absent or a string without NUL), -EINVAL */
static int string_member(json_object *o, const char *name, const char *what,
			 const char **out, char *why, size_t size)
{
	json_object *v;

	if (!json_object_object_get_ex(o, name, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string)) {
		snprintf(why, size, "'%s' must be a string (%s)", name, what);
		return -EINVAL;
	}
	*out = json_object_get_string(v);
	if (strlen(*out) != (size_t)json_object_get_string_len(v)) {
		snprintf(why, size, "'%s' contains a NUL byte", name);
		return -EINVAL;
	}
	return 0;
}

/* one JSON object and nothing after it but white space */
static json_object *one_object(const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *o;
	size_t end;

	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, text, (int)len);
	end = (size_t)tok->char_offset;
	json_tokener_free(tok);
	while (end < len && (text[end] == ' ' || text[end] == '\t' ||
	       text[end] == '\r' || text[end] == '\n'))
		end++;
	if (o && (!json_object_is_type(o, json_type_object) || end != len)) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

static int parse_members(struct sl_check_body *b, char *why, size_t size)
{
	json_object *v;
	int err;

	/* a field the API does not know is refused, not ignored: the
	 * client meant something this server does not do
	 */
	json_object_object_foreach(b->o, name, val) {
		(void)val;
		if (!strcmp(name, "rule") || !strcmp(name, "key") ||
		    !strcmp(name, "cost"))
			continue;
		snprintf(why, size, "unknown field '%.64s': the body has 'rule', 'key' and 'cost' only",
			 name);
		return -EINVAL;
	}
	err = string_member(b->o, "rule", "a rule's name", &b->rule, why, size);
	if (!err)
		err = string_member(b->o, "key", "an address, an API key, a user name",
				    &b->key, why, size);
	if (err || !json_object_object_get_ex(b->o, "cost", &v))
		return err;
	/* an integer, not "4" nor 4.0: json-c saturates at INT64_MAX, which
	 * the bound refuses too
	 */
	if (!json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 1 ||
	    json_object_get_int64(v) > UINT32_MAX) {
		snprintf(why, size, "%s", SL_CHECK_COST_RANGE);
		return -EINVAL;
	}
	b->cost = (__u32)json_object_get_int64(v);
	b->has_cost = true;
	return 0;
}

int sl_check_body_parse(const char *text, size_t len, struct sl_check_body *b,
			char *why, size_t size)
{
	int err;

	memset(b, 0, sizeof(*b));
	b->o = one_object(text, len);
	if (!b->o) {
		snprintf(why, size, "body is not one JSON object");
		return -EINVAL;
	}
	err = parse_members(b, why, size);
	if (err)
		sl_check_body_free(b);
	return err;
}

void sl_check_body_free(struct sl_check_body *b)
{
	json_object_put(b->o);
	b->o = NULL;
}
