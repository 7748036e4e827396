// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * slicelimit: the command line. `slicelimit [OPTIONS] COMMAND ...`
 * dispatches from a table, bpftool style; each command family lives in its
 * own file. sl_main() is all of main(), callable again (the argv fuzzer).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <sodium.h>
#include <xdp/libxdp.h>
#include "cli/commands.h"
#include "util/log.h"
#include "slicelimit.h"
#include "slicelimit.skel.h"

/* The Makefile defines both from git describe and pkg-config; a build
 * without them still says something true.
 */
#ifndef SL_VERSION
#define SL_VERSION "0.1.0"
#endif
#ifndef SL_LIBXDP_VERSION
#define SL_LIBXDP_VERSION "unknown"
#endif

bool sl_args_only;

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
"  rules apply FILE [--dry-run]\n"
"                      replace the running rules atomically\n"
"  rules list          the running rules\n"
"  stats               per-rule and global counters\n"
"  top [-n N] [--watch] the clients with the highest current counts (--watch: live)\n"
"  events              follow the drop events: a client's first drop per window\n"
"  query ADDR [--rule NAME] [--port N] | --key KEY\n"
"                      limit, used, remaining and Retry-After of a client\n"
"  reset ADDR [--rule NAME] [--port N] | --key KEY | --stats\n"
"                      forget a client's state (it passes again at once),\n"
"                      or zero the counters\n"
"  block ADDR|PREFIX [--for DUR] [--reason TEXT]\n"
"                      drop a source before any rule, for DUR or until\n"
"                      unblocked\n"
"  allow ADDR|PREFIX [--for DUR] [--reason TEXT]\n"
"                      let a source through before any rule, uncounted by\n"
"                      the rules (the allow list wins over the block list)\n"
"  unblock ADDR|PREFIX take it off the block list\n"
"  disallow ADDR|PREFIX\n"
"                      take it off the allow list\n"
"  lists               the block and allow lists, with ends and hits\n"
"  run --config FILE   the service: attach, rules, HTTP check API, metrics\n"
"  run --check --config FILE\n"
"                      validate the config and its rule file, touching nothing\n"
"  reload              swap this build's programs in for another build's,\n"
"                      keeping the maps whose layout is unchanged\n"
"  sync keygen --out FILE | sync pubkey FILE\n"
"                      a node's key pair for the UDP mesh: the secret to\n"
"                      FILE, the public key (for the peers' configs) printed\n"
"  replay [TRACE] [--algorithm NAME --limit N --window DUR ... | --rules F]\n"
"                      run a trace through the real program, model clock\n"
"  version             this build's version, libbpf's and libxdp's, and the\n"
"                      sha256 of the BPF object it loads\n"
"\n"
"Options (before the command; -j, -p and -v also after it, as words of\n"
"their own: 'status -j', not 'top -jn 5'):\n"
"  -j, --json[=yes|no] JSON output; a failure prints one object\n"
"                      {\"error\": \"...\"} on stdout, usage errors too\n"
"  -p, --pretty[=yes|no]\n"
"                      pretty-printed JSON (implies --json); the streams of\n"
"                      events and top --watch stay one object a line\n"
"  -v, --verbose       more detail; -vv adds libbpf's and libxdp's logs\n"
"  -V, --version       the same as the version command\n"
"  -h, --help          this help, or a command's with COMMAND --help\n"
"\n"
"Exit status: 0 ok, 1 failure, 2 usage error.\n"
"Maps are pinned under " SL_PIN_DIR "; watch them with\n"
"  bpftool map dump pinned " SL_PIN_DIR "/sl_rule_stats\n";

static const char version_help[] =
"Usage: slicelimit version [--json]\n"
"       slicelimit --version\n"
"\n"
"This build's version (git describe), the libbpf it runs with, the libxdp\n"
"it was built against (libxdp has no run-time version call), and the\n"
"sha256 of the BPF object compiled into it, computed now from the bytes\n"
"it loads: the same as sha256sum build/slicelimit.bpf.o of its build.\n";

/* The same letters and names before the command and (without V and h,
 * which are the command's there) after it.
 */
