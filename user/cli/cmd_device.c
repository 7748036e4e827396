// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* attach, detach, status */
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "instance/build_id.h"
#include "cli/commands.h"
#include "cli/write_guard.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/clock.h"
#include "instance/loader.h"
#include "service/state.h"
#include "sync/health.h"
#include "instance/instance_maps.h"
#include "rules/rules.h"

static const char attach_help[] =
"Usage: slicelimit attach DEV [--mode xdp|xdp-generic|tc] [--clients N] [--force]\n"
"\n"
"Load the programs (the first time), pin them and their maps under\n"
SL_PIN_DIR ", and attach to DEV. Every attached device shares the\n"
"same maps: a client is counted per host, not per interface.\n"
"\n"
"  --mode xdp          native XDP (default; fastest, needs driver support)\n"
"  --mode xdp-generic  XDP in the generic (skb) path: any device\n"
"  --mode tc           TC ingress (clsact)\n"
"  --clients N         client table capacity, 1 to 67108864 (default\n"
"                      262144); fixed at the first load, change it with\n"
"                      'detach --all' first\n"
"  --force             attach even though a running service manages the\n"
"                      instance (it logs the change; status shows it)\n"
"\n"
"Until 'rules apply', no rule matches and everything passes (attach says\n"
"so, and --json gives \"rules\": 0).\n";

static const char detach_help[] =
"Usage: slicelimit detach DEV [--force]\n"
"       slicelimit detach --all [--force]\n"
"\n"
"Detach from DEV, or from every device. When the last device goes, the\n"
"pins under " SL_PIN_DIR " (rules, counters, client state) go too.\n"
"A device a running service manages is refused (change its config and\n"
"run 'slicelimit reload') unless --force; the service's pins then stay.\n";

static const char status_help[] =
"Usage: slicelimit status [--json]\n"
"\n"
"Attached devices with their mode and program id, the running rule set,\n"
"how full the client table is, and which build loaded the programs\n"
"(\"program\": build_id, this_build_id, same_build, last_upgrade): when\n"
"it is not this binary's, restart the service or run 'slicelimit reload'.\n";

/* The number of running rules (0 when they cannot be read). */
static unsigned live_rule_count(void)
{
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	struct sl_maps m;
	unsigned nr = 0;

	if (sl_maps_open_pinned(&m))
		return 0;
	if (sl_rules_read_live(&m, &rules, &nr, &cfg))
		nr = 0;
	free(rules);
	sl_maps_close(&m);
	return nr;
}

int do_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "clients", required_argument, NULL, 'c' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sl_load_opts lo = {};
	enum sl_attach_mode mode = SL_MODE_XDP;
	bool force = false;
	unsigned nr_rules;
	uint64_t v;
	int c, err;

	while ((c = sl_getopt_long(argc, argv, "m:c:fh", opts)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case 'm':
			if (sl_parse_mode(optarg, &mode)) {
				pr_error("--mode: '%s' is not xdp, xdp-generic or tc",
					 optarg);
				return SL_EXIT_USAGE;
			}
			break;
		case 'c':
			if (sl_parse_uint(optarg, 1, SL_MAX_CLIENTS, &v)) {
				pr_error("--clients: '%s' is not a count from 1 to %u",
					 optarg, SL_MAX_CLIENTS);
				return SL_EXIT_USAGE;
			}
			lo.clients = v;
			break;
		case 'h':
			return sl_usage(attach_help, false);
		default:
			return sl_usage(attach_help, true);
		}
	}
	if (optind != argc - 1) {
		pr_error("attach needs one device (slicelimit attach --help)");
		return SL_EXIT_USAGE;
	}
	if (sl_args_only)
		return SL_EXIT_OK;
	if (sl_write_begin("attach", force))
		return SL_EXIT_FAIL;
	err = sl_attach(argv[optind], mode, &lo);
	nr_rules = err ? 0 : live_rule_count();
	sl_write_end();
	if (err)
		return SL_EXIT_FAIL;
	if (!nr_rules)
		pr_warn("no rules yet: every packet passes until 'slicelimit rules apply FILE'");
	if (sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "device", json_object_new_string(argv[optind]));
		json_object_object_add(o, "mode", json_object_new_string(sl_mode_name(mode)));
		json_object_object_add(o, "attached", json_object_new_boolean(1));
		json_object_object_add(o, "rules", json_object_new_int(nr_rules));
		sl_print_json(o);
	} else {
		printf("attached to %s (%s)\n", argv[optind], sl_mode_name(mode));
	}
	return SL_EXIT_OK;
}

