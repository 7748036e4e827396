// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A gRPC call on the HTTP/2 session: its headers (who asks, and what),
 * its body gathered within the server's bounds, the one message
 * unframed, the handler run and its answer framed, or a Trailers-Only
 * status when the call is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/clock.h"
#include "service/grpc_server_internal.h"

/* bytes of unfinished calls held at once, over every connection: a flood
 * of half-sent calls is refused before it takes the service's memory
 */
#define MAX_HELD_BYTES		(32u << 20)

static void stream_unhold(struct sl_grpc_stream *st)
{
	st->conn->g->held -= st->in_cap;
	free(st->in);
	st->in = NULL;
	st->in_len = st->in_cap = 0;
}

void sl_grpc_stream_free(struct sl_grpc_stream *st)
{
	stream_unhold(st);
	free(st->out);
	*st->pprev = st->next;
	if (st->next)
		st->next->pprev = st->pprev;
	free(st);
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f,
			    void *user)
{
	struct sl_grpc_conn *c = user;
	struct sl_grpc_stream *st;

	if (f->hd.type != NGHTTP2_HEADERS ||
	    f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	st->conn = c;
	st->id = f->hd.stream_id;
	st->start_ms = sl_now_mono_ns() / 1000000;
	st->next = c->streams;
	if (st->next)
		st->next->pprev = &st->next;
	st->pprev = &c->streams;
	c->streams = st;
	nghttp2_session_set_stream_user_data(s, st->id, st);
	return 0;
}

static bool header_is(const uint8_t *name, size_t len, const char *want)
{
	return len == strlen(want) && !memcmp(name, want, len);
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f,
		     const uint8_t *name, size_t namelen, const uint8_t *value,
		     size_t valuelen, uint8_t flags, void *user)
{
	struct sl_grpc_conn *c = user;
	struct sl_grpc_stream *st = nghttp2_session_get_stream_user_data(s,
							f->hd.stream_id);

	if (!st || f->hd.type != NGHTTP2_HEADERS)
		return 0;
	/* HPACK's own accounting: each field counts 32 besides its bytes */
	st->header_bytes += namelen + valuelen + 32;
	if (st->header_bytes > SL_GRPC_MAX_HEADER_BYTES) {
		st->refused = SL_GRPC_RESOURCE_EXHAUSTED;
		return 0;
	}
	if (header_is(name, namelen, ":method"))
		st->post = header_is(value, valuelen, "POST");
	else if (header_is(name, namelen, ":path"))
		st->path_ok = header_is(value, valuelen, c->g->path);
	else if (header_is(name, namelen, "authorization") && c->l->tcp)
		st->authorized = sl_bearer_ok((const char *)value, valuelen,
					      c->g->token_hash);
	return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id,
			 const uint8_t *data, size_t len, void *user)
{
	struct sl_grpc_conn *c = user;
	struct sl_grpc_stream *st = nghttp2_session_get_stream_user_data(s, id);
	size_t want, cap;
	uint8_t *p;

	if (!st || st->refused)
		return 0;
	want = st->in_len + len;
	if (want > SL_GRPC_PREFIX + SL_GRPC_MAX_MESSAGE) {
		st->refused = SL_GRPC_RESOURCE_EXHAUSTED;
		stream_unhold(st);
		return 0;
	}
	if (want > st->in_cap) {
		cap = st->in_cap ? st->in_cap : 512;
		while (cap < want)
			cap *= 2;
		if (cap > SL_GRPC_PREFIX + SL_GRPC_MAX_MESSAGE)
			cap = SL_GRPC_PREFIX + SL_GRPC_MAX_MESSAGE;
		if (c->g->held - st->in_cap + cap > MAX_HELD_BYTES ||
		    !(p = realloc(st->in, cap))) {
			st->refused = SL_GRPC_RESOURCE_EXHAUSTED;
			stream_unhold(st);
			return 0;
		}
		c->g->held += cap - st->in_cap;
		st->in = p;
		st->in_cap = cap;
	}
	memcpy(st->in + st->in_len, data, len);
	st->in_len = want;
	return 0;
}

static ssize_t read_answer(nghttp2_session *s, int32_t id, uint8_t *buf,
			   size_t len, uint32_t *flags,
			   nghttp2_data_source *src, void *user)
{
	struct sl_grpc_stream *st = src->ptr;
	size_t n = st->out_len - st->out_off;
	nghttp2_nv trailer[] = {
		{ (uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1,
		  NGHTTP2_NV_FLAG_NONE },
	};

	if (n > len)
		n = len;
	memcpy(buf, st->out + st->out_off, n);
	st->out_off += n;
	if (st->out_off == st->out_len) {
		*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (nghttp2_submit_trailer(s, id, trailer, 1))
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return n;
}

#define NV(n, v) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), \
		   NGHTTP2_NV_FLAG_NONE }

/* A call that ends without a message: gRPC's Trailers-Only answer, the
 * status in the one header block. MSG is plain ASCII with no '%', so it
 * needs no percent-encoding.
 */
static int answer_status(struct sl_grpc_stream *st, enum sl_grpc_status code,
			 const char *msg)
{
	snprintf(st->status, sizeof(st->status), "%u", code);
	nghttp2_nv hdrs[] = {
		NV(":status", "200"),
		NV("content-type", "application/grpc"),
		NV("grpc-status", st->status),
		NV("grpc-message", msg),
	};

	return nghttp2_submit_response(st->conn->s, st->id, hdrs, 4, NULL);
}

/* The body as one gRPC message: 0 with *msg and *len, or the status */
static enum sl_grpc_status unframe(const struct sl_grpc_stream *st,
				   const uint8_t **msg, size_t *len,
				   const char **why)
{
	uint32_t n;

	if (st->in_len < SL_GRPC_PREFIX) {
		*why = "a call carries one message: 5-byte prefix and the message";
		return SL_GRPC_INTERNAL;
	}
	if (st->in[0] == 1) {
		*why = "compressed messages are not supported (grpc-encoding identity)";
		return SL_GRPC_UNIMPLEMENTED;
	}
	if (st->in[0] != 0) {
		*why = "the message's flag is neither 0 nor 1";
		return SL_GRPC_INTERNAL;
	}
	n = (uint32_t)st->in[1] << 24 | (uint32_t)st->in[2] << 16 |
	    (uint32_t)st->in[3] << 8 | st->in[4];
	if (n > SL_GRPC_MAX_MESSAGE) {
		*why = "message larger than 64 KiB";
		return SL_GRPC_RESOURCE_EXHAUSTED;
	}
	if (st->in_len != SL_GRPC_PREFIX + (size_t)n) {
		*why = st->in_len < SL_GRPC_PREFIX + (size_t)n ?
		       "the message is cut short of its length" :
		       "a unary call carries one message";
		return SL_GRPC_INTERNAL;
	}
	*msg = st->in + SL_GRPC_PREFIX;
	*len = n;
	return SL_GRPC_OK;
}

/* The whole request is in: check who asks and what, run the handler */
static int answer(struct sl_grpc_stream *st)
{
	struct sl_grpc_server *g = st->conn->g;
	const char *why = "";
	const uint8_t *msg;
	enum sl_grpc_status code;
	uint8_t *out = NULL;
	size_t len, out_len = 0;
	nghttp2_data_provider dp = { .source.ptr = st, .read_callback = read_answer };
	nghttp2_nv hdrs[] = {
		NV(":status", "200"),
		NV("content-type", "application/grpc"),
	};

	if (st->answered)
		return 0;
	st->answered = true;
	if (st->conn->l->tcp && !st->authorized)
		return answer_status(st, SL_GRPC_UNAUTHENTICATED,
				     "this listener needs 'authorization: Bearer TOKEN' metadata (rls.token_file)");
	if (st->refused == SL_GRPC_RESOURCE_EXHAUSTED)
		return answer_status(st, st->refused,
				     "call larger than this server takes (headers 16 KiB, message 64 KiB)");
	if (!st->post || !st->path_ok)
		return answer_status(st, SL_GRPC_UNIMPLEMENTED,
				     "unknown method: this server has only POST /envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit");
	code = unframe(st, &msg, &len, &why);
	if (code)
		return answer_status(st, code, why);
	code = g->handler(g->arg, msg, len, &out, &out_len, &why);
	stream_unhold(st);
	if (code) {
		free(out);
		return answer_status(st, code, why);
	}
	st->out = malloc(SL_GRPC_PREFIX + out_len);
	if (!st->out) {
		free(out);
		return answer_status(st, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
	}
	st->out[0] = 0;
	st->out[1] = out_len >> 24;
	st->out[2] = out_len >> 16;
	st->out[3] = out_len >> 8;
	st->out[4] = out_len;
	if (out_len)
		memcpy(st->out + SL_GRPC_PREFIX, out, out_len);
	free(out);
	st->out_len = SL_GRPC_PREFIX + out_len;
	return nghttp2_submit_response(st->conn->s, st->id, hdrs, 2, &dp);
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f,
			 void *user)
{
	struct sl_grpc_stream *st;

	if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
	    !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
	if (!st)
		return 0;
	return answer(st) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t error,
			   void *user)
{
	struct sl_grpc_stream *st = nghttp2_session_get_stream_user_data(s, id);

	if (st) {
		nghttp2_session_set_stream_user_data(s, id, NULL);
		sl_grpc_stream_free(st);
	}
	return 0;
}

int sl_grpc_callbacks_new(nghttp2_session_callbacks **cbs)
{
	if (nghttp2_session_callbacks_new(cbs))
		return -ENOMEM;
	nghttp2_session_callbacks_set_on_begin_headers_callback(*cbs,
							on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(*cbs, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(*cbs,
							on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_recv_callback(*cbs,
							     on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(*cbs,
							on_stream_close);
	return 0;
}
