// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include "service/http_conn.h"

/* answers waiting past this: read no more requests until they are sent */
#define HTTP_OUT_HIGH	65536
/* what a closing connection reads and drops before it closes: the rest
 * of a body it refused, so that its answer is not lost to a reset
 */
#define HTTP_DRAIN_MAX	(256 * 1024)

static void consume(struct http_conn *c, size_t n)
{
	memmove(c->in, c->in + n, c->in_len - n);
	c->in_len -= n;
	c->head_len = 0;
}

static void refuse(struct http_conn *c, const struct sl_http_server_opts *o,
		   unsigned status, const char *why)
{
	struct sl_http_exchange x = { .req = &c->req, .out = &c->out };

	c->out.close = true;
	c->closing = true;
	o->ops->refuse(o->ctx, &x, status, why);
}

static void refuse_head(struct http_conn *c,
			const struct sl_http_server_opts *o, long err)
{
	memset(&c->req, 0, sizeof(c->req));
	c->out.head_only = false;
	c->out.keep_alive = false;
	c->drain_max = HTTP_DRAIN_MAX;
	if (err == -EMSGSIZE)
		refuse(c, o, 431, "request head larger than 8192 bytes");
	else if (err == -EPROTONOSUPPORT)
		refuse(c, o, 505, "HTTP/1.1 and HTTP/1.0 only");
	else
		refuse(c, o, 400, "malformed request head");
}

/* The head at the front of the input: 1 a request whose body is to be
 * read, 2 answered already and the next request may follow, 0 not whole
 * yet, -1 answered and the connection closing.
 */
static int take_head(struct http_conn *c, const struct sl_http_server_opts *o)
{
	struct sl_http_exchange x = { .req = &c->req, .out = &c->out };
	const struct sl_http_req *r = &c->req;
	long n = sl_http_parse_head(c->in, c->in_len, &c->req);
	bool body;

	if (!n)
		return 0;
	if (n < 0) {
		refuse_head(c, o, n);
		return -1;
	}
	c->head_len = n;
	c->out.head_only = !strcmp(r->method, "HEAD");
	c->out.keep_alive = r->http10 && r->keep_alive;
	/* a refused body longer than the drain is not waited for: the
	 * connection is closed once answered, as the client may well be
	 * sending hundreds of megabytes
	 */
	c->drain_max = r->content_length > HTTP_DRAIN_MAX ? 0 : HTTP_DRAIN_MAX;
	body = r->chunked || r->content_length > 0;
	/* answered before its body: the body is never read, so the
	 * connection cannot go on
	 */
	c->out.close = !r->keep_alive || body;
	if (o->ops->admit && o->ops->admit(o->ctx, &x)) {
		if (c->out.close) {
			c->closing = true;
			return -1;
		}
		consume(c, (size_t)n);
		return 2;
	}
	c->out.close = !r->keep_alive;
	if (r->chunked) {
		refuse(c, o, 411, "a body needs a Content-Length (no Transfer-Encoding)");
		return -1;
	}
	if (r->content_length > (long long)o->max_body) {
		refuse(c, o, 413, "body larger than 4096 bytes");
		return -1;
	}
	if (r->expect_continue && body &&
	    c->in_len < (size_t)n + (size_t)r->content_length)
		sl_http_reply_continue(&c->out);
	return 1;
}

/* Answer one request whose head and body are all in: its body
 * NUL-terminated for the handler, the byte after it put back after
 */
static void answer(struct http_conn *c, const struct sl_http_server_opts *o,
		   size_t body_len)
{
	struct sl_http_exchange x = { .req = &c->req, .out = &c->out };
	size_t end = (size_t)c->head_len + body_len;
	char after = c->in[end];

	if (body_len) {
		c->in[end] = '\0';
		x.body = c->in + c->head_len;
		x.body_len = body_len;
	}
	o->ops->handle(o->ctx, &x);
	c->in[end] = after;
	if (c->out.close)
		c->closing = true;
	consume(c, end);
}

static enum http_conn_want flush(struct http_conn *c)
{
	ssize_t n;

	while (c->out_sent < c->out.len) {
		n = send(c->fd, c->out.buf + c->out_sent,
			 c->out.len - c->out_sent, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return HTTP_CONN_WRITE;
		if (n <= 0)
			return HTTP_CONN_CLOSE;
		c->out_sent += (size_t)n;
	}
	c->out.len = c->out_sent = 0;
	if (c->out.failed)
		return HTTP_CONN_CLOSE;
	if (c->closing && !c->draining) {
		if (!c->drain_max)
			return HTTP_CONN_CLOSE;
		shutdown(c->fd, SHUT_WR);
		c->draining = true;
	}
	return HTTP_CONN_READ;
}

/* No whole request left: send the answers; a client that sent all it
 * will is closed once they are out
 */
static enum http_conn_want idle(struct http_conn *c)
{
	enum http_conn_want want = flush(c);

	return want == HTTP_CONN_READ && c->eof ? HTTP_CONN_CLOSE : want;
}

/* Every whole request in the input, answered in order; when many wait,
 * their answers are sent in turns of HTTP_OUT_HIGH
 */
static enum http_conn_want process(struct http_conn *c,
				   const struct sl_http_server_opts *o)
{
	enum http_conn_want want;
	size_t body;
	int t;

	for (;;) {
		while (!c->closing && c->out.len <= HTTP_OUT_HIGH) {
			if (!c->head_len) {
				t = take_head(c, o);
				if (t <= 0)
					return idle(c);
				if (t == 2)
					continue;
			}
			body = c->req.content_length > 0 ?
			       (size_t)c->req.content_length : 0;
			if (c->in_len < (size_t)c->head_len + body)
				return idle(c);
			answer(c, o, body);
		}
		want = flush(c);
		if (want != HTTP_CONN_READ || c->closing)
			return want;
	}
}

enum http_conn_want http_conn_readable(struct http_conn *c,
				       const struct sl_http_server_opts *o)
{
	char sink[4096];
	ssize_t n;

	if (c->draining) {
		n = recv(c->fd, sink, sizeof(sink), 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return HTTP_CONN_READ;
		if (n <= 0)
			return HTTP_CONN_CLOSE;
		c->drained += (size_t)n;
		return c->drained > c->drain_max ? HTTP_CONN_CLOSE :
						   HTTP_CONN_READ;
	}
	n = recv(c->fd, c->in + c->in_len, SL_HTTP_IN_CAP - c->in_len, 0);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? HTTP_CONN_READ :
							   HTTP_CONN_CLOSE;
	if (n == 0)
		c->eof = true;	/* answer what came, then close */
	c->in_len += (size_t)n;
	return process(c, o);
}

enum http_conn_want http_conn_writable(struct http_conn *c,
				       const struct sl_http_server_opts *o)
{
	enum http_conn_want want = flush(c);

	if (want != HTTP_CONN_READ || c->draining)
		return want;
	return process(c, o);
}