int do_detach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool all = false, force = false;
	int c, err;

	while ((c = sl_getopt_long(argc, argv, "afh", opts)) != -1) {
		switch (c) {
		case 'a':
			all = true;
			break;
		case 'f':
			force = true;
			break;
		case 'h':
			return sl_usage(detach_help, false);
		default:
			return sl_usage(detach_help, true);
		}
	}
	if (all ? optind != argc : optind != argc - 1) {
		pr_error("detach needs one device, or --all");
		return SL_EXIT_USAGE;
	}
	if (sl_args_only)
		return SL_EXIT_OK;
	if (sl_write_begin("detach", force))
		return SL_EXIT_FAIL;
	err = all ? sl_detach_all() : sl_detach(argv[optind]);
	sl_write_end();
	if (err)
		return SL_EXIT_FAIL;
	if (sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "detached",
			json_object_new_string(all ? "all" : argv[optind]));
		sl_print_json(o);
	} else {
		printf("detached %s\n", all ? "all devices" : argv[optind]);
	}
	return SL_EXIT_OK;
}

/* One attached device, as status shows it. */
struct status_device {
	struct sl_device rec;
	__u32 ifindex;
	bool present;		/* the ifindex still names the device */
	const char *service;	/* how the service holds it; NULL: not its */
};

/* What status shows, read once from the pins: both printers use it. */
struct status {
	struct sl_config cfg;
	unsigned nr_rules;
	__u32 clients, capacity;
	struct status_device *dev;
	__u32 nr_dev;
	bool synced;			/* a service syncs: sync is filled */
	struct sl_sync_health sync;
	struct sl_service_status service;
	struct sl_build_status program;
};

static int status_read_devices(const struct sl_maps *m, struct status *st)
{
	__u32 key, next, cap = sl_map_capacity(m->devices);
	void *prev = NULL;

	st->dev = calloc(cap ? cap : 1, sizeof(*st->dev));
	if (!st->dev)
		return -ENOMEM;
	while (st->nr_dev < cap && !bpf_map_get_next_key(m->devices, prev, &next)) {
		struct status_device *d = &st->dev[st->nr_dev];
		char name[IF_NAMESIZE];

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(m->devices, &key, &d->rec))
			continue;
		d->ifindex = key;
		d->present = if_indextoname(key, name) && !strcmp(name, d->rec.name);
		d->service = sl_service_how_name(
			sl_service_device_how(&st->service.st, d->rec.name));
		st->nr_dev++;
	}
	return 0;
}

/* Everything but the rules, which the caller read into st. */
static int status_read(const struct sl_maps *m, struct status *st)
{
	st->clients = sl_map_count_keys(m->clients);
	/* what it holds without evicting: --clients */
	st->capacity = sl_clients_of_table(sl_map_capacity(m->clients),
					   m->nr_cpus);
	sl_service_status_read(sl_now_tai_ms(), &st->service);	/* none: all zero */
	st->synced = !sl_sync_health_read(m, sl_now_tai_ms(), &st->sync);
	sl_build_status_read(sl_now_tai_ms(), &st->program);
	return status_read_devices(m, st);
}

static json_object *status_to_json(const struct status *st)
{
	json_object *root = json_object_new_object(), *devs = json_object_new_array();
	__u32 i;

	for (i = 0; i < st->nr_dev; i++) {
		const struct status_device *d = &st->dev[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "device", json_object_new_string(d->rec.name));
		json_object_object_add(o, "ifindex", json_object_new_int(d->ifindex));
		json_object_object_add(o, "mode", json_object_new_string(sl_mode_name(d->rec.mode)));
		json_object_object_add(o, "prog_id", json_object_new_int(d->rec.prog_id));
		json_object_object_add(o, "present", json_object_new_boolean(d->present));
		json_object_object_add(o, "service", d->service ?
				       json_object_new_string(d->service) : NULL);
		json_object_array_add(devs, o);
	}
	json_object_object_add(root, "loaded", json_object_new_boolean(1));
	json_object_object_add(root, "devices", devs);
	json_object_object_add(root, "rules", json_object_new_int(st->nr_rules));
	json_object_object_add(root, "rules_epoch", json_object_new_int(st->cfg.rules_epoch));
	json_object_object_add(root, "clients", json_object_new_int(st->clients));
	json_object_object_add(root, "clients_capacity", json_object_new_int(st->capacity));
	json_object_object_add(root, "sync", st->synced ?
			       sl_sync_health_to_json(&st->sync) : NULL);
	json_object_object_add(root, "service", sl_service_status_to_json(&st->service));
	json_object_object_add(root, "program", sl_build_status_to_json(&st->program));
	return root;
}

