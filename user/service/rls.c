// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proto/rls.pb-c.h"
#include "service/grpc_server.h"
#include "service/ratelimit_fields.h"
#include "service/rls.h"
#include "sl_key.h"

typedef Envoy__Service__Ratelimit__V3__RateLimitRequest Request;
typedef Envoy__Service__Ratelimit__V3__RateLimitDescriptor Descriptor;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse Response;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__DescriptorStatus Status;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit Limit;
typedef Envoy__Service__Ratelimit__V3__Duration Duration;
typedef Envoy__Service__Ratelimit__V3__HeaderValue Header;

#define CODE_OK		ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__CODE__OK
#define CODE_OVER	ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__CODE__OVER_LIMIT

/* descriptors one call may carry: each is a check of the kernel program */
#define SL_RLS_MAX_DESCRIPTORS	64

struct envoy_rule {
	char name[sizeof(((struct sl_rule *)0)->name)];
	struct sl_envoy_match match;
};

struct sl_rls {
	struct sl_grpc_server *server;
	struct sl_checker *checker;
	struct sl_http_stats *stats;
	struct sl_http_stats *own_stats;	/* when none was given */
	pthread_mutex_t lock;			/* rules, nr */
	struct envoy_rule *rules;		/* in priority order */
	unsigned nr;
};

int sl_rls_set_rules(struct sl_rls *r, const struct sl_ruleset *rs)
{
	struct envoy_rule *rules, *old;
	unsigned i, nr = 0;

	rules = calloc(rs->nr ? rs->nr : 1, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	for (i = 0; i < rs->nr; i++) {
		if (!rs->specs[i].envoy)
			continue;
		snprintf(rules[nr].name, sizeof(rules[nr].name), "%s",
			 rs->specs[i].rule.name);
		rules[nr++].match = *rs->specs[i].envoy;
	}
	pthread_mutex_lock(&r->lock);
	old = r->rules;
	r->rules = rules;
	r->nr = nr;
	pthread_mutex_unlock(&r->lock);
	free(old);
	return 0;
}

/* The rule that answers D (NAME, and its client key's value in *key):
 * the first whose envoy: block meets it. false: none does.
 */
static bool find_rule(struct sl_rls *r, const char *domain,
		      const Descriptor *d, char *name, const char **key)
{
	const char *keys[SL_ENVOY_MAX_ENTRIES], *values[SL_ENVOY_MAX_ENTRIES];
	bool found = false;
	size_t i;

	if (d->n_entries > SL_ENVOY_MAX_ENTRIES)
		return false;
	for (i = 0; i < d->n_entries; i++) {
		keys[i] = d->entries[i]->key;
		values[i] = d->entries[i]->value;
	}
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nr && !found; i++) {
		if (!sl_envoy_matches(&r->rules[i].match, domain, keys, values,
				      d->n_entries))
			continue;
		memcpy(name, r->rules[i].name, sizeof(r->rules[i].name));
		*key = values[r->rules[i].match.client_entry];
		found = true;
	}
	pthread_mutex_unlock(&r->lock);
	return found;
}

/* The unit whose length is the window; UNKNOWN when none is (the name
 * and the RateLimit-Policy header then say the window): scaling the
 * limit to another unit would state a rate the window does not keep
 */
static int window_unit(__u64 window_ms)
{
	switch (window_ms) {
	case 1000:
		return ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__RATE_LIMIT__UNIT__SECOND;
	case 60000:
		return ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__RATE_LIMIT__UNIT__MINUTE;
	case 3600000:
		return ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__RATE_LIMIT__UNIT__HOUR;
	case 86400000:
		return ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__RATE_LIMIT__UNIT__DAY;
	}
	return ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__RATE_LIMIT__UNIT__UNKNOWN;
}

static __u32 clamp32(__u64 v)
{
	return v > UINT32_MAX ? UINT32_MAX : v;
}

/* One descriptor's answer, all its parts in one allocation */
struct answer {
	Status status;
	Limit limit;
	Duration until;
	struct sl_check_result res;
	struct sl_ratelimit_numbers n;
	bool matched;
};

/* The units a descriptor charges: its own hits_addend when not 0, else
 * the call's, else 1
 */
static __u64 hits_of(const Request *q, const Descriptor *d)
{
	if (d->hits_addend && d->hits_addend->value)
		return d->hits_addend->value;
	return q->hits_addend ? q->hits_addend : 1;
}

static enum sl_grpc_status check_descriptor(struct sl_rls *r, const Request *q,
					    const Descriptor *d,
					    struct answer *a, const char **msg)
{
	char name[sizeof(((struct sl_rule *)0)->name)];
	__u64 hits = hits_of(q, d);
	const char *key;
	int err;

