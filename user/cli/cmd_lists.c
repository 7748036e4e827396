// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * block, allow, unblock, disallow, lists: the block and allow lists at
 * run time (bpf/lists.h; user/instance/lists.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include "cli/commands.h"
#include "util/clock.h"
#include "instance/lists.h"
#include "util/log.h"
#include "util/parse.h"
#include "instance/pin_lock.h"
#include "state/pinned.h"
#include "rules/rules.h"

static const char block_help[] =
"Usage: slicelimit block ADDR|PREFIX [--for DUR] [--reason TEXT] [--json]\n"
"       slicelimit allow ADDR|PREFIX [--for DUR] [--reason TEXT] [--json]\n"
"\n"
"block: drop every packet from ADDR or PREFIX (IPv4 or IPv6, any length:\n"
"203.0.113.7, 198.51.100.0/24, 2001:db8::/32) before any rule sees it.\n"
"allow: let every packet from it through, before any rule, uncounted by\n"
"the rules. The allow list is read first: a source on both passes.\n"
"--for DUR: until DUR from now (500ms, 90s, 10m, 1h, 7d; at most 366d),\n"
"enforced by the data path itself; without it, until removed.\n"
"--reason TEXT: kept with the entry, shown by 'lists' (255 bytes at most).\n"
"Blocking or allowing a prefix again replaces its end and reason.\n"
"The entries live in pinned maps: a reload, 'rules apply' and a restart\n"
"of the service keep them.\n";

static const char unblock_help[] =
"Usage: slicelimit unblock ADDR|PREFIX [--json]\n"
"       slicelimit disallow ADDR|PREFIX [--json]\n"
"\n"
"Take ADDR or PREFIX, exactly as it was given to block or allow, off the\n"
"block (unblock) or the allow list (disallow). Exit 1 when it is not on\n"
"the list.\n";

static const char lists_help[] =
"Usage: slicelimit lists [--json]\n"
"\n"
"The entries of the block and allow lists that have not ended, the allow\n"
"list first: kind, prefix, when it ends (absolute and remaining), reason\n"
"and hits (packets it decided). Entries that ended are removed here.\n"
"--json: {\"lists\": [{\"kind\", \"prefix\", \"expires_ms\" (Unix ms, or\n"
"null: until removed), \"remaining_ms\" (or null), \"added_ms\", \"reason\",\n"
"\"hits\"}, ...], \"allowed\", \"allowed_bytes\", \"blocked\",\n"
"\"blocked_bytes\"}.\n";

/* The command's list, by its name. */
static unsigned command_kind(const char *cmd)
{
	return !strcmp(cmd, "allow") || !strcmp(cmd, "disallow") ?
	       SL_LISTS_ALLOW : SL_LISTS_BLOCK;
}

/* The command's one operand, after its options, as a prefix; or a usage
 * error (the exit code) in the command's words.
 */
static int prefix_arg(const char *help, int argc, char **argv,
		      struct sl_addr *addr, unsigned *len128)
{
	const char *arg;
	int err;

	if (optind != argc - 1)
		return sl_usage_error(help, "%s needs one address or prefix",
				      argv[0]);
	arg = argv[optind];
	err = sl_parse_prefix(arg, addr, len128);
	if (err == -EDOM)
		return sl_usage_error(help,
			"'%s' has bits set past its prefix length", arg);
	if (err)
		return sl_usage_error(help,
			"'%s' is not an IPv4 or IPv6 address or prefix", arg);
	return 0;
}

/* The live instance's maps, with the writers' lock held: 0, or -1 with
 * the lock released (the error said).
 */
static int open_lists(struct sl_maps *m)
{
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	unsigned nr;
	int err;

	if (sl_writer_lock())
		return -1;
	err = sl_open_live(m, &rules, &nr, &cfg);
	free(rules);
	if (err)
		sl_writer_unlock();
	return err ? -1 : 0;
}

static void close_lists(struct sl_maps *m)
{
	sl_maps_close(m);
	sl_writer_unlock();
}

static void print_change(const char *what, unsigned kind,
			 const struct sl_addr *addr, unsigned len128,
			 __u64 for_ms, __u64 now_tai)
{
	char pfx[64];

	sl_format_prefix(addr, len128, pfx, sizeof(pfx));
	if (sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, what, json_object_new_string(sl_list_name(kind)));
		json_object_object_add(o, "prefix", json_object_new_string(pfx));
		if (for_ms) {
			__u64 unix_ms = now_tai + for_ms - (now_tai - sl_now_real_ms());

			sl_json_add_u64(o, "expires_ms", unix_ms);
		} else if (!strcmp(what, "added")) {
			json_object_object_add(o, "expires_ms", NULL);
		}
		sl_print_json(o);
		return;
	}
	printf("%s %s %s the %s list", what, pfx,
	       !strcmp(what, "added") ? "to" : "from", sl_list_name(kind));
	if (for_ms) {
		char d[32];

		printf(" for %s", sl_format_duration(for_ms, d, sizeof(d)));
	}
	printf("\n");
}

