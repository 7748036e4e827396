// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top's busiest clients: every client state's tally by the same include/
 * code the kernel decides with, the busiest kept, and the full view
 * (state/client_view.c) of those only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "state/aggregate.h"
#include "state/client_exempt.h"
#include "state/client_keys.h"
#include "util/grow.h"
#include "state/pinned.h"
#include "cli/commands.h"
#include "cli/top.h"
#include "sl_algo.h"
#include "sl_key.h"

static int by_used_desc(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	return x->view.used < y->view.used ? 1 : x->view.used > y->view.used ? -1 : 0;
}

/* Every client with units counted now, busiest first (caller frees
 * *out; its rows point into `rules`). 0 or -ENOMEM.
 */
struct collect {
	const struct sl_maps *m;
	const struct sl_rule *rules;
	unsigned nr;
	const struct sl_config *cfg;
	const char *only;
	__u64 now;
	struct top_row *rows;
	size_t nrows, cap;
};

/* Per client: only the cheap tally; Retry-After for the few shown. */
static int collect_one(void *ctx, const struct sl_client_key *key,
		       const void *state, __u32 value_size)
{
	struct collect *c = ctx;
	const struct sl_rule *rule = NULL;
	struct sl_params p;
	struct sl_tally t;
	unsigned i, pos = 0;

	for (i = 0; i < c->nr; i++)
		if (c->rules[i].id == key->rule_id) {
			rule = &c->rules[i];
			pos = i;
		}
	/* a state of a gone rule, or in another algorithm's table, or
	 * keyed under a prefix the rule no longer has: none is ever read
	 */
	if (!rule || sl_state_size(rule->algorithm) != value_size ||
	    (c->only && strcmp(rule->name, c->only)) ||
	    !sl_client_key_reachable(rule, key))
		return 0;
	sl_params_from_rule(&p, rule);
	sl_tally_state(&t, state, &p, c->now);
	if (!t.used)
		return 0;
	if (sl_grow((void **)&c->rows, &c->cap, c->nrows + 1, sizeof(*c->rows)))
		return -ENOMEM;
	c->rows[c->nrows].key = *key;
	c->rows[c->nrows].rule = rule;
	c->rows[c->nrows].pos = pos;
	c->rows[c->nrows].view.used = t.used;
	c->nrows++;
	return 0;
}

int sl_top_collect(const struct sl_maps *m, const struct sl_rule *rules,
		   unsigned nr, const struct sl_config *cfg, const char *only,
		   __u64 now, size_t keep, struct top_row **out, size_t *nout)
{
	struct collect c = { .m = m, .rules = rules, .nr = nr, .cfg = cfg,
			     .only = only, .now = now };
	size_t i;
	int err;

	err = sl_for_each_client(m, collect_one, &c);
	if (err) {
		free(c.rows);
		return err;
	}
	if (c.nrows)
		qsort(c.rows, c.nrows, sizeof(*c.rows), by_used_desc);
	if (c.nrows > keep)
		c.nrows = keep;
	for (i = 0; i < c.nrows && !err; i++) {
		struct top_row *r = &c.rows[i];

		/* a state kept from before the rule exempted all of it: the
		 * kernel no longer reads it
		 */
		if (sl_client_key_exempt(m, cfg, r->pos, r->rule, &r->key))
			sl_client_view_exempt(r->rule, &r->view);
		else
			err = sl_client_view_read(m, r->rule, &r->key, now,
						  &r->view);
	}
	*out = c.rows;
	*nout = c.nrows;
	return err;
}

json_object *sl_top_clients_to_json(const struct top_row *rows,
				    size_t nrows)
{
	json_object *arr = json_object_new_array();
	char buf[96];
	size_t i;

	for (i = 0; i < nrows; i++)
		json_object_array_add(arr, sl_client_row_to_json(
			sl_format_client(&rows[i].key, rows[i].rule, buf,
					 sizeof(buf)),
			sl_client_addr_hashed(&rows[i].key.addr), rows[i].rule,
			&rows[i].view));
	return arr;
}

void sl_top_clients_print(FILE *f, const struct top_row *rows, size_t nrows)
{
	char buf[96];
	size_t i;

	/* the columns of query, in its order and with its numbers */
	sl_client_rows_header(f);
	for (i = 0; i < nrows; i++)
		sl_client_row_print(f, sl_format_client(&rows[i].key,
							rows[i].rule, buf,
							sizeof(buf)),
				    sl_client_addr_hashed(&rows[i].key.addr),
				    rows[i].rule, &rows[i].view);
}
