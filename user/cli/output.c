// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Output shared by every command: JSON documents and usage errors. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "util/log.h"

const char *sl_command;

/* What the last sl_getopt_long call found wrong, for sl_usage: "" when it
 * found nothing.
 */
static char bad_option[160];

void sl_print_json(json_object *o)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE;

	flags |= sl_pretty && !sl_json_stream ? JSON_C_TO_STRING_PRETTY :
						JSON_C_TO_STRING_PLAIN;
	printf("%s\n", json_object_to_json_string_ext(o, flags));
	json_object_put(o);
}

/* getopt_long has returned '?' with opterr off: say in our words which
 * option is wrong. getopt leaves optopt 0 for an unknown or ambiguous long
 * option (and has stepped over it), the option's value for a known one
 * with a missing or unwanted value, the letter for an unknown short one.
 */
static void describe_bad_option(int argc, char *const argv[],
				const char *optstring,
				const struct option *longopts)
{
	const char *tok = optind >= 1 && optind <= argc ? argv[optind - 1] : "";
	const struct option *o = NULL;
	const char *letter = NULL;
	size_t len;
	int has_arg;

	if (!optopt) {
		len = strcspn(tok, "=");
		snprintf(bad_option, sizeof(bad_option),
			 "unknown option '%.*s'", (int)(len < 64 ? len : 64), tok);
		return;
	}
	if (optopt < 256 && isalnum(optopt))
		letter = strchr(optstring, optopt);
	for (o = longopts; o && o->name; o++)
		if (!o->flag && o->val == optopt)
			break;
	if (o && !o->name)
		o = NULL;
	/* a long option's problem, when the word getopt stepped over is it */
	len = strcspn(tok, "=");
	if (o && !strncmp(tok, "--", 2) && len > 2 &&
	    !strncmp(tok + 2, o->name, len - 2)) {
		has_arg = o->has_arg;
		snprintf(bad_option, sizeof(bad_option), "--%s %s", o->name,
			 has_arg == required_argument ? "needs a value" :
							"takes no value");
		return;
	}
	if (letter) {
		/* a known short option fails only for want of its value */
		snprintf(bad_option, sizeof(bad_option), "-%c%s%s needs a value",
			 optopt, o ? "/--" : "", o ? o->name : "");
		return;
	}
	if (optopt < 256 && isprint(optopt))
		snprintf(bad_option, sizeof(bad_option), "unknown option '-%c'",
			 optopt);
	else
		snprintf(bad_option, sizeof(bad_option), "unknown option");
}

int sl_getopt_long(int argc, char *const argv[], const char *optstring,
		   const struct option *longopts)
{
	int saved = opterr, c;

	/* ours, not getopt's, words go to stderr: the same as in the JSON */
	opterr = 0;
	c = getopt_long(argc, argv, optstring, longopts, NULL);
	opterr = saved;
	bad_option[0] = '\0';
	if (c == '?')
		describe_bad_option(argc, argv, optstring, longopts);
	return c;
}

int sl_usage_error(const char *help, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_error("%s (slicelimit %s%s--help)", msg, sl_command ? sl_command : "",
		 sl_command ? " " : "");
	if (help)
		fputs(help, stderr);
	return SL_EXIT_USAGE;
}

int sl_usage(const char *help, bool error)
{
	if (!error) {
		fputs(help, stdout);
		return SL_EXIT_OK;
	}
	if (bad_option[0])
		return sl_usage_error(help, "%s%s%s", sl_command ? sl_command : "",
				      sl_command ? ": " : "", bad_option);
	return sl_usage_error(help, "%s%swrong arguments",
			      sl_command ? sl_command : "", sl_command ? ": " : "");
}
