// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "util/parse.h"
#include "sl_key.h"
#include "replay/trace.h"
#include "rules/rules.h"

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

/* "proto=tcp", "port=N", "dst=ADDR": what a rule matches on besides the
 * client. Each at most once a line.
 */
static int parse_field(const char *name, unsigned line, char *tok,
		       unsigned *seen, struct sl_trace_req *r)
{
	static const char *const keys[] = { "proto", "port", "dst" };
	char *v = strchr(tok, '=');
	uint64_t port;
	unsigned k, proto;

	*v++ = '\0';
	for (k = 0; k < 3 && strcmp(tok, keys[k]); k++)
		;
	if (k == 3) {
		fprintf(stderr, "%s:%u: unknown field '%s=': the fields are proto=, port= and dst=\n",
			name, line, tok);
		return -EINVAL;
	}
	if (*seen & (1u << k)) {
		fprintf(stderr, "%s:%u: %s= given twice\n", name, line, tok);
		return -EINVAL;
	}
	*seen |= 1u << k;
	switch (k) {
	case 0:
		/* a request has a protocol: "any" is a rule's */
		if (sl_parse_name(v, sl_protocol_name, SL_PROTO_ICMP + 1, &proto) ||
		    proto == SL_PROTO_ANY)
			return bad_line(name, line, "proto= is one of tcp, udp, icmp, not",
					v);
		r->proto = proto;
		return 0;
	case 1:
		if (sl_parse_uint(v, 0, 65535, &port))
			return bad_line(name, line, "port= is a port 0..65535, not",
					v);
		r->has_port = true;
		r->port = port;
		return 0;
	default:
		if (sl_parse_addr(v, &r->dst))
			return bad_line(name, line, "dst= is an IPv4 or IPv6 address, not",
					v);
		r->has_dst = true;
		return 0;
	}
}

/* "cut", "heal", "join": a node's link to its peers (replay --nodes). */
static __u8 link_event(const char *word)
{
	static const char *const words[] = {
		[SL_TRACE_CUT] = "cut",
		[SL_TRACE_HEAL] = "heal",
		[SL_TRACE_JOIN] = "join",
	};
	__u8 i;

	for (i = SL_TRACE_CUT; i <= SL_TRACE_JOIN; i++)
		if (!strcmp(word, words[i]))
			return i;
	return 0;
}

/* One line's tokens (n >= 1) into *r. */
static int parse_line(const char *name, unsigned line, char **tok, int n,
		      int nr_cpus, int nr_nodes, struct sl_trace_req *r)
{
	int max = nr_nodes ? 4 : 3, col = 2, pos = 0, i, err;
	unsigned seen = 0;
	char *positional[4];
	uint64_t t_ms;

	/* the columns in their order; fields (KEY=VALUE) after the client */
	for (i = 0; i < n; i++) {
		if (i >= 2 && strchr(tok[i], '=')) {
			err = parse_field(name, line, tok[i], &seen, r);
			if (err)
				return err;
		} else if (pos < max) {
			positional[pos++] = tok[i];
		} else {
			pos = max + 1;
		}
	}
	if (pos < 2 || pos > max)
		return bad_line(name, line, nr_nodes ?
				"expected T_MS CLIENT [NODE [CPU]] [FIELD=VALUE...]" :
				"expected T_MS CLIENT [CPU] [FIELD=VALUE...]", NULL);
	err = sl_parse_uint(positional[0], 0, SL_TRACE_MAX_T_MS, &t_ms);
	if (err == -ERANGE) {
		fprintf(stderr, "%s:%u: time '%s' is past the latest T_MS, %llu ms (about 317 years)\n",
			name, line, positional[0], SL_TRACE_MAX_T_MS);
		return -EINVAL;
	}
	if (err)
		return bad_line(name, line, "not a time in ms:", positional[0]);
	r->t_ms = t_ms;
	if (nr_nodes && !strcmp(positional[1], "sync") && pos == 2) {
		if (seen)
			return bad_line(name, line, "a sync line has no fields",
					NULL);
		r->sync = true;	/* a sync round at this time */
		return 0;
	}
	if (nr_nodes && pos == 3 && (r->link = link_event(positional[1]))) {
		if (seen)
			return bad_line(name, line, "a cut, heal or join line has no fields",
					NULL);
		return small_column(name, line, "node", positional[2],
				    nr_nodes, &r->node);
	}
	if (sl_parse_addr(positional[1], &r->client))
		return bad_line(name, line, "not an IPv4 or IPv6 address:",
				positional[1]);
	if (nr_nodes && pos > col) {
		err = small_column(name, line, "node", positional[col++],
				   nr_nodes, &r->node);
		if (err)
			return err;
	}
	if (pos > col) {
		err = small_column(name, line, "CPU", positional[col], nr_cpus,
				   &r->cpu);
		if (err)
			return err;
	}
	if (r->proto == SL_PROTO_ICMP && r->has_port)
		return bad_line(name, line, "ICMP has no port: leave out port=",
				NULL);
	if (r->has_dst &&
	    sl_addr_is_ipv4(&r->dst) != sl_addr_is_ipv4(&r->client))
		return bad_line(name, line, "dst= and the client are of different families",
				NULL);
	return 0;
}

int sl_trace_read(const char *name, FILE *f, int nr_cpus, int nr_nodes,
		  struct sl_trace *t)
{
	char buf[512], *tok[SL_TRACE_MAX_TOKENS + 1], *save, *p;
	size_t cap = 0;
	unsigned line = 0;
	__u64 last = 0;
	int n, err = 0;

	memset(t, 0, sizeof(*t));
	while (fgets(buf, sizeof(buf), f)) {
		struct sl_trace_req r = { .cpu = -1, .node = -1 };

		line++;
		if (!strchr(buf, '\n') && !feof(f)) {
			err = bad_line(name, line, "line longer than 511 bytes", NULL);
			break;
		}
		p = strchr(buf, '#');
		if (p)
			*p = '\0';
		n = 0;
		for (p = strtok_r(buf, " \t\r\n,", &save);
		     p && n <= SL_TRACE_MAX_TOKENS;
		     p = strtok_r(NULL, " \t\r\n,", &save))
			tok[n++] = p;
		if (!n)
			continue;
		if (n > SL_TRACE_MAX_TOKENS) {
			err = bad_line(name, line, "too many columns", NULL);
			break;
		}
		err = parse_line(name, line, tok, n, nr_cpus, nr_nodes, &r);
		if (err)
			break;
		if (r.t_ms < last) {
			err = bad_line(name, line, "time goes backwards:", tok[0]);
			break;
		}
		r.line = line;
		last = r.t_ms;
		err = sl_grow((void **)&t->req, &cap, t->nr + 1, sizeof(*t->req));
		if (err)
			break;
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
