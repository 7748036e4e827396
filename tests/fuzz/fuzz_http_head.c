// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_http_head: arbitrary bytes as what a connection of the API has
 * read, given to the head parser (user/service/http_parse.c) as the
 * server gives them.
 *
 * What must hold, from the parser's contract (http_parse.h):
 *   - the answer is a head length within what was read and within
 *     SL_HTTP_HEAD_MAX, 0, or -EMSGSIZE, -EPROTONOSUPPORT, -EINVAL;
 *   - 0 or -EMSGSIZE only when no "\r\n\r\n" ends a head within the cap;
 *   - a head's method is a token, its path starts with '/', Content-Length
 *     is -1 or what its digits say, every argument's decoded length is at
 *     least its string's;
 *   - the head without its last byte is incomplete (0): a head is never
 *     taken before it has all come.
 */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "service/http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t scan = size < SL_HTTP_HEAD_MAX ? size : SL_HTTP_HEAD_MAX;
	struct sl_http_req r;
	char *buf = malloc(size + 1), *again;
	bool ended;
	long n;
	unsigned i;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	ended = memmem(data, scan, "\r\n\r\n", 4) != NULL;
	n = sl_http_parse_head(buf, size, &r);
	if (n == 0 || n == -EMSGSIZE) {
		if (ended || (n == 0) != (size < SL_HTTP_HEAD_MAX))
			abort();
	} else if (n > 0) {
		if (!ended || (size_t)n > scan || !r.method || !*r.method ||
		    r.path[0] != '/' || r.content_length < -1 ||
		    r.nr_args > SL_HTTP_MAX_ARGS)
			abort();
		for (i = 0; i < r.nr_args; i++)
			if (!r.args[i].name || (r.args[i].value &&
			    strlen(r.args[i].value) > r.args[i].value_len))
				abort();
		again = malloc((size_t)n);
		if (again) {
			memcpy(again, data, (size_t)n - 1);
			if (sl_http_parse_head(again, (size_t)n - 1, &r) != 0)
				abort();
			free(again);
		}
	} else if (n != -EINVAL && n != -EPROTONOSUPPORT) {
		abort();
	}
	free(buf);
	return 0;
}
