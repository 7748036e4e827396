// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_argv: arbitrary bytes as a command line, run through sl_main() as
 * main() runs it: one argument a line; a line "%%" ends the arguments and
 * what follows is the content of a rule file, which the argument "@FILE"
 * names (so `rules check @FILE` reads fuzzed YAML).
 *
 * Nothing may touch pins, devices or ports: sl_args_only makes every
 * command stop once its arguments are parsed, and sl_main refuses those
 * that cannot (rules apply/list, replay). The run happens in an empty
 * scratch directory and an input with a '/' in an argument is skipped, so
 * no argument can name a file other than the rule file (no FIFO, no
 * /proc file to block on); stdin is /dev/null.
 *
 * Invariants: no crash, no leak; the exit status is 0, 1 or 2; and under
 * --json a failure prints exactly one JSON object on stdout, with an
 * "error" string.
 */
#include "fuzz_common.h"
#include <fcntl.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "util/log.h"

#define MAX_ARGS	64
#define RULE_FILE	"rules.yaml"

static char scratch[] = "/tmp/fuzz_argv.XXXXXX";
static int home = -1;		/* the directory libFuzzer runs in */

static void fail(const char *what, const char *out)
{
	fprintf(report ? report : stderr, "fuzz_argv: %s; stdout: %s\n", what, out);
	abort();
}

static void cleanup(void)
{
	char path[sizeof(scratch) + sizeof(RULE_FILE)];

	snprintf(path, sizeof(path), "%s/%s", scratch, RULE_FILE);
	unlink(path);
	rmdir(scratch);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_report_open();
	home = open(".", O_RDONLY | O_DIRECTORY);
	if (home < 0 || !mkdtemp(scratch)) {
		perror("fuzz_argv: scratch directory");
		exit(1);
	}
	atexit(cleanup);
	if (!freopen("/dev/null", "r", stdin)) {
		perror("fuzz_argv: stdin");
		exit(1);
	}
	sl_args_only = true;
	return 0;
}

/* The error object: the whole of stdout is one JSON object with an
 * "error" string (pretty or on one line), and nothing after it.
 */
static void check_error_json(const char *out, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *o, *e;
	size_t end;

	if (!tok)
		return;
	o = json_tokener_parse_ex(tok, out, len);
	end = json_tokener_get_parse_end(tok);
	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "error", &e) ||
	    !json_object_is_type(e, json_type_string))
		fail("a failure under --json is not one {\"error\": ...} object", out);
	for (; end < len; end++)
		if (!strchr(" \n", out[end]))
			fail("more than one JSON object on stdout", out);
	json_object_put(o);
	json_tokener_free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *p, *line, *file = NULL, *argv[MAX_ARGS + 2];
	char *owned[MAX_ARGS + 2];	/* sl_main reorders argv */
	char *out = NULL;
	size_t outlen = 0;
	FILE *saved = stdout, *f;
	int argc = 0, ret, i;

	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[argc] = owned[argc] = strdup("slicelimit");
	argc++;
	for (p = buf; p && argc <= MAX_ARGS; ) {
		line = strsep(&p, "\n");
		if (!strcmp(line, "%%")) {
			file = p ? p : buf + size;
			break;
		}
		if (strchr(line, '/'))
			goto out;	/* a path: see above */
		argv[argc] = owned[argc] = strdup(!strcmp(line, "@FILE") ? RULE_FILE : line);
		argc++;
	}
	argv[argc] = NULL;
	/* in the scratch directory only while sl_main runs: libFuzzer reads
	 * its corpus paths from where it was started
	 */
	if (chdir(scratch))
		goto out;
	f = fopen(RULE_FILE, "w");
	if (!f)
		goto out;
	if (file)
		fwrite(file, 1, buf + size - file, f);
	fclose(f);

	/* stdout into memory, to check what a failure printed */
	f = open_memstream(&out, &outlen);
	if (!f)
		goto out;
	stdout = f;
	ret = sl_main(argc, argv);
	stdout = saved;
	fclose(f);
	if (ret < 0 || ret > 2)
		fail("exit status outside 0..2", out);
	if (ret && sl_json)
		check_error_json(out, outlen);
	free(out);
out:
	if (fchdir(home))
		fail("cannot go back to the start directory", "");
	for (i = 0; i < argc; i++)
		free(owned[i]);
	free(buf);
	return 0;
}
