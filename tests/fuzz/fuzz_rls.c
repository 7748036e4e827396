// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_rls: arbitrary bytes as the message of a ShouldRateLimit call,
 * through sl_rls_answer() (protobuf-c's parse, the descriptors matched
 * against the rules' envoy: blocks, sl_check on a private instance with
 * the kernel's sl_check program, the answer packed).
 *
 * The expected answer is worked out here from the README ("Gateways:
 * Envoy's rate limit service"), not from service/rls.c, on the request as
 * protobuf-c parses it here:
 *   - bytes that are not a RateLimitRequest, no domain, no descriptor or
 *     more than 64: INVALID_ARGUMENT, and no answer;
 *   - otherwise OK (or INVALID_ARGUMENT for a matched descriptor's empty
 *     or over-long client key, or hits over 1 under sliding-log), and
 *     then the answer parses back as a RateLimitResponse with one status
 *     per descriptor, each OK or OVER_LIMIT, OVER_LIMIT overall exactly
 *     when one is, a status without current_limit OK, and either no
 *     header or RateLimit-Policy and RateLimit, whose rule is one that
 *     answered.
 */
#include "fuzz_common.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "instance/instance.h"
#include "proto/rls.pb-c.h"
#include "rules/rules.h"
#include "service/grpc_server.h"
#include "service/rls.h"
#include "slicelimit.skel.h"

typedef Envoy__Service__Ratelimit__V3__RateLimitRequest Request;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse Response;

#define OK_CODE		ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__CODE__OK
#define OVER_CODE	ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__CODE__OVER_LIMIT

/* short names and values, so that the fuzzer meets them */
static const char rules_yaml[] =
	"rules:\n"
	"  - {name: a, source: \"100::/64\", limit: 3, window: 1s,\n"
	"     envoy: {domain: d, descriptor: [{key: k}]}}\n"
	"  - {name: b, source: \"100::/64\", limit: 5, window: 1m, api_key_is_address: true,\n"
	"     envoy: {domain: d, descriptor: [{key: r}, {key: p, value: v}], client_key: r}}\n"
	"  - {name: c, source: \"100::/64\", limit: 2, window: 1s, algorithm: sliding-log,\n"
	"     envoy: {domain: e, descriptor: [{key: k}]}}\n";

static struct sl_instance in;
static struct sl_checker checker;
static struct sl_rls *rls;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sl_instance_opts o = { .clients = 4096 };
	struct sl_ruleset rs;
	bool on_socket;

	fuzz_report_open();
	fuzz_open_instance(&in, &o);
	fuzz_apply_rules(&in, "fuzz_rls.yaml", rules_yaml);
	if (sl_checker_init(&checker, bpf_program__fd(in.skel->progs.sl_check),
			    &in.maps))
		die("sl_checker_init failed");
	if (sl_rules_load_buffer("fuzz_rls.yaml", rules_yaml,
				 strlen(rules_yaml), &rs))
		die("the fuzzer's own rules do not load");
	/* no listener: the calls come straight to sl_rls_answer */
	if (sl_rls_start(NULL, &checker, NULL, &rs, &rls, &on_socket))
		die("sl_rls_start failed");
	sl_rules_free(&rs);
	return 0;
}

static void check_answer(const Request *q, const uint8_t *out, size_t len)
{
	Response *r = envoy__service__ratelimit__v3__rate_limit_response__unpack(NULL, len, out);
	bool over = false;
	size_t i;

	if (!r)
		die("the answer is not a RateLimitResponse");
	if (r->n_statuses != q->n_descriptors)
		die("%zu statuses for %zu descriptors", r->n_statuses,
		    q->n_descriptors);
	for (i = 0; i < r->n_statuses; i++) {
		const Envoy__Service__Ratelimit__V3__RateLimitResponse__DescriptorStatus *s = r->statuses[i];

		if (s->code != OK_CODE && s->code != OVER_CODE)
			die("status %zu: code %d", i, s->code);
		if (!s->current_limit && s->code != OK_CODE)
			die("status %zu: over a limit it does not name", i);
		if (s->current_limit && strcmp(s->current_limit->name, "a") &&
		    strcmp(s->current_limit->name, "b") &&
		    strcmp(s->current_limit->name, "c"))
			die("status %zu: a limit of no rule", i);
		over |= s->code == OVER_CODE;
	}
	if (r->overall_code != (over ? OVER_CODE : OK_CODE))
		die("overall %d, a status over: %d", r->overall_code, over);
	if (r->n_response_headers_to_add != 0 &&
	    (r->n_response_headers_to_add != 2 ||
	     strcmp(r->response_headers_to_add[0]->key, "RateLimit-Policy") ||
	     strcmp(r->response_headers_to_add[1]->key, "RateLimit") ||
	     r->response_headers_to_add[0]->value[0] != '"'))
		die("headers other than RateLimit-Policy and RateLimit");
	envoy__service__ratelimit__v3__rate_limit_response__free_unpacked(r, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Request *q = envoy__service__ratelimit__v3__rate_limit_request__unpack(NULL, size, data);
	const char *msg = NULL;
	uint8_t *out = NULL;
	size_t len = 0;
	int code;

	code = sl_rls_answer(rls, data, size, &out, &len, &msg);
	if (!q || !*q->domain || !q->n_descriptors || q->n_descriptors > 64) {
		if (code != SL_GRPC_INVALID_ARGUMENT || out)
			die("a request it cannot answer got status %d", code);
	} else if (code == SL_GRPC_OK) {
		check_answer(q, out, len);
	} else if (code != SL_GRPC_INVALID_ARGUMENT || !msg || out) {
		die("status %d (%s) for a well-formed request", code,
		    msg ? msg : "no message");
	}
	free(out);
	if (q)
		envoy__service__ratelimit__v3__rate_limit_request__free_unpacked(q, NULL);
	return 0;
}
