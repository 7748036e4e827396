/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The problems found in one file (a rule file, the service config): every
 * one collected, in file order, each with its position, rule and field,
 * then printed as lines or as one JSON array.
 */
#ifndef SL_UTIL_PROBLEMS_H
#define SL_UTIL_PROBLEMS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

/* Problems kept per file; more are counted, not listed. */
#define SL_MAX_PROBLEMS		100

struct sl_problem {
	unsigned line, column;	/* 1-based; 0: the file as a whole */
	char rule[40];		/* the rule's name, "#N" when it has none, or "" */
	char field[64];		/* "limit", "key.ipv4_prefix", "sync.node", or "" */
	char message[256];
};

struct sl_problems {
	const char *file;
	struct sl_problem list[SL_MAX_PROBLEMS];
	unsigned nr;		/* kept in list[] */
	unsigned total;		/* found, nr of them kept */
	bool oom;		/* a problem could not be represented */
};

void sl_problems_init(struct sl_problems *pb, const char *file);
void sl_problem_add(struct sl_problems *pb, unsigned line, unsigned column,
		    const char *rule, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* "FILE:LINE:COL: rule 'R': FIELD: message", one line each. */
void sl_problems_print(const struct sl_problems *pb, FILE *f);
/* The same for warnings: "FILE:LINE: rule 'R': FIELD: warning: ...". */
void sl_warnings_print(const struct sl_problems *pb, FILE *f);
/* [{"file", "line", "column", "rule", "field", "message"}, ...]; line,
 * column, rule and field only when known.
 */
json_object *sl_problems_to_json(const struct sl_problems *pb);

/* For callers that need only the verdict: PB's problems (and a lack of
 * memory) to stderr, PB freed, ERR returned.
 */
int sl_problems_report(int err, struct sl_problems *pb);

#endif /* SL_UTIL_PROBLEMS_H */
