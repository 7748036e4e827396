// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rules check | apply | list */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "state/client_keys.h"
#include "state/pinned.h"
#include "cli/write_guard.h"
#include "util/log.h"
#include "util/parse.h"
#include "state/aggregate.h"
#include "instance/loader.h"
#include "instance/instance_maps.h"
#include "rules/rule_ids.h"
#include "rules/rules.h"

static const char rules_help[] =
"Usage: slicelimit rules check FILE\n"
"       slicelimit rules apply FILE [--dry-run] [--force]\n"
"       slicelimit rules list [--json]\n"
"\n"
"check  validate a YAML rule file; every problem is printed as\n"
"       FILE:LINE: rule 'NAME': FIELD: what is wrong\n"
"       (with --json: one {\"error\", \"problems\": [{\"file\", \"line\",\n"
"       \"column\", \"rule\", \"field\", \"message\"}, ...]} object); a valid\n"
"       file's rules that may not do what they seem to (never matched,\n"
"       ports with protocol any, port 0, a tiny bytes limit of every\n"
"       protocol) are warned of the same way (\"warnings\" in --json)\n"
"apply  validate, then replace the running rules in one step (a packet\n"
"       sees the old set or the new one, never a mix). A file with any\n"
"       error changes nothing. Loads and pins the programs if needed, so\n"
"       rules can be in place before the first attach. Refused while a\n"
"       service runs (change its config and 'slicelimit reload') unless\n"
"       --force. --dry-run: what it would change (rules added, removed,\n"
"       changed; clients that would be forgotten), applying nothing;\n"
"       exit 0 when the file is valid\n"
"list   the running rules in priority order\n"
"\n"
"A rule file:\n"
"  rules:\n"
"    - name: dns              # letters, digits, - _ . (at most 31)\n"
"      priority: 10           # lower first; default: position in file\n"
"      protocol: udp          # any (default), tcp, udp, icmp\n"
"      ports: 53              # or a range 8000-8100; tcp/udp only\n"
"      source: 10.0.0.0/8     # optional prefix (IPv4 or IPv6)\n"
"      destination: 192.0.2.1 # optional prefix\n"
"      limit: 100             # units per window (required)\n"
"      window: 60s            # 500ms, 0.2s, 60s, 1m, 1h (default 60s)\n"
"      slices: 12             # time slices per window (default 12)\n"
"      bucket_capacity: 60    # token-bucket: burst (default: limit)\n"
"      refill_per_s: 10       # token-bucket: rate (default: limit/window)\n"
"      unit: packets          # packets (default), syn (new TCP), bytes\n"
"      algorithm: sliding     # sliding (default), sliding-plain, fixed,\n"
"                             # token-bucket, sliding-log, sliding-counter\n"
"      action: drop           # drop (default), shadow (count, never drop)\n"
"      key:                   # what a client is (default /32 and /64)\n"
"        ipv4_prefix: 32\n"
"        ipv6_prefix: 64\n"
"        per_port: false      # also key by destination port\n"
"      exempt: [10.1.0.0/16]  # sources this rule never limits\n"
"      continue: false        # true: a packet this rule passes goes on to\n"
"                             # the next rule that matches it (stack a\n"
"                             # per-/24 rule on a per-address one), to the\n"
"                             # end of the chain\n";

/* The fields of a rule that are printed as text, the same in the JSON
 * and the table.
 */
struct rule_text {
	char ports[16];		/* "53", "8000-8100", "any" */
	char source[64];	/* a prefix, or "any" */
	char destination[64];
	char window[32];	/* "500ms", "1m" */
};

static void rule_text(const struct sl_rule *r, struct rule_text *t)
{
	if (r->port_min == r->port_max)
		snprintf(t->ports, sizeof(t->ports), "%u", r->port_min);
	else if (r->port_min == 0 && r->port_max == 65535)
		snprintf(t->ports, sizeof(t->ports), "any");
	else
		snprintf(t->ports, sizeof(t->ports), "%u-%u", r->port_min,
			 r->port_max);
	if (r->src_prefixlen)
		sl_format_prefix(&r->src, r->src_prefixlen, t->source,
				 sizeof(t->source));
	else
		snprintf(t->source, sizeof(t->source), "any");
	if (r->dst_prefixlen)
		sl_format_prefix(&r->dst, r->dst_prefixlen, t->destination,
				 sizeof(t->destination));
	else
		snprintf(t->destination, sizeof(t->destination), "any");
	sl_format_duration(r->window_ms, t->window, sizeof(t->window));
}

