/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * top's two halves: the busiest clients read from the maps
 * (top_clients.c), and --watch's refreshes with the per-rule counters
 * (top_watch.c). cmd_top.c parses the command and runs one of them.
 */
#ifndef SL_CLI_TOP_H
#define SL_CLI_TOP_H

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>
#include "state/client_view.h"
#include "instance/instance_maps.h"
#include "rules/rules.h"

struct top_row {
	struct sl_client_key key;
	const struct sl_rule *rule;
	unsigned pos;		/* the rule's position: its exempt bit */
	struct sl_client_view view;
};

/* The busiest KEEP clients of the running RULES (only the rule named
 * ONLY, when not NULL) at NOW (TAI ms), busiest first, with their full
 * view (caller frees *out; its rows point into RULES). 0 or -errno.
 */
int sl_top_collect(const struct sl_maps *m, const struct sl_rule *rules,
		   unsigned nr, const struct sl_config *cfg, const char *only,
		   __u64 now, size_t keep, struct top_row **out, size_t *nout);
/* The rows as query prints them: a JSON array, or its columns. */
json_object *sl_top_clients_to_json(const struct top_row *rows,
				    size_t nrows);
void sl_top_clients_print(FILE *f, const struct top_row *rows, size_t nrows);

/* --watch: refresh every INTERVAL_MS until SIGINT or SIGTERM, or COUNT
 * refreshes (0: no end). Errors are reported here. 0 or -errno.
 */
int sl_top_watch(struct sl_maps *m, const char *only, unsigned n,
		 bool n_given, __u64 interval_ms, unsigned count);

#endif /* SL_CLI_TOP_H */