/* One change of a list: what block, allow, unblock and disallow make. */
struct list_change {
	bool add;		/* block, allow; else unblock, disallow */
	unsigned kind;
	struct sl_addr addr;
	unsigned len128;
	uint64_t for_ms;	/* add: 0 for ever */
	const char *reason;	/* add: NULL for none */
};

static void change_failed(const struct list_change *ch, const char *arg,
			  int err)
{
	const char *list = sl_list_name(ch->kind);

	if (ch->add)
		pr_error("cannot put %s on the %s list: %s%s", arg, list,
			 strerror(-err),
			 err == -ENOSPC ? " (the list is full)" : "");
	else if (err == -ENOENT)
		pr_error("%s is not on the %s list", arg, list);
	else
		pr_error("cannot take %s off the %s list: %s", arg, list,
			 strerror(-err));
}

/* The operand (a usage error in HELP's words), then, unless only the
 * arguments are checked, CH made under the writers' lock and said. The
 * exit code.
 */
static int list_change_run(const char *help, int argc, char **argv,
			   struct list_change *ch)
{
	struct sl_maps m;
	__u64 now = 0;
	int err;

	err = prefix_arg(help, argc, argv, &ch->addr, &ch->len128);
	if (err)
		return err;
	if (sl_args_only)
		return SL_EXIT_OK;
	if (open_lists(&m))
		return SL_EXIT_FAIL;
	if (ch->add) {
		now = sl_now_tai_ms();
		err = sl_list_add(&m, ch->kind, &ch->addr, ch->len128,
				  ch->for_ms, ch->reason, now);
	} else {
		err = sl_list_remove(&m, ch->kind, &ch->addr, ch->len128);
	}
	close_lists(&m);
	if (err) {
		change_failed(ch, argv[optind], err);
		return SL_EXIT_FAIL;
	}
	print_change(ch->add ? "added" : "removed", ch->kind, &ch->addr,
		     ch->len128, ch->for_ms, now);
	return SL_EXIT_OK;
}

/* block and allow: OPTS is the command's own table (--for, --reason),
 * each written in its command's function, where slicelimit.8's check
 * (tests/netns/test_man.sh) finds a command's options.
 */
static int list_add(int argc, char **argv, const struct option *opts)
{
	struct list_change ch = { .add = true, .kind = command_kind(argv[0]) };
	int c;

	while ((c = sl_getopt_long(argc, argv, "f:r:h", opts)) != -1) {
		switch (c) {
		case 'f':
			if (sl_parse_duration_ms(optarg, &ch.for_ms) ||
			    !ch.for_ms || ch.for_ms > SL_LIST_MAX_FOR_MS)
				return sl_usage_error(block_help,
					"--for: '%s' is not a duration from 1ms to 366d (500ms, 90s, 10m, 1h, 7d)",
					optarg);
			break;
		case 'r':
			if (strlen(optarg) >= SL_LIST_REASON_MAX)
				return sl_usage_error(block_help,
					"--reason: %zu bytes, more than %u",
					strlen(optarg), SL_LIST_REASON_MAX - 1);
			ch.reason = optarg;
			break;
		default:
			return sl_usage(block_help, c != 'h');
		}
	}
	return list_change_run(block_help, argc, argv, &ch);
}