static json_object *rule_to_json(const struct sl_rule *r)
{
	json_object *o = json_object_new_object(), *k;
	struct rule_text t;

	rule_text(r, &t);
	json_object_object_add(o, "name", json_object_new_string(r->name));
	json_object_object_add(o, "id", json_object_new_int(r->id));
	json_object_object_add(o, "priority", json_object_new_int64(r->priority));
	json_object_object_add(o, "protocol",
			       json_object_new_string(sl_protocol_name(r->protocol)));
	json_object_object_add(o, "ports", json_object_new_string(t.ports));
	json_object_object_add(o, "source", json_object_new_string(t.source));
	json_object_object_add(o, "destination", json_object_new_string(t.destination));
	json_object_object_add(o, "limit", json_object_new_int64(r->limit));
	json_object_object_add(o, "window", json_object_new_string(t.window));
	json_object_object_add(o, "window_ms", json_object_new_int64(r->window_ms));
	json_object_object_add(o, "slices", json_object_new_int(
		r->slice_ms ? r->window_ms / r->slice_ms : 0));
	json_object_object_add(o, "unit", json_object_new_string(sl_unit_name(r->unit)));
	json_object_object_add(o, "algorithm",
			       json_object_new_string(sl_algorithm_name(r->algorithm)));
	json_object_object_add(o, "action", json_object_new_string(sl_action_name(r->action)));
	k = json_object_new_object();
	json_object_object_add(k, "ipv4_prefix", json_object_new_int(r->key_ipv4_prefix));
	json_object_object_add(k, "ipv6_prefix", json_object_new_int(r->key_ipv6_prefix));
	json_object_object_add(k, "per_port", json_object_new_boolean(r->key_by_port));
	json_object_object_add(o, "key", k);
	json_object_object_add(o, "exempt", json_object_new_int(r->nr_exempt));
	json_object_object_add(o, "continue", json_object_new_boolean(r->continues));
	json_object_object_add(o, "api_key_is_address",
			       json_object_new_boolean(r->api_key_is_address));
	return o;
}

static void rule_print(const struct sl_rule *r)
{
	struct rule_text t;

	rule_text(r, &t);
	printf("%-20s %5lld %-5s %-11s %-20s %-20s %10lld %7s %-8s %-6s\n",
	       r->name, (long long)r->priority, sl_protocol_name(r->protocol),
	       t.ports, t.source, t.destination, (long long)r->limit, t.window,
	       sl_unit_name(r->unit), sl_action_name(r->action));
}

/* A file that was refused: each problem on stderr as FILE:LINE: ...; with
 * --json one object on stdout carrying all of them:
 * {"error": "FILE: 2 problems; OUTCOME", "problems": [{"file", ...}]}.
 */
static int refused(const char *path, int err, const struct sl_problems *pb,
		   const char *outcome)
{
	char msg[512];

	if (pb->total)
		snprintf(msg, sizeof(msg), "%s: %u problem%s; %s", path,
			 pb->total, pb->total == 1 ? "" : "s", outcome);
	else
		snprintf(msg, sizeof(msg), "%s: %s; %s", path, strerror(-err),
			 outcome);
	sl_problems_print(pb, stderr);
	/* the command's one error: with --json, the problems ride along */
	pr_error_problems(sl_problems_to_json(pb), "%s", msg);
	return SL_EXIT_FAIL;
}

