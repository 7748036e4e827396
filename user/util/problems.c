// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "util/log.h"
#include "util/problems.h"

void sl_problems_init(struct sl_problems *pb, const char *file)
{
	memset(pb, 0, sizeof(*pb));
	pb->file = file;
}

void sl_problem_add(struct sl_problems *pb, unsigned line, unsigned column,
		    const char *rule, const char *field, const char *fmt, ...)
{
	struct sl_problem *p;
	unsigned at;
	va_list ap;

	pb->total++;
	if (pb->nr >= SL_MAX_PROBLEMS)
		return;
	/* kept in file order: the checks across fields come after a rule's
	 * own, and a duplicate name after the rule it repeats
	 */
	for (at = pb->nr; at > 0; at--) {
		const struct sl_problem *q = &pb->list[at - 1];

		if (q->line < line || (q->line == line && q->column <= column))
			break;
	}
	memmove(&pb->list[at + 1], &pb->list[at],
		(pb->nr - at) * sizeof(pb->list[0]));
	pb->nr++;
	p = &pb->list[at];
	p->line = line;
	p->column = column;
	snprintf(p->rule, sizeof(p->rule), "%s", rule ? rule : "");
	snprintf(p->field, sizeof(p->field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(p->message, sizeof(p->message), fmt, ap);
	va_end(ap);
}

static void problems_print(const struct sl_problems *pb, FILE *f,
			   int priority, const char *what)
{
	unsigned i;

	/* each problem is a line of the log when it goes there */
	const char *prio = f == stderr ? sl_log_prefix(priority) : "";

	for (i = 0; i < pb->nr; i++) {
		const struct sl_problem *p = &pb->list[i];

		fprintf(f, "%s%s", prio, pb->file);
		if (p->line)
			fprintf(f, ":%u", p->line);
		fprintf(f, ": ");
		if (p->rule[0])
			fprintf(f, "rule '%s': ", p->rule);
		if (p->field[0])
			fprintf(f, "%s: ", p->field);
		fprintf(f, "%s%s\n", what, p->message);
	}
	if (pb->total > pb->nr)
		fprintf(f, "%s%s: %u more %s not shown\n", prio, pb->file,
			pb->total - pb->nr, *what ? "warnings" : "problems");
}

void sl_problems_print(const struct sl_problems *pb, FILE *f)
{
	problems_print(pb, f, SL_LOG_ERR, "");
}

void sl_warnings_print(const struct sl_problems *pb, FILE *f)
{
	problems_print(pb, f, SL_LOG_WARNING, "warning: ");
}

json_object *sl_problems_to_json(const struct sl_problems *pb)
{
	json_object *arr = json_object_new_array();
	unsigned i;

	for (i = 0; i < pb->nr; i++) {
		const struct sl_problem *p = &pb->list[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "file", json_object_new_string(pb->file));
		if (p->line) {
			json_object_object_add(o, "line", json_object_new_int(p->line));
			json_object_object_add(o, "column", json_object_new_int(p->column));
		}
		if (p->rule[0])
			json_object_object_add(o, "rule", json_object_new_string(p->rule));
		if (p->field[0])
			json_object_object_add(o, "field", json_object_new_string(p->field));
		json_object_object_add(o, "message", json_object_new_string(p->message));
		json_object_array_add(arr, o);
	}
	return arr;
}

int sl_problems_report(int err, struct sl_problems *pb)
{
	if (pb->oom)
		fprintf(stderr, "%s%s: out of memory\n", sl_log_prefix(SL_LOG_ERR),
			pb->file);
	sl_problems_print(pb, stderr);
	free(pb);
	return err;
}
