// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/commands.h"
#include "core/common.h"
#include "sl_key.h"

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

static void report(const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "%sslicelimit: %s\n", sl_log_prefix(SL_LOG_ERR), msg);
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

void sl_error_flush(int exit_code, const char *fallback)
{
	if (sl_json && exit_code != SL_EXIT_OK && !answered) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "error", json_object_new_string(
			first_error ? first_error : fallback));
		if (problems) {
			json_object_object_add(o, "problems", problems);
			problems = NULL;
		}
		if (problems_left_off)
			json_object_object_add(o, "problems_left_off",
					       json_object_new_int64(problems_left_off));
		sl_print_json(o);
	}
	free(first_error);
	first_error = NULL;
	json_object_put(problems);
	problems = NULL;
	problems_left_off = 0;
	answered = false;
}

#define SL_PR(name, level, priority, prefix)					\
void name(const char *fmt, ...)						\
{									\
	va_list ap;							\
									\
	if (sl_verbose < (level))					\
		return;							\
	fputs(sl_log_prefix(priority), stderr);				\
	fputs(prefix, stderr);						\
	va_start(ap, fmt);						\
	vfprintf(stderr, fmt, ap);					\
	va_end(ap);							\
	fputc('\n', stderr);						\
}
SL_PR(pr_warn, 0, SL_LOG_WARNING, "slicelimit: warning: ")
SL_PR(pr_notice, 0, SL_LOG_NOTICE, "slicelimit: ")
SL_PR(pr_info, 1, SL_LOG_INFO, "slicelimit: ")
SL_PR(pr_debug, 2, SL_LOG_DEBUG, "slicelimit: debug: ")

int sl_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	/* strtoull takes a sign and leading space; a number here has neither */
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int sl_parse_duration_ms(const char *s, uint64_t *ms)
{
	static const struct { const char *suffix; double scale; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 },
	};
	char *end;
	double v;
	size_t i;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v))
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		double r;

		if (strcmp(end, units[i].suffix))
			continue;
		r = v * units[i].scale;
		/* whole milliseconds only: "0.5ms" is not a duration here */
		if (r != floor(r) || r > 1e15)
			return -EINVAL;
		*ms = (uint64_t)r;
		return 0;
	}
	return -EINVAL;
}

const char *sl_format_duration(uint64_t ms, char *buf, size_t len)
{
	if (ms && ms % 86400000 == 0)
		snprintf(buf, len, "%llud", (unsigned long long)(ms / 86400000));
	else if (ms && ms % 3600000 == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(ms / 3600000));
	else if (ms && ms % 60000 == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(ms / 60000));
	else if (ms && ms % 1000 == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ms / 1000));
	else
		snprintf(buf, len, "%llums", (unsigned long long)ms);
	return buf;
}

int sl_parse_addr(const char *s, struct sl_addr *addr)
{
	struct in_addr v4;

	if (inet_pton(AF_INET, s, &v4) == 1) {
		memset(addr->byte, 0, 10);
		addr->byte[10] = addr->byte[11] = 0xff;
		memcpy(&addr->byte[12], &v4, 4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, addr->byte) == 1)
		return 0;
	return -EINVAL;
}

int sl_parse_prefix(const char *s, struct sl_addr *addr, unsigned *len128)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	struct sl_addr masked;
	unsigned long bits;
	bool v4;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (sl_parse_addr(buf, addr))
		return -EINVAL;
	v4 = sl_addr_is_ipv4(addr) && !strchr(buf, ':');
	if (!slash) {
		*len128 = 128;
		return 0;
	}
	errno = 0;
	bits = strtoul(slash + 1, &end, 10);
	if (errno || end == slash + 1 || *end || bits > (v4 ? 32u : 128u))
		return -EINVAL;
	*len128 = v4 ? 96 + bits : bits;
	masked = *addr;
	sl_addr_mask(&masked, *len128);
	if (memcmp(&masked, addr, sizeof(masked)))
		return -EDOM;
	return 0;
}

const char *sl_format_prefix(const struct sl_addr *addr, unsigned len128,
			     char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	bool v4 = sl_addr_is_ipv4(addr) && len128 >= 96;

	if (v4)
		inet_ntop(AF_INET, &addr->byte[12], ip, sizeof(ip));
	else
		inet_ntop(AF_INET6, addr->byte, ip, sizeof(ip));
	if (len128 == 128)
		snprintf(buf, len, "%s", ip);
	else
		snprintf(buf, len, "%s/%u", ip, v4 ? len128 - 96 : len128);
	return buf;
}

bool sl_prefix_contains(const struct sl_addr *outer, unsigned outer_len,
			const struct sl_addr *inner, unsigned inner_len)
{
	struct sl_addr a = *inner;

	if (inner_len < outer_len)
		return false;
	sl_addr_mask(&a, outer_len);
	return !memcmp(&a, outer, sizeof(a));
}

uint64_t sl_now_tai_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_TAI, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