static int rules_check(const char *path)
{
	struct sl_problems pb;
	struct sl_ruleset rs;
	unsigned nr_warnings;
	int err;

	err = sl_rules_parse_file(path, &rs, &pb);
	if (err)
		return refused(path, err, &pb, "nothing applied");
	nr_warnings = rs.warnings ? rs.warnings->total : 0;
	if (sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "file", json_object_new_string(path));
		json_object_object_add(o, "valid", json_object_new_boolean(1));
		json_object_object_add(o, "rules", json_object_new_int(rs.nr));
		json_object_object_add(o, "warnings", rs.warnings ?
				       sl_problems_to_json(rs.warnings) :
				       json_object_new_array());
		sl_print_json(o);
	} else {
		if (rs.warnings)
			sl_warnings_print(rs.warnings, stderr);
		printf("%s: %u rule%s, valid", path, rs.nr, rs.nr == 1 ? "" : "s");
		if (nr_warnings)
			printf(" (%u warning%s)", nr_warnings,
			       nr_warnings == 1 ? "" : "s");
		printf("\n");
	}
	sl_rules_free(&rs);
	return SL_EXIT_OK;
}

static int rules_apply(const char *path, bool force)
{
	struct sl_load_opts lo = {};
	struct sl_problems pb;
	struct sl_ruleset rs;
	struct sl_config cfg;
	struct sl_rule *live = NULL;
	struct sl_maps m;
	__u64 forgotten = 0;
	unsigned nr;
	bool loaded;
	int err;

	err = sl_rules_parse_file(path, &rs, &pb);
	if (err)
		return refused(path, err, &pb, "the running rules are unchanged");
	if (rs.warnings)
		sl_warnings_print(rs.warnings, stderr);
	err = sl_write_begin_rules("rules apply", force);
	if (err)
		goto out;
	err = sl_rules_apply_pinned_counted(path, &rs, &lo, &loaded, &m,
					    &forgotten);
	sl_write_end();
	if (err)
		goto out;
	err = sl_rules_read_live(&m, &live, &nr, &cfg);
	sl_maps_close(&m);
	if (err)
		goto out;
	if (sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "file", json_object_new_string(path));
		json_object_object_add(o, "applied", json_object_new_boolean(1));
		json_object_object_add(o, "rules", json_object_new_int(nr));
		json_object_object_add(o, "rules_epoch", json_object_new_int(cfg.rules_epoch));
		sl_json_add_u64(o, "clients_forgotten", forgotten);
		sl_print_json(o);
	} else {
		printf("%s: applied %u rule%s (epoch %u); %llu client%s forgotten\n",
		       path, nr, nr == 1 ? "" : "s", cfg.rules_epoch,
		       (unsigned long long)forgotten, forgotten == 1 ? "" : "s");
	}
	free(live);
out:
	sl_rules_free(&rs);
	return err ? SL_EXIT_FAIL : SL_EXIT_OK;
}

/* ---- apply --dry-run ---- */

/* What an apply would do to one rule name. */
enum change { SAME, ADDED, REMOVED, CHANGED, RESTARTED, REKEYED };

static const char *const change_names[] = {
	"unchanged", "added", "removed", "changed", "changed, its clients forgotten",
	"changed, its clients keyed the old way forgotten",
};

/* What an apply of a file would do, against the live rules. */
struct dry_run {
	struct sl_forget_set fs;	/* the client states it would forget */
	unsigned counts[6];		/* by enum change */
	unsigned clients;		/* how many states it would forget */
	json_object *list;		/* each rule's change */
};

static int count_forgotten(void *ctx, const struct sl_client_key *key,
			   const void *state, __u32 value_size)
{
	struct dry_run *d = ctx;

	(void)state;
	(void)value_size;
	if (sl_forget_set_forgets(&d->fs, key))
		d->clients++;
	return 0;
}

/* A rule as it would run, compared with the live one of its name: the
 * id apart, which the apply assigns.
 */
static bool rule_differs(const struct sl_rule *next, const struct sl_rule *live)
{
	struct sl_rule a = *next, b = *live;

	a.id = b.id = 0;
	return memcmp(&a, &b, sizeof(a)) != 0;
}