static const struct option global_opts[] = {
	{ "json", optional_argument, NULL, 'j' },
	{ "pretty", optional_argument, NULL, 'p' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

struct globals {
	bool json, pretty;
	int verbose;
};

static int print_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	if (sl_verbose < 2 && !(sl_verbose >= 1 && level == LIBBPF_WARN))
		return 0;
	fputs(sl_log_prefix(level == LIBBPF_WARN ? SL_LOG_WARNING :
			    level == LIBBPF_INFO ? SL_LOG_INFO : SL_LOG_DEBUG),
	      stderr);
	return vfprintf(stderr, fmt, args);
}

static int print_libxdp(enum libxdp_print_level level, const char *fmt,
			va_list args)
{
	if (sl_verbose < 2 && !(sl_verbose >= 1 && level == LIBXDP_WARN))
		return 0;
	fputs(sl_log_prefix(level == LIBXDP_WARN ? SL_LOG_WARNING :
			    level == LIBXDP_INFO ? SL_LOG_INFO : SL_LOG_DEBUG),
	      stderr);
	return vfprintf(stderr, fmt, args);
}

/* -j, -p or -v with its value (NULL: none). 0, or -EINVAL for a --json or
 * --pretty value other than yes or no.
 */
static int set_global(struct globals *g, int c, const char *value)
{
	bool on = !value || !strcmp(value, "yes");

	if (value && !on && strcmp(value, "no"))
		return -EINVAL;
	if (c == 'j') {
		g->json = on;
	} else if (c == 'p') {
		g->pretty = on;
		g->json |= on;
	} else {
		g->verbose++;
	}
	return 0;
}

/* After the command: is `word` only global options (-j, -jp, -vv, --json,
 * --json=no, --pretty, --verbose)? Read with getopt_long on the word
 * alone, so it means what it would before the command. A long option
 * must be spelled in full: an abbreviation of a command's own option
 * (query's --p for --port) stays the command's. 1 and applied to *g, 0
 * when not ours, -EINVAL for a bad --json or --pretty value.
 */
static int take_global_word(struct globals *g, char *argv0, char *word)
{
	static const char *const late = "jpv";
	char *v[] = { argv0, word, NULL };
	struct globals next = *g;
	int c, idx = -1;

	if (word[0] != '-' || !word[1] || !strcmp(word, "--"))
		return 0;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(2, v, late, global_opts, &idx)) != -1) {
		if (!strchr(late, c))
			return 0;	/* '?', or -V/-h: the command's */
		if (word[1] == '-' &&
		    strcspn(word + 2, "=") != strlen(global_opts[idx].name))
			return 0;
		if (set_global(&next, c, optarg))
			return -EINVAL;
	}
	*g = next;
	return 1;
}

/* Leave getopt as a fresh process has it: permuting, nothing half read.
 * optind = 0 makes glibc start over at the next call; the call made here
 * is that next call, so a command that sets optind itself (rules sets 2)
 * does not go on with the first pass's stop-at-the-command mode or a
 * word of a previous sl_main.
 */
static void getopt_reset(void)
{
	static char name[] = "slicelimit";
	char *none[] = { name, NULL };

	optind = 0;
	opterr = 0;
	getopt_long(1, none, "", global_opts, NULL);
	optind = 1;
	opterr = 1;
}

static int do_version(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned char sum[crypto_hash_sha256_BYTES];
	char hex[2 * crypto_hash_sha256_BYTES + 1], libbpf[32];
	const void *elf;
	size_t len;
	int c;

	while ((c = sl_getopt_long(argc, argv, "h", opts)) != -1)
		return sl_usage(version_help, c != 'h');
	if (optind != argc)
		return sl_usage_error(version_help, "version: no arguments, got '%s'",
				      argv[optind]);
	elf = slicelimit_bpf__elf_bytes(&len);
	crypto_hash_sha256(sum, elf, len);
	sodium_bin2hex(hex, sizeof(hex), sum, sizeof(sum));
	snprintf(libbpf, sizeof(libbpf), "%u.%u", libbpf_major_version(),
		 libbpf_minor_version());
	if (sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "version", json_object_new_string(SL_VERSION));
		json_object_object_add(o, "libbpf", json_object_new_string(libbpf));
		json_object_object_add(o, "libxdp", json_object_new_string(SL_LIBXDP_VERSION));
		json_object_object_add(o, "bpf_object_sha256", json_object_new_string(hex));
		json_object_object_add(o, "bpf_object_bytes", json_object_new_int64(len));
		sl_print_json(o);
	} else {
		printf("slicelimit %s\n", SL_VERSION);
		printf("libbpf %s\n", libbpf);
		printf("libxdp %s (built against)\n", SL_LIBXDP_VERSION);
		printf("bpf object sha256 %s (%zu bytes)\n", hex, len);
	}
	return SL_EXIT_OK;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	bool args_only;		/* honours sl_args_only */
} commands[] = {
	{ "attach", do_attach, true },
	{ "detach", do_detach, true },
	{ "status", do_status, true },
	{ "rules", do_rules, false },
	{ "stats", do_stats, true },
	{ "top", do_top, true },
	{ "query", do_query, true },
	{ "events", do_events, true },
	{ "replay", do_replay, false },
	{ "run", do_run, true },
	{ "reload", do_reload, true },
	{ "reset", do_reset, true },
	{ "sync", do_sync, true },
	{ "block", do_block, true },
	{ "allow", do_allow, true },
	{ "unblock", do_unblock, true },
	{ "disallow", do_disallow, true },
	{ "lists", do_lists, true },
	{ "version", do_version, true },
};