	envoy__service__ratelimit__v3__rate_limit_response__descriptor_status__init(&a->status);
	a->status.code = CODE_OK;
	if (!find_rule(r, q->domain, d, name, &key)) {
		sl_http_stats_rls_descriptor(r->stats, SL_RLS_DESCRIPTOR_UNMATCHED);
		return SL_GRPC_OK;
	}
	if (!*key || strlen(key) > SL_ENVOY_VALUE_MAX) {
		*msg = "a client key's value is empty or longer than 256 bytes";
		return SL_GRPC_INVALID_ARGUMENT;
	}
	/* more units than the limit never fit: over, and nothing charged */
	err = hits > UINT32_MAX ? -ERANGE :
	      sl_check(r->checker, name, key, hits, &a->res);
	if (err == -ERANGE) {
		err = sl_check(r->checker, name, key, 0, &a->res);
		a->res.allowed = false;
	}
	if (err == -EOPNOTSUPP) {
		*msg = "hits_addend must be 1 under a sliding-log rule, which counts requests";
		return SL_GRPC_INVALID_ARGUMENT;
	}
	if (err == -ENOENT) {
		*msg = "the rule answering this descriptor is not running (rules applied from another file?)";
		return SL_GRPC_UNAVAILABLE;
	}
	if (err) {
		*msg = "the check failed: the kernel program or the central store";
		return SL_GRPC_UNAVAILABLE;
	}
	a->matched = true;
	sl_ratelimit_numbers(&a->res, &a->n);
	envoy__service__ratelimit__v3__rate_limit_response__rate_limit__init(&a->limit);
	envoy__service__ratelimit__v3__duration__init(&a->until);
	a->limit.name = a->res.rule.name;
	a->limit.requests_per_unit = clamp32(a->n.limit);
	a->limit.unit = window_unit(a->res.rule.window_ms);
	a->until.seconds = a->n.until_s;
	a->status.code = a->res.allowed ? CODE_OK : CODE_OVER;
	a->status.current_limit = &a->limit;
	a->status.limit_remaining = clamp32(a->n.remaining);
	a->status.duration_until_reset = &a->until;
	sl_http_stats_rls_descriptor(r->stats, a->res.allowed ?
				     SL_RLS_DESCRIPTOR_OK :
				     SL_RLS_DESCRIPTOR_OVER_LIMIT);
	return SL_GRPC_OK;
}

/* The descriptor the headers speak for: an over-limit one with the
 * longest wait, else the one with the least left
 */
static bool more_restrictive(const struct answer *a, const struct answer *b)
{
	if (a->res.allowed != b->res.allowed)
		return !a->res.allowed;
	if (!a->res.allowed)
		return a->n.retry_s > b->n.retry_s;
	return a->n.remaining < b->n.remaining;
}

