/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTTP/1.1 request head (RFC 9112), parsed in place and strictly: a
 * request line "METHOD SP /TARGET SP HTTP/1.x CRLF", header fields
 * "name: value CRLF" (no space before the colon, no folded lines, no
 * bare CR or LF, no NUL), an empty line. Bounded: a head longer than
 * SL_HTTP_HEAD_MAX is refused whatever follows. Only the fields the API
 * reads are kept; the target's path is percent-decoded and its query
 * split into decoded arguments ('+' is a space there), with a note of
 * every decoded NUL so that "a%00b" is never taken for "a".
 *
 * No I/O and no allocation: the fuzz target and the unit test drive it
 * as the server does.
 */
#ifndef SL_SERVICE_HTTP_PARSE_H
#define SL_SERVICE_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#define SL_HTTP_HEAD_MAX	8192
#define SL_HTTP_MAX_ARGS	16

struct sl_http_arg {
	const char *name, *value;	/* value NULL: "name" with no '=' */
	size_t value_len;		/* decoded: strlen(value) < it on a NUL */
};

struct sl_http_req {
	const char *method;
	char *path;			/* decoded, NUL-terminated */
	bool path_nul;			/* the path decoded a %00 */
	bool query_nul;			/* some argument decoded a %00 */
	struct sl_http_arg args[SL_HTTP_MAX_ARGS];
	unsigned nr_args;
	bool http10;
	bool keep_alive;		/* the connection stays open after */
	bool expect_continue;		/* Expect: 100-continue */
	bool chunked;			/* Transfer-Encoding given */
	const char *authorization;	/* NULL when absent */
	size_t authorization_len;
	long long content_length;	/* -1 when absent */
};

/* Parse the head at the start of BUF (LEN bytes read so far; the bytes
 * are rewritten in place). The head's length with *REQ filled in; 0
 * when the head is not complete yet; -EMSGSIZE when it cannot end
 * within SL_HTTP_HEAD_MAX; -EPROTONOSUPPORT for a version other than
 * HTTP/1.0 and 1.1; -EINVAL for anything else malformed, a
 * Content-Length that is not digits or given twice differently among
 * them.
 */
long sl_http_parse_head(char *buf, size_t len, struct sl_http_req *req);

/* The first argument called NAME: NULL when there is none, or it has
 * no value ("?name").
 */
const char *sl_http_req_arg(const struct sl_http_req *req, const char *name,
			    size_t *len);

#endif /* SL_SERVICE_HTTP_PARSE_H */