/* Under sl_args_only: may argv (the command first) run? rules check only
 * reads its file; rules apply and list, and replay, which loads the
 * program, would not stop at their arguments.
 */
static bool args_only_allowed(unsigned i, int argc, char **argv)
{
	if (commands[i].args_only)
		return true;
	return commands[i].fn == do_rules && argc >= 2 &&
	       !strcmp(argv[1], "check");
}

static int dispatch(int argc, char **argv)
{
	size_t i;

	if (!strcmp(argv[0], "help"))
		return sl_usage(main_help, false);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[0], commands[i].name))
			continue;
		sl_command = commands[i].name;
		if (sl_args_only && !args_only_allowed(i, argc, argv)) {
			pr_error("%s: not run here (it would touch the pins)",
				 argv[0]);
			return SL_EXIT_FAIL;
		}
		return commands[i].fn(argc, argv);
	}
	return sl_usage_error(NULL, "unknown command '%s'", argv[0]);
}

/* The options before the command: getopt stops at the first word that
 * is not one ('+'). Returns the command's index in argv, or -1 after a
 * usage error, its exit code in *ret.
 */
static int leading_options(int argc, char **argv, struct globals *g,
			   bool *version, bool *help, int *ret)
{
	int c, i;

	optind = 0;
	while ((c = sl_getopt_long(argc, argv, "+jpvVh", global_opts)) != -1) {
		if (c == 'V') {
			*version = true;
		} else if (c == 'h') {
			*help = true;
		} else if (c == '?') {
			/* a -j further on still asks for the error in JSON */
			for (i = optind; i < argc; i++)
				take_global_word(g, argv[0], argv[i]);
			sl_json = g->json;
			sl_pretty = g->pretty;
			*ret = sl_usage(main_help, true);
			return -1;
		} else if (set_global(g, c, optarg)) {
			sl_json = g->json;
			*ret = sl_usage_error(NULL, "--%s: '%s' is not yes or no",
					      c == 'j' ? "json" : "pretty", optarg);
			return -1;
		}
	}
	return optind;
}

/* -j, -p and -v after the command `cmd`, up to "--": taken out of argv,
 * the other words moved up. Returns the new argc, or -1 after a usage
 * error, its exit code in *ret.
 */
static int trailing_options(int argc, char **argv, int cmd,
			    struct globals *g, int *ret)
{
	int i, out;

	for (i = out = cmd + 1; i < argc; i++) {
		int r;

		if (!strcmp(argv[i], "--")) {
			while (i < argc)
				argv[out++] = argv[i++];
			break;
		}
		r = take_global_word(g, argv[0], argv[i]);
		if (r < 0) {
			sl_json = g->json;
			*ret = sl_usage_error(NULL, "'%s': --json and --pretty take yes or no",
					      argv[i]);
			return -1;
		}
		if (!r)
			argv[out++] = argv[i];
	}
	if (cmd < argc) {
		argc = out;
		argv[argc] = NULL;
	}
	return argc;
}

/* The end of every run: the error not reported yet, and the output
 * flushed; the exit code.
 */
static int finish(int ret)
{
	json_object *err;
	char fallback[64];

	snprintf(fallback, sizeof(fallback), "%s failed",
		 sl_command ? sl_command : "slicelimit");
	err = sl_error_take(ret, fallback);
	if (err)
		sl_print_json(err);
	/* output lost (a full disk, a closed pipe) is a failure */
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%sslicelimit: cannot write the output: %s\n",
			sl_log_prefix(SL_LOG_ERR),
			strerror(errno));
		return SL_EXIT_FAIL;
	}
	return ret;
}

int sl_main(int argc, char **argv)
{
	struct globals g = {};
	bool version = false, help = false;
	int cmd, ret = SL_EXIT_USAGE;

	sl_json = sl_pretty = sl_json_stream = false;
	sl_verbose = 0;
	sl_command = NULL;
	clearerr(stdout);
	sl_log_init();
	libbpf_set_print(print_libbpf);
	libxdp_set_print(print_libxdp);

	cmd = leading_options(argc, argv, &g, &version, &help, &ret);
	if (cmd < 0)
		return finish(ret);
	argc = trailing_options(argc, argv, cmd, &g, &ret);
	if (argc < 0)
		return finish(ret);
	sl_json = g.json;
	sl_pretty = g.pretty;
	sl_verbose = g.verbose;
	getopt_reset();

	if (help)
		ret = sl_usage(main_help, false);
	else if (version)
		ret = do_version(1, (char *[]){ "version", NULL });
	else if (cmd >= argc)
		ret = sl_usage_error(main_help, "no command given");
	else
		ret = dispatch(argc - cmd, argv + cmd);
	return finish(ret);
}
