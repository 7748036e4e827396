// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "service/http_reply.h"

#define SL_HTTP_OUT_MIN	4096

static const char *reason(unsigned status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 417: return "Expectation Failed";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	}
	return "Unknown";
}

/* Room for N more bytes: false (and o->failed) when it cannot grow */
static bool room(struct sl_http_out *o, size_t n)
{
	size_t cap = o->cap ? o->cap : SL_HTTP_OUT_MIN;
	char *p;

	if (o->failed)
		return false;
	if (o->len + n <= o->cap)
		return true;
	while (cap < o->len + n)
		cap *= 2;
	p = realloc(o->buf, cap);
	if (!p) {
		o->failed = true;
		return false;
	}
	o->buf = p;
	o->cap = cap;
	return true;
}

static void put(struct sl_http_out *o, const char *s, size_t n)
{
	if (!room(o, n))
		return;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* IMF-fixdate of this second, formatted again only when it moves: a
 * thread's own copy
 */
static const char *http_date(void)
{
	static __thread char text[40];
	static __thread time_t when = -1;
	time_t now = time(NULL);
	struct tm tm;

	if (now != when && gmtime_r(&now, &tm)) {
		strftime(text, sizeof(text), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		when = now;
	}
	return text;
}

void sl_http_reply_begin(struct sl_http_out *o, unsigned status)
{
	char line[96];
	int n;

	o->mark = o->len;
	o->status = status;
	n = snprintf(line, sizeof(line), "HTTP/1.1 %u %s\r\nDate: %s\r\n",
		     status, reason(status), http_date());
	put(o, line, (size_t)n);
}

void sl_http_reply_field(struct sl_http_out *o, const char *name,
			 const char *value)
{
	size_t a = strlen(name), b = strlen(value);

	if (!room(o, a + b + 4))
		return;
	memcpy(o->buf + o->len, name, a);
	memcpy(o->buf + o->len + a, ": ", 2);
	memcpy(o->buf + o->len + a + 2, value, b);
	memcpy(o->buf + o->len + a + 2 + b, "\r\n", 2);
	o->len += a + b + 4;
}

void sl_http_reply_end(struct sl_http_out *o, const char *body, size_t len)
{
	char line[64];
	int n;

	n = snprintf(line, sizeof(line), "Content-Length: %zu\r\n%s\r\n", len,
		     o->close ? "Connection: close\r\n" :
		     o->keep_alive ? "Connection: keep-alive\r\n" : "");
	put(o, line, (size_t)n);
	if (!o->head_only)
		put(o, body, len);
}

void sl_http_reply_continue(struct sl_http_out *o)
{
	static const char line[] = "HTTP/1.1 100 Continue\r\n\r\n";

	put(o, line, sizeof(line) - 1);
}

void sl_http_reply_abort(struct sl_http_out *o)
{
	o->len = o->mark;
}

void sl_http_out_free(struct sl_http_out *o)
{
	free(o->buf);
	o->buf = NULL;
	o->len = o->cap = 0;
}
