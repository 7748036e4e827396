// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "trace.h"

static int bad_line(const char *name, unsigned line, const char *what,
		    const char *tok)
{
	fprintf(stderr, "%s:%u: %s%s%s%s\n", name, line, what,
		tok ? " '" : "", tok ? tok : "", tok ? "'" : "");
	return -EINVAL;
}

/* A small column: 0 <= value < limit, else an error naming what it is. */
static int small_column(const char *name, unsigned line, const char *what,
			const char *tok, int limit, int *out)
{
	uint64_t v;

	if (sl_parse_uint(tok, 0, limit - 1, &v)) {
		fprintf(stderr, "%s:%u: %s '%s' is not one of 0..%d\n",
			name, line, what, tok, limit - 1);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int sl_trace_read(const char *name, FILE *f, int nr_cpus, int nr_nodes,
		  struct sl_trace *t)
{
	char buf[512], *tok[5], *save, *p;
	size_t cap = 0;
	unsigned line = 0;
	uint64_t t_ms;
	__u64 last = 0;
	int n, err = 0;

	memset(t, 0, sizeof(*t));
	while (fgets(buf, sizeof(buf), f)) {
		struct sl_trace_req r = { .cpu = -1, .node = -1 };
		int max = nr_nodes ? 4 : 3, col = 2;

		line++;
		if (!strchr(buf, '\n') && !feof(f)) {
			err = bad_line(name, line, "line longer than 511 bytes", NULL);
			break;
		}
		p = strchr(buf, '#');
		if (p)
			*p = '\0';
		n = 0;
		for (p = strtok_r(buf, " \t\r\n,", &save); p && n < 5;
		     p = strtok_r(NULL, " \t\r\n,", &save))
			tok[n++] = p;
		if (!n)
			continue;
		if (n < 2 || n > max) {
			err = bad_line(name, line, nr_nodes ?
				       "expected T_MS CLIENT [NODE [CPU]]" :
				       "expected T_MS CLIENT [CPU]", NULL);
			break;
		}
		err = sl_parse_uint(tok[0], 0, SL_TRACE_MAX_T_MS, &t_ms);
		if (err == -ERANGE) {
			fprintf(stderr, "%s:%u: time '%s' is past the latest T_MS, %llu ms (about 317 years)\n",
				name, line, tok[0], SL_TRACE_MAX_T_MS);
			err = -EINVAL;
			break;
		}
		if (err) {
			err = bad_line(name, line, "not a time in ms:", tok[0]);
			break;
		}
		r.t_ms = t_ms;
		if (r.t_ms < last) {
			err = bad_line(name, line, "time goes backwards:", tok[0]);
			break;
		}
		if (nr_nodes && !strcmp(tok[1], "sync") && n == 2) {
			r.sync = true;	/* a sync round at this time */
		} else if (sl_parse_addr(tok[1], &r.client)) {
			err = bad_line(name, line, "not an IPv4 or IPv6 address:",
				       tok[1]);
			break;
		}
		if (nr_nodes && n > col) {
			err = small_column(name, line, "node", tok[col++],
					   nr_nodes, &r.node);
			if (err)
				break;
		}
		if (n > col) {
			err = small_column(name, line, "CPU", tok[col], nr_cpus,
					   &r.cpu);
			if (err)
				break;
		}
		r.line = line;
		last = r.t_ms;
		if (t->nr == cap) {
			void *q;

			cap = cap ? cap * 2 : 1024;
			q = realloc(t->req, cap * sizeof(*t->req));
			if (!q) {
				err = -ENOMEM;
				break;
			}
			t->req = q;
		}
		t->req[t->nr++] = r;
	}
	if (!err && ferror(f))
		err = bad_line(name, line + 1, "read error", NULL);
	if (err)
		sl_trace_free(t);
	return err;
}

void sl_trace_free(struct sl_trace *t)
{
	free(t->req);
	t->req = NULL;
	t->nr = 0;
}
