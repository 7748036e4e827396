// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "service/ratelimit_fields.h"
#include "service/result_body.h"
#include "sl_key.h"

static __u64 seconds_up(__u64 ms)
{
	return (ms + 999) / 1000;
}

void sl_ratelimit_numbers(const struct sl_check_result *res,
			  struct sl_ratelimit_numbers *n)
{
	n->limit = sl_rule_quota(&res->rule);
	n->window_s = seconds_up(res->rule.window_ms);
	n->remaining = res->view.remaining;
	n->reset_s = seconds_up(res->view.reset_ms);
	n->retry_s = res->view.retry_after_ms ?
		     seconds_up(res->view.retry_after_ms) : 1;
	n->until_s = res->allowed ? n->reset_s : n->retry_s;
}

/* "NAME";P1=V1;P2=V2 (a structured-field item with two parameters) */
static const char *sf_item(char *buf, const char *name, char p1, __u64 v1,
			   char p2, __u64 v2)
{
	size_t len = strnlen(name, sizeof(((struct sl_rule *)0)->name));
	char *p = buf;

	*p++ = '"';
	memcpy(p, name, len);
	p += len;
	*p++ = '"';
	*p++ = ';';
	*p++ = p1;
	*p++ = '=';
	p += sl_format_u64(v1, p);
	*p++ = ';';
	*p++ = p2;
	*p++ = '=';
	sl_format_u64(v2, p);
	return buf;
}

const char *sl_ratelimit_policy_field(char *buf, const char *rule,
				      const struct sl_ratelimit_numbers *n)
{
	return sf_item(buf, rule, 'q', n->limit, 'w', n->window_s);
}

const char *sl_ratelimit_field(char *buf, const char *rule,
			       const struct sl_ratelimit_numbers *n)
{
	return sf_item(buf, rule, 'r', n->remaining, 't', n->until_s);
}
