// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * Host unit tests of the API's HTTP/1.1 head parser
 * (user/service/http_parse.c): what it accepts and what it refuses, a
 * head given a byte at a time, the head cap, Content-Length, the query's
 * decoding and its NUL marks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "service/http_parse.h"

/* Parse TEXT as the server would when it all came in one read */
static long parse(const char *text, struct sl_http_req *r)
{
	static char buf[SL_HTTP_HEAD_MAX * 2];

	snprintf(buf, sizeof(buf), "%s", text);
	return sl_http_parse_head(buf, strlen(text), r);
}

static void test_http_parse_get_with_query(void **state)
{
	const char *head = "GET /v1/check?rule=api&key=user+1%2Fx&deny_status HTTP/1.1\r\n"
			   "Host: x\r\nAuthorization:  Bearer abc \r\n\r\nNEXT";
	struct sl_http_req r;
	size_t len;

	(void)state;
	assert_int_equal(parse(head, &r), strlen(head) - 4);
	assert_string_equal(r.method, "GET");
	assert_string_equal(r.path, "/v1/check");
	assert_string_equal(sl_http_req_arg(&r, "rule", NULL), "api");
	assert_string_equal(sl_http_req_arg(&r, "key", &len), "user 1/x");
	assert_int_equal(len, 8);
	assert_null(sl_http_req_arg(&r, "deny_status", NULL));
	assert_null(sl_http_req_arg(&r, "cost", NULL));
	assert_string_equal(r.authorization, "Bearer abc");
	assert_int_equal(r.authorization_len, 10);
	assert_true(r.keep_alive);
	assert_int_equal(r.content_length, -1);
	assert_false(r.path_nul || r.query_nul);
}

static void test_http_parse_nul_marks(void **state)
{
	struct sl_http_req r;
	size_t len;

	(void)state;
	assert_true(parse("GET /v1/check?key=a%00b HTTP/1.1\r\n\r\n", &r) > 0);
	assert_true(r.query_nul);
	assert_false(r.path_nul);
	assert_string_equal(sl_http_req_arg(&r, "key", &len), "a");
	assert_int_equal(len, 3);
	assert_true(parse("GET /v1/clients/a%00b HTTP/1.1\r\n\r\n", &r) > 0);
	assert_true(r.path_nul);
	/* a '%' without two hex digits stays; '+' is a space only in the query */
	assert_true(parse("GET /a+%zz%4?k=%4 HTTP/1.1\r\n\r\n", &r) > 0);
	assert_string_equal(r.path, "/a+%zz%4");
	assert_string_equal(sl_http_req_arg(&r, "k", NULL), "%4");
}

static void test_http_parse_post_and_connection(void **state)
{
	struct sl_http_req r;

	(void)state;
	assert_true(parse("POST /v1/check HTTP/1.1\r\nContent-Length: 12\r\n"
			  "content-length: 12\r\nExpect: 100-continue\r\n"
			  "Connection: keep-alive, close\r\n\r\n", &r) > 0);
	assert_int_equal(r.content_length, 12);
	assert_true(r.expect_continue);
	assert_false(r.keep_alive);
	assert_true(parse("GET / HTTP/1.0\r\n\r\n", &r) > 0);
	assert_true(r.http10);
	assert_false(r.keep_alive);
	assert_true(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &r) > 0);
	assert_true(r.keep_alive);
	assert_true(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &r) > 0);
	assert_true(r.chunked);
}

static void test_http_parse_refuses_malformed(void **state)
{
	static const char *const bad[] = {
		"GET  / HTTP/1.1\r\n\r\n",		/* two spaces */
		"GET /\r\n\r\n",			/* no version */
		"GET http://x/ HTTP/1.1\r\n\r\n",	/* absolute form */
		"GET / HTTP/1.1\r\nHost : x\r\n\r\n",	/* space before ':' */
		"GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n",	/* folded line */
		"GET / HTTP/1.1\r\nA: b\nC: d\r\n\r\n",	/* bare LF */
		"GET / HTTP/1.1\r\nA: b\rC: d\r\n\r\n",	/* bare CR */
		"GET / HTTP/1.1\r\nNoColon\r\n\r\n",
		"GET /\x7f HTTP/1.1\r\n\r\n",
		"G(T / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: \r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
		"POST / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n",
		"GET / FTP/1.1\r\n\r\n",
	};
	struct sl_http_req r;
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("%s", bad[i]);
		assert_int_equal(parse(bad[i], &r), -EINVAL);
	}
	assert_int_equal(parse("GET / HTTP/2.0\r\n\r\n", &r), -EPROTONOSUPPORT);
	/* a NUL inside the head */
	{
		char buf[] = "GET / HTTP/1.1\r\nA: \0\r\n\r\n";

		assert_int_equal(sl_http_parse_head(buf, sizeof(buf) - 1, &r),
				 -EINVAL);
	}
}

/* A head that comes a byte at a time is incomplete (0) until its last
 * byte, and then the same as in one read
 */
static void test_http_parse_byte_at_a_time(void **state)
{
	const char *head = "GET /v1/check?rule=api&key=k HTTP/1.1\r\nHost: x\r\n\r\n";
	size_t n = strlen(head), i;
	char buf[256];
	struct sl_http_req r;

	(void)state;
	memcpy(buf, head, n);
	for (i = 0; i < n; i++)
		assert_int_equal(sl_http_parse_head(buf, i, &r), 0);
	assert_int_equal(sl_http_parse_head(buf, n, &r), (long)n);
	assert_string_equal(sl_http_req_arg(&r, "key", NULL), "k");
}

static void test_http_parse_head_cap(void **state)
{
	char *buf = malloc(SL_HTTP_HEAD_MAX * 2);
	struct sl_http_req r;
	size_t n;

	(void)state;
	assert_non_null(buf);
	/* a head of exactly the cap is read */
	n = (size_t)snprintf(buf, SL_HTTP_HEAD_MAX, "GET / HTTP/1.1\r\nA: ");
	memset(buf + n, 'a', SL_HTTP_HEAD_MAX - n - 4);
	memcpy(buf + SL_HTTP_HEAD_MAX - 4, "\r\n\r\n", 4);
	assert_int_equal(sl_http_parse_head(buf, SL_HTTP_HEAD_MAX, &r),
			 SL_HTTP_HEAD_MAX);
	/* one byte more is refused, complete or not */
	n = (size_t)snprintf(buf, SL_HTTP_HEAD_MAX, "GET / HTTP/1.1\r\nA: ");
	memset(buf + n, 'a', SL_HTTP_HEAD_MAX - n - 3);
	memcpy(buf + SL_HTTP_HEAD_MAX - 3, "\r\n\r\n", 4);
	assert_int_equal(sl_http_parse_head(buf, SL_HTTP_HEAD_MAX + 1, &r),
			 -EMSGSIZE);
	assert_int_equal(sl_http_parse_head(buf, SL_HTTP_HEAD_MAX - 1, &r), 0);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_parse_get_with_query),
		cmocka_unit_test(test_http_parse_nul_marks),
		cmocka_unit_test(test_http_parse_post_and_connection),
		cmocka_unit_test(test_http_parse_refuses_malformed),
		cmocka_unit_test(test_http_parse_byte_at_a_time),
		cmocka_unit_test(test_http_parse_head_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
