/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `replay` in two parts, its flags and its run on loaded instances, so
 * that the fuzzer (tests/fuzz/fuzz_replay.c) runs the command's own path
 * on instances it keeps loaded: loading the program takes seconds.
 */
#ifndef SL_CLI_CMD_REPLAY_H
#define SL_CLI_CMD_REPLAY_H

#include <stdbool.h>
#include <stdio.h>
#include "replay/nodes.h"
#include "rules/rules.h"

struct sl_replay_args {
	struct sl_ruleset rs;		/* the flags' rule or --rules FILE */
	const char *path;		/* the trace; "-": standard input */
	bool decisions;
	struct sl_replay_nodes_opts no;	/* no.nodes 0: one node */
};

/* sl_replay_args_parse's "go on": anything else is the exit status */
#define SL_REPLAY_RUN	(-1)

/* The flags of `replay` (argv[0] is the command); reported errors exit 2.
 * On SL_REPLAY_RUN, free a with sl_replay_args_free().
 */
int sl_replay_args_parse(int argc, char **argv, struct sl_replay_args *a);
void sl_replay_args_free(struct sl_replay_args *a);

/* How many instances a run needs: one per node, one for central. */
unsigned sl_replay_instances(const struct sl_replay_args *a);

/* Read the trace from f (its name for errors), run it on `nodes` (that
 * many instances as sl_replay_instances() says, a's rules applied and no
 * client state yet), print the result as --json says. 0 or -errno, the
 * error reported. With res non-NULL the result is left there (free it
 * with sl_replay_result_free()).
 */
int sl_replay_trace(struct sl_instance *const *nodes,
		    const struct sl_replay_args *a, const char *name, FILE *f,
		    struct sl_replay_result *res);

#endif /* SL_CLI_CMD_REPLAY_H */