int do_block(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "for", required_argument, NULL, 'f' },
		{ "reason", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};

	return list_add(argc, argv, opts);
}

int do_allow(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "for", required_argument, NULL, 'f' },
		{ "reason", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};

	return list_add(argc, argv, opts);
}

/* unblock and disallow: they take no option but --help. */
static int list_remove(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct list_change ch = { .kind = command_kind(argv[0]) };
	int c;

	while ((c = sl_getopt_long(argc, argv, "h", opts)) != -1)
		return sl_usage(unblock_help, c != 'h');
	return list_change_run(unblock_help, argc, argv, &ch);
}

int do_unblock(int argc, char **argv)
{
	return list_remove(argc, argv);
}

int do_disallow(int argc, char **argv)
{
	return list_remove(argc, argv);
}

int do_lists(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sl_list_item *items = NULL;
	struct sl_list_stats ls = {};
	struct sl_maps m;
	unsigned swept = 0;
	size_t nr = 0, i;
	__u64 now, offset;
	int c, err;

	while ((c = sl_getopt_long(argc, argv, "h", opts)) != -1)
		return sl_usage(lists_help, c != 'h');
	if (optind != argc)
		return sl_usage_error(lists_help, "lists takes no arguments");
	if (sl_args_only)
		return SL_EXIT_OK;
	if (open_lists(&m))
		return SL_EXIT_FAIL;
	now = sl_now_tai_ms();
	offset = now - sl_now_real_ms();
	/* what ended goes now, so that the tries do not fill with it */
	err = sl_list_sweep(&m, now, &swept);
	if (!err)
		err = sl_list_read(&m, now, &items, &nr);
	if (!err)
		err = sl_list_stats_read(&m, &ls);
	close_lists(&m);
	if (err) {
		pr_error("cannot read the lists: %s", strerror(-err));
		free(items);
		return SL_EXIT_FAIL;
	}
	if (sl_json) {
		json_object *o = json_object_new_object();
		json_object *arr = json_object_new_array();

		for (i = 0; i < nr; i++)
			json_object_array_add(arr, sl_list_item_to_json(&items[i], now, offset));
		json_object_object_add(o, "lists", arr);
		sl_json_add_u64(o, "allowed", ls.allowed);
		sl_json_add_u64(o, "allowed_bytes", ls.allowed_bytes);
		sl_json_add_u64(o, "blocked", ls.blocked);
		sl_json_add_u64(o, "blocked_bytes", ls.blocked_bytes);
		sl_print_json(o);
	} else {
		printf("%-6s %-44s %-12s %10s  %s\n", "KIND", "PREFIX", "REMAINING",
		       "HITS", "REASON");
		for (i = 0; i < nr; i++) {
			char pfx[64], d[32] = "-";

			sl_format_prefix(&items[i].key.addr, items[i].key.prefixlen,
					 pfx, sizeof(pfx));
			if (items[i].entry.expires_ms) {
				__u64 left = items[i].entry.expires_ms > now ?
					     items[i].entry.expires_ms - now : 0;

				/* whole seconds past one: "5400s", not "5399987ms" */
				if (left >= 1000)
					left = (left + 999) / 1000 * 1000;
				sl_format_duration(left, d, sizeof(d));
			}
			printf("%-6s %-44s %-12s %10llu  %s\n",
			       sl_list_name(items[i].kind), pfx, d,
			       (unsigned long long)items[i].entry.hits,
			       items[i].note.reason);
		}
		printf("allowed %llu packets, blocked %llu\n",
		       (unsigned long long)ls.allowed,
		       (unsigned long long)ls.blocked);
	}
	free(items);
	return SL_EXIT_OK;
}
