/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The running (pinned) instance as the read commands see it: open it with
 * its rules, find a rule, name a client, say whether the maps we hold are
 * still the pinned ones.
 */
#ifndef SL_STATE_PINNED_H
#define SL_STATE_PINNED_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "state/client_view.h"
#include "instance/instance_maps.h"
#include "util/json_u64.h"

const struct sl_rule *sl_rule_by_name(const struct sl_rule *rules,
				      unsigned nr, const char *name);

/* The client as commands print it: the key is already masked to the
 * rule's prefix. Without the rule, the whole address (and any port). A
 * hashed API key: its whole address, which query and reset take.
 */
const char *sl_format_client(const struct sl_client_key *key,
			     const struct sl_rule *rule, char *buf, size_t len);

/* rule, limit, window_ms, used, remaining, retry_after_ms/_s, exempt
 * into `o`.
 */
void sl_client_view_to_json(json_object *o, const struct sl_rule *rule,
			    const struct sl_client_view *v);
/* One client of query and top: {"client", "api_key", and the view}, or
 * a line under sl_client_rows_header (an exempt client says so in place
 * of its numbers; a hashed API key is marked).
 */
json_object *sl_client_row_to_json(const char *client, bool api_key,
				   const struct sl_rule *rule,
				   const struct sl_client_view *v);
void sl_client_rows_header(FILE *f);
void sl_client_row_print(FILE *f, const char *client, bool api_key,
			 const struct sl_rule *rule,
			 const struct sl_client_view *v);
/* The view's retry_after_ms as the Retry-After header says it. */
__u64 sl_retry_after_s(const struct sl_client_view *v);

/* Counters as JSON, the same fields in every command's output. */
void sl_rule_stats_to_json(json_object *o, const struct sl_rule_stats *rs);
json_object *sl_global_stats_to_json(const struct sl_global_stats *gs);

/* The id of the map behind fd, 0 if unknown. */
__u32 sl_map_id(int fd);
/* Is the map of this id still the one pinned as SL_PIN_DIR/NAME? After a
 * detach the maps a watcher holds are no one's, and would freeze.
 */
bool sl_still_pinned(const char *name, __u32 id);

#endif /* SL_STATE_PINNED_H */
