// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <strings.h>
#include "service/http_parse.h"

/* RFC 9110's tchar: the characters of a method and a field name */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c);
}

static int hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode S in place ('+' as a space when PLUS), NUL-terminated;
 * a '%' not followed by two hex digits stays as it is. The decoded
 * length, which is past the first NUL when a %00 was decoded.
 */
static size_t unescape(char *s, bool plus)
{
	char *in = s, *out = s;
	int hi, lo;

	for (; *in; in++, out++) {
		if (*in == '%' && (hi = hex_value(in[1])) >= 0 &&
		    (lo = hex_value(in[2])) >= 0) {
			*out = (char)(hi << 4 | lo);
			in += 2;
		} else {
			*out = plus && *in == '+' ? ' ' : *in;
		}
	}
	*out = '\0';
	return (size_t)(out - s);
}

/* "a=1&b&c=%41": arguments in place; those past SL_HTTP_MAX_ARGS are
 * dropped (the API reads four).
 */
static void split_query(char *q, struct sl_http_req *req)
{
	char *next, *eq;
	size_t n;

	while (q) {
		next = strchr(q, '&');
		if (next)
			*next++ = '\0';
		if (*q && req->nr_args < SL_HTTP_MAX_ARGS) {
			struct sl_http_arg *a = &req->args[req->nr_args++];

			eq = strchr(q, '=');
			if (eq)
				*eq++ = '\0';
			n = unescape(q, true);
			if (strlen(q) != n)	/* a name with a %00 */
				req->query_nul = true;
			a->name = q;
			a->value = eq;
			a->value_len = eq ? unescape(eq, true) : 0;
			if (eq && strlen(eq) != a->value_len)
				req->query_nul = true;
		}
		q = next;
	}
}

/* "METHOD SP /target SP HTTP/1.x", NUL-terminated at the CRLF */
static int parse_request_line(char *line, struct sl_http_req *req)
{
	char *target, *version, *query;
	size_t n;

	for (n = 0; is_tchar((unsigned char)line[n]); n++)
		;
	if (!n || line[n] != ' ')
		return -EINVAL;
	line[n] = '\0';
	req->method = line;
	target = line + n + 1;
	version = strchr(target, ' ');
	if (*target != '/' || !version)
		return -EINVAL;
	*version++ = '\0';
	for (query = target; *query; query++)	/* visible ASCII only */
		if ((unsigned char)*query <= ' ' || (unsigned char)*query >= 0x7f)
			return -EINVAL;
	if (!strcmp(version, "HTTP/1.1"))
		req->http10 = false;
	else if (!strcmp(version, "HTTP/1.0"))
		req->http10 = true;
	else if (!strncmp(version, "HTTP/", 5))
		return -EPROTONOSUPPORT;
	else
		return -EINVAL;
	query = strchr(target, '?');
	if (query)
		*query++ = '\0';
	req->path = target;
	n = unescape(target, false);
	req->path_nul = strlen(target) != n;
	split_query(query, req);
	return 0;
}

/* Content-Length: digits only, below 2^62; the same value when repeated */
static int content_length(const char *v, struct sl_http_req *req)
{
	long long n = 0;
	const char *p;

	if (!*v)
		return -EINVAL;
	for (p = v; *p; p++) {
		if (*p < '0' || *p > '9' || n > (1LL << 58))
			return -EINVAL;
		n = n * 10 + (*p - '0');
	}
	if (req->content_length >= 0 && req->content_length != n)
		return -EINVAL;
	req->content_length = n;
	return 0;
}

/* Does the comma-separated list V hold TOKEN (case-insensitive)? */
static bool has_token(const char *v, const char *token)
{
	size_t n = strlen(token);

	while (*v) {
		while (*v == ' ' || *v == '\t' || *v == ',')
			v++;
		if (!strncasecmp(v, token, n) &&
		    (!v[n] || v[n] == ',' || v[n] == ' ' || v[n] == '\t'))
			return true;
		while (*v && *v != ',')
			v++;
	}
	return false;
}

static int header_field(char *name, char *v, size_t vlen,
			struct sl_http_req *req)
{
	if (!strcasecmp(name, "content-length"))
		return content_length(v, req);
	if (!strcasecmp(name, "transfer-encoding")) {
		req->chunked = true;
	} else if (!strcasecmp(name, "authorization")) {
		req->authorization = v;
		req->authorization_len = vlen;
	} else if (!strcasecmp(name, "connection")) {
		if (has_token(v, "close"))
			req->keep_alive = false;
		else if (has_token(v, "keep-alive"))
			req->keep_alive = true;
	} else if (!strcasecmp(name, "expect")) {
		if (strcasecmp(v, "100-continue"))
			return -EINVAL;
		req->expect_continue = true;
	}
	return 0;
}

/* "name: value", NUL-terminated at its CRLF; white space around the
 * value is not part of it
 */
static int parse_field(char *line, struct sl_http_req *req)
{
	char *v, *end;
	size_t n;

	for (n = 0; is_tchar((unsigned char)line[n]); n++)
		;
	if (!n || line[n] != ':')
		return -EINVAL;	/* also a folded line, a space before ':' */
	line[n] = '\0';
	for (v = line + n + 1; *v == ' ' || *v == '\t'; v++)
		;
	for (end = v; *end; end++)	/* no control bytes but HT */
		if (((unsigned char)*end < ' ' && *end != '\t') ||
		    (unsigned char)*end == 0x7f)
			return -EINVAL;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*end = '\0';
	return header_field(line, v, (size_t)(end - v), req);
}

long sl_http_parse_head(char *buf, size_t len, struct sl_http_req *req)
{
	size_t scan = len < SL_HTTP_HEAD_MAX ? len : SL_HTTP_HEAD_MAX;
	char *end = memmem(buf, scan, "\r\n\r\n", 4), *line, *crlf;
	long head;
	int err;

	if (!end)
		return len >= SL_HTTP_HEAD_MAX ? -EMSGSIZE : 0;
	head = end + 4 - buf;
	/* no NUL, bare CR or bare LF anywhere in the head */
	for (line = buf; line < end + 2; line++)
		if (!*line || (*line == '\r' && line[1] != '\n') ||
		    (*line == '\n' && (line == buf || line[-1] != '\r')))
			return -EINVAL;
	memset(req, 0, sizeof(*req));
	req->content_length = -1;
	end[2] = '\0';	/* the head is lines ending in "\r\n" */
	crlf = strstr(buf, "\r\n");
	*crlf = '\0';
	err = parse_request_line(buf, req);
	if (err)
		return err;
	req->keep_alive = !req->http10;
	for (line = crlf + 2; *line; line = crlf + 2) {
		crlf = strstr(line, "\r\n");
		*crlf = '\0';
		err = parse_field(line, req);
		if (err)
			return err;
	}
	return head;
}

const char *sl_http_req_arg(const struct sl_http_req *req, const char *name,
			    size_t *len)
{
	unsigned i;

	for (i = 0; i < req->nr_args; i++)
		if (!strcmp(req->args[i].name, name)) {
			if (len)
				*len = req->args[i].value_len;
			return req->args[i].value;
		}
	return NULL;
}
