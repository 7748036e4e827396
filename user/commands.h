/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command handlers: each returns an exit code (SL_EXIT_*). */
#ifndef SL_COMMANDS_H
#define SL_COMMANDS_H

#include <stdbool.h>
#include <json-c/json.h>

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

/* Print a JSON document (honours --pretty) and release it. */
void sl_print_json(json_object *o);

/* Common tail of every command's option loop: -h prints `help` and exits
 * 0; an unknown option prints it to stderr and exits 2.
 */
int sl_usage(const char *help, bool error);

#endif /* SL_COMMANDS_H */
