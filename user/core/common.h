/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Logging, exit codes and the small parsers every command shares. */
#ifndef SL_COMMON_H
#define SL_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "slicelimit.h"

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
 * ends (sl_error_flush, called by sl_main):
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
/* At the end of a command: under --json and a non-zero exit_code, print
 * the error object ({"error": fallback} when nothing was reported); then
 * forget every kept error.
 */
void sl_error_flush(int exit_code, const char *fallback);
/* A failing command that printed its own JSON answer (run --check's
 * {"ok": false, ...}): sl_error_flush prints no error object after it.
 */
void sl_error_answered(void);
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

/* A whole decimal number in [min, max]: no sign, no space, no suffix
 * (leading zeros are fine). 0, -EINVAL when it is not a number, -ERANGE
 * when it is one outside the range. Every numeric flag and config field
 * goes through it, so none is cut down silently.
 */
int sl_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* The largest client table (attach --clients, the config's clients:):
 * 2^26 states of each algorithm's size stay within what a map holds.
 */
#define SL_MAX_CLIENTS	(1u << 26)

/* "60s", "500ms", "0.2s", "1m", "1h", "1d" -> milliseconds. 0 or -EINVAL. */
int sl_parse_duration_ms(const char *s, uint64_t *ms);
/* Milliseconds -> the shortest exact form ("60s", "1500ms"). */
const char *sl_format_duration(uint64_t ms, char *buf, size_t len);

/* "192.0.2.1", "2001:db8::1" -> IPv4-mapped or IPv6. 0 or -EINVAL. */
int sl_parse_addr(const char *s, struct sl_addr *addr);
/* "10.0.0.0/8", "2001:db8::/32", or an address (full length). The length
 * returned counts the 128-bit (IPv4-mapped) form. -EINVAL, or -EDOM when
 * host bits are set.
 */
int sl_parse_prefix(const char *s, struct sl_addr *addr, unsigned *len128);
/* The address, or address/len when len128 < 128, in its own family. */
const char *sl_format_prefix(const struct sl_addr *addr, unsigned len128,
			     char *buf, size_t len);
bool sl_prefix_contains(const struct sl_addr *outer, unsigned outer_len,
			const struct sl_addr *inner, unsigned inner_len);

/* TAI milliseconds: the clock the kernel program uses. */
uint64_t sl_now_tai_ms(void);

#endif /* SL_COMMON_H */
