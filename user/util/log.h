/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Logging, exit codes, and errors reported once at the command boundary. */
#ifndef SL_UTIL_LOG_H
#define SL_UTIL_LOG_H

#include <stdbool.h>
#include <stdio.h>

enum {
	SL_EXIT_OK = 0,
	SL_EXIT_FAIL = 1,
	SL_EXIT_USAGE = 2,
};

extern int sl_verbose;		/* -v: info, -vv: debug and libbpf */
extern bool sl_json;		/* -j/--json */
extern bool sl_pretty;		/* -p/--pretty */

/* Set by events and top --watch: one JSON object a line even with
 * --pretty, so a stream stays line-delimited.
 */
extern bool sl_json_stream;

/* Errors go to stderr once, at the command boundary. With --json they are
 * also kept, and a failed command prints one object on stdout when it
 * ends (sl_main prints what sl_error_take gives it):
 *   {"error": FIRST MESSAGE, "problems": [{...}, ...]}
 * "problems" is there when there is more than the first message: the
 * lists given to pr_error_problems, then {"message": M} for each later
 * pr_error. A command that succeeds prints no error object.
 */
void pr_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* pr_error, and under --json the problems of `problems` (a json-c array
 * of objects such as {"file", "line", "rule", "field", "message"}, taken
 * over: the caller prints its own human lines) go into "problems".
 */
struct json_object;
void pr_error_problems(struct json_object *problems, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* At the end of a command: under --json and a non-zero exit_code, the
 * error object ({"error": fallback} when nothing was reported) for the
 * caller to print and release, else NULL; every kept error is forgotten.
 */
struct json_object *sl_error_take(int exit_code, const char *fallback);
/* A failing command that printed its own JSON answer (run --check's
 * {"ok": false, ...}): sl_error_take gives no error object after it.
 */
void sl_error_answered(void);
/* " (slicelimit needs root, ...)" after an error that is EPERM or
 * EACCES, else "": what a refused load or open should say.
 */
const char *sl_privilege_hint(int err);
/* Syslog priorities of the lines on stderr. */
enum {
	SL_LOG_ERR = 3,
	SL_LOG_WARNING = 4,
	SL_LOG_NOTICE = 5,
	SL_LOG_INFO = 6,
	SL_LOG_DEBUG = 7,
};
/* Under systemd, stderr connected to the journal (sd-daemon(3): the
 * JOURNAL_STREAM variable names stderr's device and inode) gets each line
 * prefixed with its priority, "<3>" for an error, which journald takes off
 * and keeps as the PRIORITY field; anywhere else lines are plain. Decided
 * once, by sl_log_init (sl_main calls it).
 */
void sl_log_init(void);
/* "<N>" for priority N when stderr is the journal, else "". */
const char *sl_log_prefix(int priority);

void pr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* SL_UTIL_LOG_H */