static void status_print(const struct status *st)
{
	__u32 i;

	printf("pinned:   %s\n", SL_PIN_DIR);
	sl_build_status_print(&st->program);
	printf("rules:    %u (epoch %u)\n", st->nr_rules, st->cfg.rules_epoch);
	printf("clients:  %u of %u (%.1f%%)\n", st->clients, st->capacity,
	       st->capacity ? 100.0 * st->clients / st->capacity : 0.0);
	printf("devices:  %u\n", st->nr_dev);
	if (st->nr_dev)
		printf("  %-16s %-8s %-12s %-8s %-10s %s\n", "DEVICE", "IFINDEX",
		       "MODE", "PROG_ID", "SERVICE", "PRESENT");
	for (i = 0; i < st->nr_dev; i++) {
		const struct status_device *d = &st->dev[i];

		printf("  %-16s %-8d %-12s %-8d %-10s %s\n", d->rec.name,
		       (int)d->ifindex, sl_mode_name(d->rec.mode),
		       (int)d->rec.prog_id, d->service ? d->service : "-",
		       d->present ? "yes" : "no (gone)");
	}
	if (st->synced) {
		sl_sync_health_print(&st->sync);
		if (st->service.st.sync_url[0])
			printf("redis:    %.*s: %s, %llu errors, %llu reconnects, %llu transitions\n",
			       (int)sizeof(st->service.st.sync_url),
			       st->service.st.sync_url,
			       st->sync.st.backend_up ? "up" : "down",
			       (unsigned long long)st->sync.st.backend_errors,
			       (unsigned long long)st->sync.st.backend_reconnects,
			       (unsigned long long)st->sync.st.store_transitions);
	}
	sl_service_status_print(&st->service);
}

/* Nothing pinned: not an error, status says so. */
static void status_not_loaded(void)
{
	json_object *root;

	if (sl_json) {
		root = json_object_new_object();
		json_object_object_add(root, "loaded", json_object_new_boolean(0));
		json_object_object_add(root, "devices", json_object_new_array());
		sl_print_json(root);
	} else {
		printf("not loaded: nothing is pinned under %s\n", SL_PIN_DIR);
	}
}

int do_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct status st = {};
	struct sl_rule *rules = NULL;
	struct sl_maps m;
	int c, err;

	while ((c = sl_getopt_long(argc, argv, "h", opts)) != -1)
		return sl_usage(status_help, c != 'h');
	if (optind != argc)
		return sl_usage_error(status_help, "status: no arguments, got '%s'",
				      argv[optind]);
	if (sl_args_only)
		return SL_EXIT_OK;
	if (sl_require_bpffs())
		return SL_EXIT_FAIL;
	err = sl_maps_open_pinned(&m);
	if (err == -ENOENT) {
		status_not_loaded();
		return SL_EXIT_OK;
	}
	if (err) {
		pr_error("cannot open the pins under %s: %s%s", SL_PIN_DIR,
			 strerror(-err), sl_privilege_hint(err));
		return SL_EXIT_FAIL;
	}
	err = sl_rules_read_live(&m, &rules, &st.nr_rules, &st.cfg);
	if (err) {
		pr_error("cannot read the running rules: %s", strerror(-err));
		goto out;
	}
	free(rules);
	err = status_read(&m, &st);
	if (err) {
		pr_error("cannot read the devices: %s", strerror(-err));
		goto out;
	}
	if (sl_json)
		sl_print_json(status_to_json(&st));
	else
		status_print(&st);
out:
	free(st.dev);
	sl_maps_close(&m);
	return err ? SL_EXIT_FAIL : SL_EXIT_OK;
}