static void dry_run_add(json_object *list, const char *name, enum change c)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "rule", json_object_new_string(name));
	json_object_object_add(o, "change", json_object_new_string(
		c == RESTARTED || c == REKEYED ? "changed" : change_names[c]));
	json_object_object_add(o, "clients_forgotten",
			       json_object_new_boolean(c == REMOVED || c == RESTARTED ||
						       c == REKEYED));
	json_object_array_add(list, o);
	if (!sl_json)
		printf("  %-20s %s\n", name, change_names[c]);
}

/* Each rule's change, by the ids an apply would keep (sl_rule_ids_match:
 * a name and algorithm still there; the others' clients are forgotten),
 * and the live rules no rule of RS names. 0 or -ENOMEM.
 */
static int dry_run_changes(struct dry_run *d, const struct sl_ruleset *rs,
			   const struct sl_rule *live, unsigned nr_live)
{
	struct sl_rule *next = calloc(rs->nr + 1, sizeof(*next));
	bool *is_new = calloc(rs->nr + 1, sizeof(*is_new));
	unsigned i, j;

	if (!next || !is_new) {
		free(next);
		free(is_new);
		return -ENOMEM;
	}
	for (i = 0; i < rs->nr; i++)
		next[i] = rs->specs[i].rule;
	sl_rule_ids_match(next, rs->nr, live, nr_live, &d->fs, is_new);
	for (i = 0; i < rs->nr; i++) {
		const struct sl_rule *r = &next[i], *was;
		enum change c;

		was = sl_rule_by_name(live, nr_live, r->name);
		c = !was ? ADDED : is_new[i] ? RESTARTED :
		    sl_rule_rekeys(r, was) ? REKEYED :
		    rule_differs(r, was) ? CHANGED : SAME;
		d->counts[c]++;
		dry_run_add(d->list, r->name, c);
	}
	for (j = 0; j < nr_live; j++) {
		if (sl_rule_by_name(next, rs->nr, live[j].name))
			continue;
		d->counts[REMOVED]++;
		dry_run_add(d->list, live[j].name, REMOVED);
	}
	free(is_new);
	free(next);
	return 0;
}

static void dry_run_print(const char *path, struct dry_run *d)
{
	unsigned changed = d->counts[CHANGED] + d->counts[RESTARTED] +
			   d->counts[REKEYED];
	json_object *o;

	if (!sl_json) {
		printf("%u added, %u removed, %u changed, %u unchanged; %u client%s forgotten; nothing applied\n",
		       d->counts[ADDED], d->counts[REMOVED], changed,
		       d->counts[SAME], d->clients,
		       d->clients == 1 ? "" : "s");
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "file", json_object_new_string(path));
	json_object_object_add(o, "valid", json_object_new_boolean(1));
	json_object_object_add(o, "applied", json_object_new_boolean(0));
	json_object_object_add(o, "added", json_object_new_int(d->counts[ADDED]));
	json_object_object_add(o, "removed", json_object_new_int(d->counts[REMOVED]));
	json_object_object_add(o, "changed", json_object_new_int(changed));
	json_object_object_add(o, "unchanged", json_object_new_int(d->counts[SAME]));
	json_object_object_add(o, "clients_forgotten", json_object_new_int(d->clients));
	json_object_object_add(o, "rules", d->list);
	d->list = NULL;
	sl_print_json(o);
}

/* The pinned maps and the live rules, when something is pinned (*pinned:
 * the maps are open; nothing pinned: no live rule). Errors reported here.
 */
static int dry_run_open(struct sl_maps *m, bool *pinned,
			struct sl_rule **live, unsigned *nr_live)
{
	struct sl_config cfg;
	int err;

	*pinned = false;
	err = sl_require_bpffs();
	if (err)
		return err;
	err = sl_maps_open_pinned(m);
	if (err == -ENOENT)
		return 0;
	if (err) {
		pr_error("cannot open the pins under %s: %s%s", SL_PIN_DIR,
			 strerror(-err), sl_privilege_hint(err));
		return err;
	}
	*pinned = true;
	err = sl_rules_read_live(m, live, nr_live, &cfg);
	if (err)
		pr_error("cannot read the running rules: %s", strerror(-err));
	return err;
}

