/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command handlers: each returns an exit code (SL_EXIT_*). */
#ifndef SL_COMMANDS_H
#define SL_COMMANDS_H

#include <getopt.h>
#include <stdbool.h>
#include <json-c/json.h>

/* The whole command line: global options, then a command and its own
 * arguments. main() is this; the argv fuzzer calls it once per input.
 * Every call starts from the defaults (no --json, getopt reset).
 */
int sl_main(int argc, char **argv);

/* Set by the argv fuzzer: a command that would touch pins, devices or
 * ports stops once its arguments are parsed (exit 0), and sl_main refuses
 * the commands that cannot (rules apply and list, replay). Off otherwise.
 */
extern bool sl_args_only;

/* The command sl_main runs ("top"), NULL before one is found: usage
 * errors point at its --help.
 */
extern const char *sl_command;

int do_attach(int argc, char **argv);
int do_detach(int argc, char **argv);
int do_status(int argc, char **argv);
int do_rules(int argc, char **argv);
int do_stats(int argc, char **argv);
int do_top(int argc, char **argv);
int do_query(int argc, char **argv);
int do_events(int argc, char **argv);
int do_replay(int argc, char **argv);
int do_run(int argc, char **argv);
int do_reload(int argc, char **argv);
int do_reset(int argc, char **argv);
int do_sync(int argc, char **argv);
int do_block(int argc, char **argv);
int do_allow(int argc, char **argv);
int do_unblock(int argc, char **argv);
int do_disallow(int argc, char **argv);
int do_lists(int argc, char **argv);
/* Zero the counters (reset --stats, stats --reset): an exit code. */
int sl_reset_stats(void);

/* KEY of --key (query, reset), checked once: 0, or -EINVAL (reported:
 * an empty key or one longer than the API takes, a usage error), or -EIO
 * (reported: libsodium would not start).
 */
int sl_client_key_arg(const char *key);

/* The client address KEY names under RULE, as /v1/check counts it there
 * (service/check_local.c sl_check_key_addr, the one mapping): the
 * address itself under a rule with api_key_is_address when KEY is one,
 * else its hash in 100::/64. After sl_client_key_arg.
 */
struct sl_addr;
struct sl_rule;
void sl_client_key_addr(const char *key, const struct sl_rule *rule,
			struct sl_addr *addr);

/* Print a JSON document (honours --pretty, except in a stream: see
 * sl_json_stream) and release it.
 */
void sl_print_json(json_object *o);

/* getopt_long, with getopt's own message off: on '?' it notes which
 * option is wrong ("--count needs a value", "unknown option '-x'") for
 * sl_usage(help, true) to report, in the JSON error object too.
 */
int sl_getopt_long(int argc, char *const argv[], const char *optstring,
		   const struct option *longopts);

/* Common tail of every command's option loop: -h prints `help` and exits
 * 0; an unknown option reports what sl_getopt_long found wrong (or "wrong
 * arguments"), prints `help` to stderr and exits 2.
 */
int sl_usage(const char *help, bool error);
/* A usage error in the command's words: pr_error (so JSON under --json),
 * then `help` (NULL: none) to stderr; returns SL_EXIT_USAGE.
 */
int sl_usage_error(const char *help, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* SL_COMMANDS_H */
