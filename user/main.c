// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * slicelimit: the command line. `slicelimit [-j] [-p] [-v] COMMAND ...`
 * dispatches from a table, bpftool style; each command family lives in its
 * own file.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "commands.h"
#include "common.h"

static const char main_help[] =
"Usage: slicelimit [OPTIONS] COMMAND [ARGS]\n"
"\n"
"Per-client rate limiting in the kernel (XDP or TC), with sliding slices.\n"
"\n"
"Commands:\n"
"  attach DEV [--mode xdp|xdp-generic|tc] [--clients N]\n"
"                      load (once), pin and attach to a device\n"
"  detach DEV | --all  detach; the pins go with the last device\n"
"  status              attached devices, rules, client table fill\n"
"  rules check FILE    validate a YAML rule file\n"
"  rules apply FILE    replace the running rules atomically\n"
"  rules list          the running rules\n"
"  stats               per-rule and global counters\n"
"  top [-n N] [--watch] the clients with the highest current counts (--watch: live)\n"
"  events              follow the drop events: a client's first drop per window\n"
"  query ADDR [--rule NAME] [--port N]\n"
"                      limit, used, remaining and Retry-After of a client\n"
"  run --config FILE   the service: attach, rules, HTTP check API, metrics\n"
"  replay [TRACE] [--algorithm NAME --limit N --window DUR ... | --rules F]\n"
"                      run a trace through the real program, model clock\n"
"\n"
"Options (anywhere on the line):\n"
"  -j, --json          JSON output (errors too: {\"error\": \"...\"})\n"
"  -p, --pretty        pretty-printed JSON (implies --json)\n"
"  -v, --verbose       more detail; -vv adds libbpf's and libxdp's logs\n"
"  -h, --help          this help, or a command's with COMMAND --help\n"
"\n"
"Exit status: 0 ok, 1 failure, 2 usage error.\n"
"Maps are pinned under " SL_PIN_DIR "; watch them with\n"
"  bpftool map dump pinned " SL_PIN_DIR "/sl_rule_stats\n";

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "attach", do_attach },
	{ "detach", do_detach },
	{ "status", do_status },
	{ "rules", do_rules },
	{ "stats", do_stats },
	{ "top", do_top },
	{ "query", do_query },
	{ "events", do_events },
	{ "replay", do_replay },
	{ "run", do_run },
};

static int print_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	if (sl_verbose < 2 && !(sl_verbose >= 1 && level == LIBBPF_WARN))
		return 0;
	return vfprintf(stderr, fmt, args);
}

static int print_libxdp(enum libxdp_print_level level, const char *fmt,
			va_list args)
{
	if (sl_verbose < 2 && !(sl_verbose >= 1 && level == LIBXDP_WARN))
		return 0;
	return vfprintf(stderr, fmt, args);
}

/* Take the global options out of argv wherever they stand (before "--"). */
static int strip_global_options(int argc, char **argv)
{
	int i, out = 1;
	bool rest = false;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!rest && !strcmp(a, "--")) {
			rest = true;
		} else if (!rest && (!strcmp(a, "-j") || !strcmp(a, "--json"))) {
			sl_json = true;
			continue;
		} else if (!rest && (!strcmp(a, "-p") || !strcmp(a, "--pretty"))) {
			sl_json = sl_pretty = true;
			continue;
		} else if (!rest && (!strcmp(a, "-v") || !strcmp(a, "--verbose"))) {
			sl_verbose++;
			continue;
		} else if (!rest && !strcmp(a, "-vv")) {
			sl_verbose += 2;
			continue;
		}
		argv[out++] = argv[i];
	}
	argv[out] = NULL;
	return out;
}

int main(int argc, char **argv)
{
	size_t i;

	argc = strip_global_options(argc, argv);
	libbpf_set_print(print_libbpf);
	libxdp_set_print(print_libxdp);
	if (argc < 2)
		return sl_usage(main_help, true);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help"))
		return sl_usage(main_help, false);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		int ret;

		if (strcmp(argv[1], commands[i].name))
			continue;
		ret = commands[i].fn(argc - 1, argv + 1);
		/* output lost (a full disk, a closed pipe) is a failure */
		if (fflush(stdout) || ferror(stdout)) {
			fprintf(stderr, "slicelimit: cannot write the output: %s\n",
				strerror(errno));
			return SL_EXIT_FAIL;
		}
		return ret;
	}
	pr_error("unknown command '%s' (slicelimit --help lists them)", argv[1]);
	return SL_EXIT_USAGE;
}
