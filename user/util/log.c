// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/log.h"

int sl_verbose;
bool sl_json;
bool sl_pretty;
bool sl_json_stream;

/* Problems kept for the error object beyond the first message: enough for
 * every problem of a rule file at its limits, bounded so that a service
 * under --json logging errors for days does not grow without end.
 */
#define SL_MAX_PROBLEMS	1024

static char *first_error;
static json_object *problems;
static unsigned problems_left_off;
static bool answered;

void sl_error_answered(void)
{
	answered = true;
}

static void keep_problem(json_object *p)
{
	if (!problems)
		problems = json_object_new_array();
	if (json_object_array_length(problems) >= SL_MAX_PROBLEMS) {
		problems_left_off++;
		json_object_put(p);
		return;
	}
	json_object_array_add(problems, p);
}

const char *sl_privilege_hint(int err)
{
	return err == -EPERM || err == -EACCES ?
	       " (slicelimit needs root, or CAP_BPF and CAP_NET_ADMIN; XDP through libxdp also CAP_SYS_ADMIN)" :
	       "";
}

static bool log_journal;

void sl_log_init(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char end;

	/* the variable is inherited: it only counts when stderr is still
	 * the stream it names, not redirected to a file or a pipe since
	 */
	log_journal = js && sscanf(js, "%llu:%llu%c", &dev, &ino, &end) == 2 &&
		      !fstat(STDERR_FILENO, &st) &&
		      (unsigned long long)st.st_dev == dev &&
		      (unsigned long long)st.st_ino == ino;
}

const char *sl_log_prefix(int priority)
{
	static const char *const prefix[] = {
		"<0>", "<1>", "<2>", "<3>", "<4>", "<5>", "<6>", "<7>",
	};

	return log_journal && priority >= 0 && priority <= 7 ?
	       prefix[priority] : "";
}

/* One line to stderr in one write(2): lines of the service's threads
 * never interleave (stderr is unbuffered: a stdio call is a write each).
 * A line longer than the buffer is cut, its newline kept.
 */
static void write_line(int priority, const char *prefix, const char *msg)
{
	char line[1280];
	int n;

	n = snprintf(line, sizeof(line), "%s%s%s\n", sl_log_prefix(priority),
		     prefix, msg);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	fflush(stderr);		/* anything stdio holds goes first */
	if (write(STDERR_FILENO, line, n) < 0)
		return;		/* nowhere to say it */
}

static void report(const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	write_line(SL_LOG_ERR, "slicelimit: ", msg);
	if (!sl_json)
		return;
	if (!first_error) {
		first_error = strdup(msg);
	} else {
		json_object *p = json_object_new_object();

		json_object_object_add(p, "message", json_object_new_string(msg));
		keep_problem(p);
	}
}

void pr_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report(fmt, ap);
	va_end(ap);
}

void pr_error_problems(json_object *list, const char *fmt, ...)
{
	va_list ap;
	size_t i, n;

	va_start(ap, fmt);
	report(fmt, ap);
	va_end(ap);
	if (sl_json && list) {
		n = json_object_array_length(list);
		for (i = 0; i < n; i++)
			keep_problem(json_object_get(json_object_array_get_idx(list, i)));
	}
	json_object_put(list);
}

json_object *sl_error_take(int exit_code, const char *fallback)
{
	json_object *o = NULL;

	if (sl_json && exit_code != SL_EXIT_OK && !answered) {
		o = json_object_new_object();
		json_object_object_add(o, "error", json_object_new_string(
			first_error ? first_error : fallback));
		if (problems) {
			json_object_object_add(o, "problems", problems);
			problems = NULL;
		}
		if (problems_left_off)
			json_object_object_add(o, "problems_left_off",
					       json_object_new_int64(problems_left_off));
	}
	free(first_error);
	first_error = NULL;
	json_object_put(problems);
	problems = NULL;
	problems_left_off = 0;
	answered = false;
	return o;
}

#define SL_PR(name, level, priority, prefix)					\
void name(const char *fmt, ...)						\
{									\
	va_list ap;							\
									\
	char msg[1024];							\
									\
	if (sl_verbose < (level))					\
		return;							\
	va_start(ap, fmt);						\
	vsnprintf(msg, sizeof(msg), fmt, ap);				\
	va_end(ap);							\
	write_line(priority, prefix, msg);				\
}
SL_PR(pr_warn, 0, SL_LOG_WARNING, "slicelimit: warning: ")
SL_PR(pr_notice, 0, SL_LOG_NOTICE, "slicelimit: ")
SL_PR(pr_info, 1, SL_LOG_INFO, "slicelimit: ")
SL_PR(pr_debug, 2, SL_LOG_DEBUG, "slicelimit: debug: ")