static int rules_dry_run(const char *path)
{
	struct sl_rule *live = NULL;
	struct dry_run *d = NULL;
	struct sl_problems pb;
	struct sl_ruleset rs;
	struct sl_maps m;
	unsigned nr_live = 0;
	bool pinned = false;
	int err;

	err = sl_rules_parse_file(path, &rs, &pb);
	if (err)
		return refused(path, err, &pb, "nothing would be applied");
	d = calloc(1, sizeof(*d));
	if (!d) {
		pr_error("out of memory");
		err = -ENOMEM;
		goto out;
	}
	d->list = json_object_new_array();
	err = dry_run_open(&m, &pinned, &live, &nr_live);
	if (err)
		goto out;
	if (!sl_json)
		printf("%s: valid; an apply would change:\n", path);
	err = dry_run_changes(d, &rs, live, nr_live);
	if (err) {
		pr_error("out of memory");
		goto out;
	}
	if (pinned) {
		err = sl_for_each_client(&m, count_forgotten, d);
		if (err) {
			pr_error("cannot read the client table: %s", strerror(-err));
			goto out;
		}
	}
	dry_run_print(path, d);
out:
	free(live);
	if (pinned)
		sl_maps_close(&m);
	if (d)
		json_object_put(d->list);
	free(d);
	sl_rules_free(&rs);
	return err ? SL_EXIT_FAIL : SL_EXIT_OK;
}

static int rules_list(void)
{
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	struct sl_maps m;
	json_object *arr;
	unsigned nr, i;
	int err;

	if (sl_require_bpffs())
		return SL_EXIT_FAIL;
	err = sl_maps_open_pinned(&m);
	if (err) {
		if (err == -ENOENT)
			pr_error("nothing loaded: no rules (slicelimit rules apply FILE)");
		else
			pr_error("cannot open the pins under %s: %s%s", SL_PIN_DIR,
				 strerror(-err), sl_privilege_hint(err));
		return SL_EXIT_FAIL;
	}
	err = sl_rules_read_live(&m, &rules, &nr, &cfg);
	sl_maps_close(&m);
	if (err) {
		pr_error("cannot read the running rules: %s", strerror(-err));
		return SL_EXIT_FAIL;
	}
	if (sl_json) {
		json_object *o = json_object_new_object();

		arr = json_object_new_array();
		for (i = 0; i < nr; i++)
			json_object_array_add(arr, rule_to_json(&rules[i]));
		json_object_object_add(o, "rules_epoch", json_object_new_int(cfg.rules_epoch));
		json_object_object_add(o, "rules", arr);
		sl_print_json(o);
	} else {
		printf("%-20s %5s %-5s %-11s %-20s %-20s %10s %7s %-8s %-6s\n",
		       "NAME", "PRIO", "PROTO", "PORTS", "SOURCE", "DESTINATION",
		       "LIMIT", "WINDOW", "UNIT", "ACTION");
		for (i = 0; i < nr; i++)
			rule_print(&rules[i]);
	}
	free(rules);
	return SL_EXIT_OK;
}

int do_rules(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool force = false, dry_run = false;
	const char *sub;
	int c;

	if (argc < 2)
		return sl_usage(rules_help, true);
	sub = argv[1];
	optind = 2;
	while ((c = sl_getopt_long(argc, argv, "fh", opts)) != -1) {
		if (c == 'f')
			force = true;
		else if (c == 'n')
			dry_run = true;
		else
			return sl_usage(rules_help, c != 'h');
	}
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help"))
		return sl_usage(rules_help, false);
	if ((force || dry_run) && strcmp(sub, "apply"))
		return sl_usage_error(rules_help, "rules %s: --force and --dry-run are apply's",
				      sub);
	if (!strcmp(sub, "list") && optind == argc)
		return rules_list();
	if (!strcmp(sub, "check") && optind == argc - 1)
		return rules_check(argv[optind]);
	if (!strcmp(sub, "apply") && optind == argc - 1)
		return dry_run ? rules_dry_run(argv[optind]) :
				 rules_apply(argv[optind], force);
	pr_error("rules: expected 'check FILE', 'apply FILE' or 'list'");
	return SL_EXIT_USAGE;
}
