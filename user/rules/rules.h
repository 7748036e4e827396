/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Rule files: YAML (libyaml, util/yaml_doc.h) -> validated rule specs -> the
 * kernel's rule tables. Loading finds every problem of a file, each with
 * its line, column, rule and field; applying
 * fills the idle generation and switches to it with one word write.
 */
#ifndef SL_RULES_RULES_H
#define SL_RULES_RULES_H

#include <stdbool.h>
#include <stdint.h>
#include "slicelimit.h"
#include "instance/instance_maps.h"
#include "util/yaml_doc.h"
#include "rules/envoy.h"

struct sl_prefix {
	struct sl_addr addr;
	unsigned len;		/* over the 128-bit (IPv4-mapped) form */
};

struct sl_rule_spec {
	struct sl_rule rule;	/* id is assigned by sl_rules_apply() */
	struct sl_prefix *exempt;
	unsigned nr_exempt;
	/* the calls of Envoy's rate limit service it answers; NULL: none */
	struct sl_envoy_match *envoy;
	unsigned line;		/* where the rule starts in its file */
};

struct sl_ruleset {
	struct sl_rule_spec *specs;	/* in priority order */
	unsigned nr;
	/* a valid file's rules that may not do what they seem to: never
	 * matched, or limiting more than their protocol says; NULL: none
	 */
	struct sl_problems *warnings;
};

/* Parse and validate; every problem of the file goes into *pb (set up
 * here). Returns 0, -EINVAL when the file has problems, -ENOMEM, or -errno
 * when it cannot be read; on an error *rs is empty.
 */
int sl_rules_parse_file(const char *path, struct sl_ruleset *rs,
			struct sl_problems *pb);
int sl_rules_parse_buffer(const char *name, const char *buf, size_t len,
			  struct sl_ruleset *rs, struct sl_problems *pb);
/* The same, with every problem printed to stderr as
 * "FILE:LINE: rule 'NAME': FIELD: problem" (a file's warnings too, when
 * it is valid).
 */
int sl_rules_load_file(const char *path, struct sl_ruleset *rs);
int sl_rules_load_buffer(const char *name, const char *buf, size_t len,
			 struct sl_ruleset *rs);
void sl_rules_free(struct sl_ruleset *rs);

/* One rule from values a command parsed itself (replay's flags), through
 * the same checks and defaults as a rule of a file: NULL fields take the
 * file's defaults. Problems are printed as for a file, ORIGIN as its name.
 * 0 or -EINVAL; spec->exempt stays NULL.
 */
struct sl_rule_fields {
	const char *name;
	unsigned algorithm;		/* enum sl_algorithm */
	uint64_t limit;
	const char *window;		/* a duration; NULL: 60s */
	const unsigned *slices;
	const uint64_t *bucket_capacity;
	const char *refill_per_s;	/* a rate, as in a file: "0.5" */
};

int sl_rule_from_fields(const char *origin, const struct sl_rule_fields *f,
			struct sl_rule_spec *spec);
/* An algorithm's name as a rule file spells it -> enum sl_algorithm. */
int sl_parse_algorithm(const char *name, unsigned *algorithm);

/* Replace the running rule set atomically. Rule ids (stats index, client
 * key) are kept for rules whose name is unchanged, so their counters and
 * client state survive; the stats of a new rule start at zero.
 */
int sl_rules_apply(const struct sl_maps *m, const struct sl_ruleset *rs);
/* The same, and *forgotten (NULL: not wanted) the client states it
 * forgot: those of removed rules, and those a rule whose client key
 * changed shape (sl_rule_rekeys) can no longer reach.
 */
int sl_rules_apply_counted(const struct sl_maps *m,
			   const struct sl_ruleset *rs, __u64 *forgotten);
/* Does NEXT key its clients otherwise than LIVE (prefix lengths, by
 * port)? Then the states LIVE made under keys NEXT never makes are never
 * read again (state/client_keys.h sl_client_key_reachable).
 */
bool sl_rule_rekeys(const struct sl_rule *next, const struct sl_rule *live);

/* Apply RS (read from PATH) to the pinned instance, after loading and
 * pinning the programs and maps (OPTS) when nothing is pinned yet (OPTS
 * NULL: they must be; *loaded tells whether this call loaded them).
 * Every error is reported here, PATH naming the file; a failure leaves
 * the running rules unchanged and removes the pins this call made. On
 * success *m holds the pinned maps, open: the caller closes them.
 * 0 or -errno.
 */
struct sl_load_opts;
int sl_rules_apply_pinned(const char *path, const struct sl_ruleset *rs,
			  const struct sl_load_opts *opts, bool *loaded,
			  struct sl_maps *m);
/* The same, and *forgotten as sl_rules_apply_counted says. */
int sl_rules_apply_pinned_counted(const char *path,
				  const struct sl_ruleset *rs,
				  const struct sl_load_opts *opts, bool *loaded,
				  struct sl_maps *m, __u64 *forgotten);
/* Apply RS (read from PATH) through maps already open, M (the service
 * after it dropped root: it keeps the maps it opened as root). Errors
 * reported as sl_rules_apply_pinned reports them. 0 or -errno.
 */
int sl_rules_apply_open(const char *path, const struct sl_ruleset *rs,
			const struct sl_maps *m, __u64 *forgotten);

/* The live rules, read again only when an apply has moved the epoch
 * away from *epoch (one lookup to know; FORCE: read them regardless).
 * 1: *rules (the caller frees them), *nr and *cfg are the live ones and
 * *epoch is theirs; 0: unchanged (*cfg is the live config); -errno.
 */
int sl_rules_reread(const struct sl_maps *m, bool force, __u32 *epoch,
		    struct sl_rule **rules, unsigned *nr, struct sl_config *cfg);

/* The live generation's config: its rules_epoch tells whether the rules
 * changed since they were last read.
 */
int sl_rules_read_config(const struct sl_maps *m, struct sl_config *cfg);

/* The live rules in priority order (caller frees *rules). */
int sl_rules_read_live(const struct sl_maps *m, struct sl_rule **rules,
		       unsigned *nr, struct sl_config *cfg);

/* Open the pinned maps and read the live rules: what a command that reads
 * the running instance does first. Errors are reported (the command's
 * boundary); on one the maps are closed.
 */
int sl_open_live(struct sl_maps *m, struct sl_rule **rules, unsigned *nr,
		 struct sl_config *cfg);

const char *sl_protocol_name(unsigned protocol);
const char *sl_unit_name(unsigned unit);
const char *sl_action_name(unsigned action);
const char *sl_algorithm_name(unsigned algorithm);

#endif /* SL_RULES_RULES_H */
