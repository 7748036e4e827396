/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the fuzz targets share: the stream findings go to, the stop on a
 * finding, a private instance with the target's own rules, and the check of
 * a refused file's problem list. Static inline, so that each target stays
 * one .c (the Makefile's fuzz rule) and takes only what it uses.
 */
#ifndef SL_FUZZ_COMMON_H
#define SL_FUZZ_COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "instance/instance.h"
#include "util/yaml_doc.h"
#include "rules/rules.h"

/* run.sh passes -close_fd_mask=2 (the code under test prints what it
 * refuses); findings go to a copy of stderr, taken by fuzz_report_open()
 * before that, unbuffered so that nothing is lost to the abort.
 */
static FILE *report;

static inline void fuzz_report_open(void)
{
	int fd = dup(2);

	report = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (report)
		setvbuf(report, NULL, _IONBF, 0);
}

/* A finding, or a setup that cannot go on: say so, named by the target
 * (run.sh shows the lines that start "fuzz_NAME: "), and abort so that
 * libFuzzer keeps the input.
 */
static inline __attribute__((format(printf, 1, 2), noreturn))
void die(const char *fmt, ...)
{
	FILE *out = report ? report : stderr;
	va_list ap;

	va_start(ap, fmt);
	fprintf(out, "%s: ", program_invocation_short_name);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	abort();
}

static inline void fuzz_open_instance(struct sl_instance *in,
				      const struct sl_instance_opts *o)
{
	int err = sl_instance_open(in, o);

	if (err)
		die("sl_instance_open: %s (run as root)", strerror(-err));
}

/* The target's own rule file (NAME for its messages) onto IN's maps. */
static inline void fuzz_apply_rules(struct sl_instance *in, const char *name,
				    const char *yaml)
{
	struct sl_ruleset rs;
	int err;

	err = sl_rules_load_buffer(name, yaml, strlen(yaml), &rs);
	if (err)
		die("the fuzzer's own rules do not load: %d", err);
	err = sl_rules_apply(&in->maps, &rs);
	sl_rules_free(&rs);
	if (err)
		die("sl_rules_apply: %s", strerror(-err));
}

/* The problem list of a refused input (DATA, SIZE): at least one problem,
 * each at a line of the input (in file order when IN_ORDER) with a message,
 * and a --json form that parses back with the same count. NULL when it
 * holds (the list is then printed, as the command would), else what broke.
 */
static inline const char *fuzz_problems_check(const struct sl_problems *pb,
					      const uint8_t *data, size_t size,
					      bool in_order)
{
	unsigned lines = 1, i;
	json_object *arr, *back;
	size_t k, nr;

	for (k = 0; k < size; k++)
		/* every byte that ends a line in some encoding: an upper bound */
		lines += data[k] == '\n' || data[k] == '\r' || data[k] == 0x85 ||
			 data[k] == 0xa8 || data[k] == 0xa9;
	if (!pb->total || pb->nr > pb->total || pb->nr > SL_MAX_PROBLEMS)
		return "refused with no problem, or a miscount";
	for (i = 0; i < pb->nr; i++) {
		if (pb->list[i].line < 1 || pb->list[i].line > lines + 1)
			return "a problem at a line outside the input";
		if (in_order && i && pb->list[i - 1].line > pb->list[i].line)
			return "problems not in file order";
		if (!pb->list[i].message[0])
			return "a problem without a message";
	}
	arr = sl_problems_to_json(pb);
	back = json_tokener_parse(json_object_to_json_string(arr));
	nr = back ? json_object_array_length(back) : 0;
	json_object_put(back);
	json_object_put(arr);
	if (!back || nr != pb->nr)
		return "the problems' JSON does not parse back";
	sl_problems_print(pb, stderr);
	return NULL;
}

#endif /* SL_FUZZ_COMMON_H */