static enum sl_grpc_status answer_call(struct sl_rls *r, const Request *q,
				       uint8_t **out, size_t *out_len,
				       const char **msg)
{
	char policy[SL_RATELIMIT_FIELD_MAX + 1], field[SL_RATELIMIT_FIELD_MAX + 1];
	Header h[2] = {
		ENVOY__SERVICE__RATELIMIT__V3__HEADER_VALUE__INIT,
		ENVOY__SERVICE__RATELIMIT__V3__HEADER_VALUE__INIT,
	};
	Header *hp[2] = { &h[0], &h[1] };
	Response resp = ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__INIT;
	const struct answer *worst = NULL;
	enum sl_grpc_status code = SL_GRPC_OK;
	struct answer *a;
	Status **st;
	size_t i;

	if (!*q->domain) {
		*msg = "the call has no domain";
		return SL_GRPC_INVALID_ARGUMENT;
	}
	if (!q->n_descriptors || q->n_descriptors > SL_RLS_MAX_DESCRIPTORS) {
		*msg = "a call carries 1 to 64 descriptors";
		return SL_GRPC_INVALID_ARGUMENT;
	}
	a = calloc(q->n_descriptors, sizeof(*a));
	st = calloc(q->n_descriptors, sizeof(*st));
	if (!a || !st) {
		code = SL_GRPC_RESOURCE_EXHAUSTED;
		*msg = "out of memory";
		goto out;
	}
	resp.overall_code = CODE_OK;
	for (i = 0; i < q->n_descriptors && !code; i++) {
		code = check_descriptor(r, q, q->descriptors[i], &a[i], msg);
		st[i] = &a[i].status;
		if (a[i].status.code == CODE_OVER)
			resp.overall_code = CODE_OVER;
		if (a[i].matched && (!worst || more_restrictive(&a[i], worst)))
			worst = &a[i];
	}
	if (code)
		goto out;
	resp.n_statuses = q->n_descriptors;
	resp.statuses = st;
	if (worst) {
		h[0].key = "RateLimit-Policy";
		h[0].value = (char *)sl_ratelimit_policy_field(policy,
						worst->res.rule.name, &worst->n);
		h[1].key = "RateLimit";
		h[1].value = (char *)sl_ratelimit_field(field,
						worst->res.rule.name, &worst->n);
		resp.n_response_headers_to_add = 2;
		resp.response_headers_to_add = hp;
	}
	*out_len = envoy__service__ratelimit__v3__rate_limit_response__get_packed_size(&resp);
	*out = malloc(*out_len ? *out_len : 1);
	if (!*out) {
		code = SL_GRPC_RESOURCE_EXHAUSTED;
		*msg = "out of memory";
		goto out;
	}
	envoy__service__ratelimit__v3__rate_limit_response__pack(&resp, *out);
out:
	free(st);
	free(a);
	return code;
}

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift;

	*v = 0;
	for (shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Does a string the answer depends on (the domain, an entry's key or
 * value) hold a NUL byte? protobuf-c ends its strings at the first one,
 * so "a\0b" would be taken for the key "a" (another client's count): the
 * HTTP API refuses a key with a NUL for the same reason. DEPTH 0 walks a
 * request, 1 a descriptor, 2 an entry. Wire format that does not parse is
 * left to protobuf-c to refuse.
 */
static bool nul_in_strings(const uint8_t *p, size_t len, unsigned depth)
{
	const uint8_t *end = p + len;
	uint64_t tag, n;

	while (p < end) {
		if (!varint(&p, end, &tag))
			return false;
		switch (tag & 7) {
		case 0:
			if (!varint(&p, end, &n))
				return false;
			break;
		case 1:
		case 5:
			n = (tag & 7) == 1 ? 8 : 4;
			if ((size_t)(end - p) < n)
				return false;
			p += n;
			break;
		case 2:
			if (!varint(&p, end, &n) || n > (size_t)(end - p))
				return false;
			if (((depth == 0 && tag >> 3 == 1) || depth == 2) &&
			    memchr(p, 0, n))
				return true;
			if (((depth == 0 && tag >> 3 == 2) ||
			     (depth == 1 && tag >> 3 == 1)) &&
			    nul_in_strings(p, n, depth + 1))
				return true;
			p += n;
			break;
		default:
			return false;
		}
	}
	return false;
}

int sl_rls_answer(struct sl_rls *r, const uint8_t *req, size_t len,
		  uint8_t **out, size_t *out_len, const char **msg)
{
	Request *q;
	enum sl_grpc_status code;

	*out = NULL;
	*out_len = 0;
	q = envoy__service__ratelimit__v3__rate_limit_request__unpack(NULL, len,
								      req);
	if (!q) {
		*msg = "the message is not a RateLimitRequest";
		code = SL_GRPC_INVALID_ARGUMENT;
	} else if (nul_in_strings(req, len, 0)) {
		*msg = "a domain, key or value contains a NUL byte";
		code = SL_GRPC_INVALID_ARGUMENT;
		envoy__service__ratelimit__v3__rate_limit_request__free_unpacked(q, NULL);
	} else {
		code = answer_call(r, q, out, out_len, msg);
		envoy__service__ratelimit__v3__rate_limit_request__free_unpacked(q, NULL);
	}
	sl_http_stats_rls_call(r->stats, code);
	return code;
}

static enum sl_grpc_status handle(void *arg, const uint8_t *req, size_t len,
				  uint8_t **out, size_t *out_len,
				  const char **msg)
{
	return sl_rls_answer(arg, req, len, out, out_len, msg);
}

int sl_rls_start(const struct sl_http_config *rc, struct sl_checker *checker,
		 struct sl_http_stats *stats, const struct sl_ruleset *rs,
		 struct sl_rls **out, bool *socket_failed)
{
	struct sl_rls *r = calloc(1, sizeof(*r));
	int err;

	*socket_failed = false;
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	r->checker = checker;
	r->stats = stats;
	if (!stats) {
		r->own_stats = calloc(1, sizeof(*r->own_stats));
		r->stats = r->own_stats;
	}
	err = r->stats ? sl_rls_set_rules(r, rs) : -ENOMEM;
	if (!err && rc)
		err = sl_grpc_start(rc, SL_RLS_METHOD, handle, r, &r->server,
				    socket_failed);
	if (err) {
		sl_rls_stop(r);
		return err;
	}
	*out = r;
	return 0;
}

void sl_rls_stop(struct sl_rls *r)
{
	if (!r)
		return;
	sl_grpc_stop(r->server);
	pthread_mutex_destroy(&r->lock);
	free(r->rules);
	free(r->own_stats);
	free(r);
}
