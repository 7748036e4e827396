// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* reset: forget a client's state, or zero the counters. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "cli/commands.h"
#include "state/client_keys.h"
#include "util/log.h"
#include "util/parse.h"
#include "instance/pin_lock.h"
#include "state/pinned.h"
#include "instance/stats_reset.h"
#include "rules/rules.h"
#include "sl_algo.h"

static const char reset_help[] =
"Usage: slicelimit reset ADDR [--rule NAME] [--port N] [--json]\n"
"       slicelimit reset --key KEY [--rule NAME] [--json]\n"
"       slicelimit reset --stats [--json]\n"
"\n"
"ADDR: forget the client's state under every running rule (or NAME): its\n"
"count and any block it is under, or its first request on probation, so\n"
"it passes again at once; under sync also the peers' counts this node\n"
"holds for it. A rule that keys by port forgets every port the client\n"
"has state for, or only --port N.\n"
"--json: {\"reset\": [{\"client\", \"rule\"}, ...]}, the client states\n"
"forgotten.\n"
"\n"
"--key KEY: the client a key of the check API (/v1/check) names under\n"
"each rule, as the API counts it: hashed as the API hashes it (the\n"
"100::/64 address top shows for it, which ADDR takes too); under a rule\n"
"with api_key_is_address a key that is an address is that address.\n"
"\n"
"--stats: zero every rule's counters and the global ones (the same as\n"
"'stats --reset'); 'stats' then shows the time of the reset.\n"
"\n"
"A running service keeps running: this changes counts, not what it\n"
"manages.\n";

/* Forget ADDR's state under RULE: every key it has there, and the
 * peers' part of it. Each key forgotten goes to ARR (--json) or stdout.
 */
static int reset_rule(const struct sl_maps *m, const struct sl_rule *rule,
		      const struct sl_addr *addr, bool has_port, __u16 port,
		      json_object *arr, unsigned *forgotten)
{
	int fd = sl_state_fd(m, rule->algorithm);
	struct sl_client_key *keys;
	char client[96];
	size_t nr, i;
	int err;

	err = sl_client_keys(m, rule, addr, has_port, port, &keys, &nr);
	if (err)
		return err;
	for (i = 0; i < nr && !err; i++) {
		if (bpf_map_delete_elem(fd, &keys[i]) && errno != ENOENT)
			err = -errno;
		/* what the peers counted of it here: gone too, or it would
		 * stay over the limit on their word
		 */
		if (!err && bpf_map_delete_elem(m->peer_view, &keys[i]) &&
		    errno != ENOENT)
			err = -errno;
		/* and its first accept, if it is still on probation */
		if (!err) {
			err = sl_client_probation(m, &keys[i], true);
			err = err > 0 ? 0 : err;
		}
		if (err)
			break;
		(*forgotten)++;
		sl_format_client(&keys[i], rule, client, sizeof(client));
		if (sl_json) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "client", json_object_new_string(client));
			json_object_object_add(o, "rule", json_object_new_string(rule->name));
			json_object_array_add(arr, o);
		} else {
			printf("forgot %s under %s\n", client, rule->name);
		}
	}
	free(keys);
	return err;
}

static int reset_client(const char *arg, bool by_key, const char *only,
			bool has_port, __u16 port)
{
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	struct sl_addr addr;
	struct sl_maps m;
	json_object *arr = sl_json ? json_object_new_array() : NULL;
	unsigned nr, i, forgotten = 0;
	int err = 0;

	err = by_key ? sl_client_key_arg(arg) : 0;
	if (err) {
		json_object_put(arr);
		return err == -EINVAL ? SL_EXIT_USAGE : SL_EXIT_FAIL;
	}
	if (!by_key && sl_parse_addr(arg, &addr)) {
		json_object_put(arr);
		return sl_usage_error(reset_help,
			"'%s' is not an IPv4 or IPv6 address (an API key: reset --key %s)",
			arg, arg);
	}
	if (sl_writer_lock()) {
		json_object_put(arr);
		return SL_EXIT_FAIL;
	}
	if (sl_open_live(&m, &rules, &nr, &cfg)) {
		json_object_put(arr);
		sl_writer_unlock();
		return SL_EXIT_FAIL;
	}
	if (only && !sl_rule_by_name(rules, nr, only)) {
		pr_error("--rule: no running rule is named '%s'", only);
		err = -ENOENT;
	}
	for (i = 0; i < nr && !err; i++) {
		if (only && strcmp(rules[i].name, only))
			continue;
		/* a key is the client /v1/check counts under this rule */
		if (by_key)
			sl_client_key_addr(arg, &rules[i], &addr);
		err = reset_rule(&m, &rules[i], &addr, has_port, port, arr,
				 &forgotten);
	}
	/* whatever was deleted, even before an error */
	if (forgotten || err) {
		int bumped = sl_states_forgotten(&m);

		if (bumped && !err) {
			pr_error("cannot forget %s's blocked flows: %s", arg,
				 strerror(-bumped));
			err = bumped;
		}
	}
	if (err && err != -ENOENT)
		pr_error("cannot forget %s's state: %s", arg, strerror(-err));
	if (!err && sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "reset", arr);
		arr = NULL;
		sl_print_json(o);
	} else if (!err && !forgotten) {
		printf("%s has no state to forget\n", arg);
	}
	json_object_put(arr);
	free(rules);
	sl_maps_close(&m);
	sl_writer_unlock();
	return err ? SL_EXIT_FAIL : SL_EXIT_OK;
}

int sl_reset_stats(void)
{
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	struct sl_maps m;
	unsigned nr;
	__u64 at;
	int err;

	if (sl_writer_lock())
		return SL_EXIT_FAIL;
	if (sl_open_live(&m, &rules, &nr, &cfg)) {
		sl_writer_unlock();
		return SL_EXIT_FAIL;
	}
	err = sl_stats_reset(&m, &at);
	free(rules);
	sl_maps_close(&m);
	sl_writer_unlock();
	if (err) {
		pr_error("cannot zero the counters: %s", strerror(-err));
		return SL_EXIT_FAIL;
	}
	if (sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "stats_reset", json_object_new_boolean(1));
		sl_json_add_u64(o, "reset_at_tai_ms", at);
		sl_print_json(o);
	} else {
		printf("counters zeroed\n");
	}
	return SL_EXIT_OK;
}

int do_reset(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rule", required_argument, NULL, 'r' },
		{ "port", required_argument, NULL, 'P' },
		{ "stats", no_argument, NULL, 's' },
		{ "key", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *only = NULL;
	bool stats = false, has_port = false, by_key = false;
	uint64_t port = 0;
	int c;

	while ((c = sl_getopt_long(argc, argv, "r:P:skh", opts)) != -1) {
		switch (c) {
		case 'r':
			only = optarg;
			break;
		case 'P':
			if (sl_parse_uint(optarg, 0, 65535, &port))
				return sl_usage_error(reset_help,
					"--port: '%s' is not a port from 0 to 65535", optarg);
			has_port = true;
			break;
		case 's':
			stats = true;
			break;
		case 'k':
			by_key = true;
			break;
		default:
			return sl_usage(reset_help, c != 'h');
		}
	}
	if (stats ? optind != argc || only || has_port || by_key :
		    optind != argc - 1)
		return sl_usage_error(reset_help, "reset needs one address, --key KEY, or --stats alone");
	if (sl_args_only)
		return SL_EXIT_OK;
	if (stats)
		return sl_reset_stats();
	return reset_client(argv[optind], by_key, only, has_port, htons(port));
}
