// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_trace: arbitrary bytes as a replay trace ("T_MS CLIENT [CPU]
 * [proto=P] [port=N] [dst=ADDR]" per line), read from a FILE* (fmemopen) by sl_trace_read(), as `replay` reads
 * its file or stdin.
 *
 * Invariants: no crash, no leak; the result is 0, -EINVAL or -ENOMEM; on
 * an error the trace is empty; on success times never go backwards, every
 * CPU is -1 or below nr_cpus, line numbers increase and stay within the
 * input's lines, and the trace written back out as text reads back to the
 * very same requests.
 */
#include "fuzz_common.h"
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "replay/trace.h"

#define NR_CPUS	4

static void fail(const char *what, size_t i)
{
	fprintf(report ? report : stderr, "fuzz_trace: request %zu: %s\n", i, what);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_report_open();
	return 0;
}

static void check_round_trip(const struct sl_trace *t)
{
	struct sl_trace back;
	char *text = NULL;
	size_t len = 0, i;
	FILE *out = open_memstream(&text, &len);
	FILE *in;
	int err;

	if (!out)
		return;
	for (i = 0; i < t->nr; i++) {
		char ip[INET6_ADDRSTRLEN];

		const struct sl_trace_req *r = &t->req[i];
		static const char *const proto[] = { "", "tcp", "udp", "icmp" };
		char dst[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, r->client.byte, ip, sizeof(ip));
		if (r->cpu >= 0)
			fprintf(out, "%llu %s %d", (unsigned long long)r->t_ms,
				ip, r->cpu);
		else
			fprintf(out, "%llu,%s", (unsigned long long)r->t_ms, ip);
		/* the fields in another order than the parser saw them */
		if (r->has_dst) {
			inet_ntop(AF_INET6, r->dst.byte, dst, sizeof(dst));
			fprintf(out, " dst=%s", dst);
		}
		if (r->has_port)
			fprintf(out, ",port=%u", r->port);
		if (r->proto)
			fprintf(out, " proto=%s", proto[r->proto & 3]);
		fputc('\n', out);
	}
	fclose(out);
	in = fmemopen(text, len ? len : 1, "r");
	if (!in) {
		free(text);
		return;
	}
	err = sl_trace_read("round-trip", in, NR_CPUS, 0, &back);
	fclose(in);
	if (err)
		fail("the trace written back out does not read back", 0);
	if (back.nr != t->nr)
		fail("the trace read back has another number of requests", back.nr);
	for (i = 0; i < t->nr; i++)
		if (back.req[i].t_ms != t->req[i].t_ms ||
		    back.req[i].cpu != t->req[i].cpu ||
		    back.req[i].proto != t->req[i].proto ||
		    back.req[i].has_port != t->req[i].has_port ||
		    back.req[i].port != t->req[i].port ||
		    back.req[i].has_dst != t->req[i].has_dst ||
		    memcmp(&back.req[i].dst, &t->req[i].dst,
			   sizeof(t->req[i].dst)) ||
		    memcmp(&back.req[i].client, &t->req[i].client,
			   sizeof(t->req[i].client)))
			fail("read back differently", i);
	sl_trace_free(&back);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_trace t;
	unsigned lines = 1, last_line = 0;
	size_t i;
	FILE *f;
	int err;

	if (!size)
		return 0;	/* fmemopen() needs a buffer */
	for (i = 0; i < size; i++)
		lines += data[i] == '\n';
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	err = sl_trace_read("fuzz.trace", f, NR_CPUS, 0, &t);
	fclose(f);
	if (err) {
		if (err != -EINVAL && err != -ENOMEM)
			fail("unexpected error code", 0);
		if (t.req || t.nr)
			fail("an error left requests behind", t.nr);
		return 0;
	}
	for (i = 0; i < t.nr; i++) {
		const struct sl_trace_req *r = &t.req[i];

		if (i && r->t_ms < t.req[i - 1].t_ms)
			fail("time goes backwards", i);
		if (r->cpu < -1 || r->cpu >= NR_CPUS)
			fail("CPU out of range", i);
		if (r->line <= last_line || r->line > lines)
			fail("line number out of order or past the input", i);
		last_line = r->line;
	}
	check_round_trip(&t);
	sl_trace_free(&t);
	return 0;
}
