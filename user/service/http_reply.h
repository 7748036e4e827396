/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An HTTP/1.1 answer written into a connection's output buffer, so that
 * every answer ready on a connection goes out in one send(): the status
 * line and Date, the handler's fields in its order, Content-Length (and
 * Connection: close when the connection ends after it), the body unless
 * the request was HEAD. The buffer grows when an answer needs it
 * (/metrics) and is kept for the connection's next answers: no
 * allocation per request once it is large enough.
 */
#ifndef SL_SERVICE_HTTP_REPLY_H
#define SL_SERVICE_HTTP_REPLY_H

#include <stdbool.h>
#include <stddef.h>

struct sl_http_out {
	char *buf;
	size_t len, cap;
	size_t mark;		/* where the answer being written starts */
	bool failed;		/* out of memory: the connection is closed */
	bool head_only;		/* HEAD: fields without the body */
	bool close;		/* Connection: close, then close */
	bool keep_alive;	/* HTTP/1.0 kept open: Connection: keep-alive */
	unsigned status;	/* of the last answer begun */
};

/* Begin an answer: "HTTP/1.1 STATUS Reason" and Date. */
void sl_http_reply_begin(struct sl_http_out *o, unsigned status);
/* One field; NAME and VALUE without CR or LF (the handlers' own). */
void sl_http_reply_field(struct sl_http_out *o, const char *name,
			 const char *value);
/* Content-Length, Connection: close when o->close (keep-alive for an
 * HTTP/1.0 request kept open), the blank line and
 * LEN bytes of BODY (none for HEAD).
 */
void sl_http_reply_end(struct sl_http_out *o, const char *body, size_t len);
/* "100 Continue": the client waits for it before its body */
void sl_http_reply_continue(struct sl_http_out *o);
/* Drop the answer begun (its handler failed) */
void sl_http_reply_abort(struct sl_http_out *o);
void sl_http_out_free(struct sl_http_out *o);

#endif /* SL_SERVICE_HTTP_REPLY_H */
