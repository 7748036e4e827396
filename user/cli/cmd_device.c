// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* attach, detach, status */
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/build_id.h"
#include "cli/commands.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/clock.h"
#include "core/loader.h"
#include "service/state.h"
#include "sync/health.h"
#include "core/instance_maps.h"
#include "rules/rules.h"

static const char attach_help[] =
"Usage: slicelimit attach DEV [--mode xdp|xdp-generic|tc] [--clients N]\n"
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
"\n"
"Until 'rules apply', no rule matches and everything passes.\n";

static const char detach_help[] =
"Usage: slicelimit detach DEV\n"
"       slicelimit detach --all\n"
"\n"
"Detach from DEV, or from every device. When the last device goes, the\n"
"pins under " SL_PIN_DIR " (rules, counters, client state) go too.\n";

static const char status_help[] =
"Usage: slicelimit status [--json]\n"
"\n"
"Attached devices with their mode and program id, the running rule set,\n"
"how full the client table is, and which build loaded the programs\n"
"(\"program\": build_id, this_build_id, same_build, last_upgrade): when\n"
"it is not this binary's, restart the service or run 'slicelimit reload'.\n";

int do_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "clients", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sl_load_opts lo = {};
	enum sl_attach_mode mode = SL_MODE_XDP;
	uint64_t v;
	int c;

	while ((c = sl_getopt_long(argc, argv, "m:c:h", opts)) != -1) {
		switch (c) {
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
	if (sl_attach(argv[optind], mode, &lo))
		return SL_EXIT_FAIL;
	if (sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "device", json_object_new_string(argv[optind]));
		json_object_object_add(o, "mode", json_object_new_string(sl_mode_name(mode)));
		json_object_object_add(o, "attached", json_object_new_boolean(1));
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
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool all = false;
	int c, err;

	while ((c = sl_getopt_long(argc, argv, "ah", opts)) != -1) {
		switch (c) {
		case 'a':
			all = true;
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
	err = all ? sl_detach_all() : sl_detach(argv[optind]);
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

static __u32 map_capacity(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.max_entries;
}

static __u32 count_keys(int fd, size_t key_size)
{
	char key[64], next[64];
	void *prev = NULL;
	__u32 n = 0;

	if (key_size > sizeof(key))
		return 0;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, key_size);
		prev = key;
		n++;
	}
	return n;
}

int do_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	json_object *root, *devs, *sync, *service, *program;
	struct sl_service_state svc;
	struct sl_config cfg;
	struct sl_rule *rules = NULL;
	struct sl_device rec;
	struct sl_maps m;
	unsigned nr_rules = 0;
	__u32 key, next, clients, capacity;
	void *prev = NULL;
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
	if (err && err != -ENOENT) {
		pr_error("cannot open the pins under %s: %s", SL_PIN_DIR,
			 strerror(-err));
		return SL_EXIT_FAIL;
	}
	if (err) {
		if (sl_json) {
			root = json_object_new_object();
			json_object_object_add(root, "loaded", json_object_new_boolean(0));
			json_object_object_add(root, "devices", json_object_new_array());
			sl_print_json(root);
		} else {
			printf("not loaded: nothing is pinned under %s\n", SL_PIN_DIR);
		}
		return SL_EXIT_OK;
	}
	err = sl_rules_read_live(&m, &rules, &nr_rules, &cfg);
	if (err) {
		pr_error("cannot read the running rules: %s", strerror(-err));
		sl_maps_close(&m);
		return SL_EXIT_FAIL;
	}
	clients = count_keys(m.clients, sizeof(struct sl_client_key));
	capacity = map_capacity(m.clients);
	sl_service_state_read(&svc);	/* none: all zero */

	root = json_object_new_object();
	devs = json_object_new_array();
	while (!bpf_map_get_next_key(m.devices, prev, &next)) {
		char name[IF_NAMESIZE];
		const char *how;
		bool present;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(m.devices, &key, &rec))
			continue;
		present = if_indextoname(key, name) && !strcmp(name, rec.name);
		json_object *d = json_object_new_object();
		json_object_object_add(d, "device", json_object_new_string(rec.name));
		json_object_object_add(d, "ifindex", json_object_new_int(key));
		json_object_object_add(d, "mode", json_object_new_string(sl_mode_name(rec.mode)));
		json_object_object_add(d, "prog_id", json_object_new_int(rec.prog_id));
		json_object_object_add(d, "present", json_object_new_boolean(present));
		how = sl_service_how_name(sl_service_device_how(&svc, rec.name));
		json_object_object_add(d, "service",
				       how ? json_object_new_string(how) : NULL);
		json_object_array_add(devs, d);
	}
	json_object_object_add(root, "loaded", json_object_new_boolean(1));
	json_object_object_add(root, "devices", devs);
	json_object_object_add(root, "rules", json_object_new_int(nr_rules));
	json_object_object_add(root, "rules_epoch", json_object_new_int(cfg.rules_epoch));
	json_object_object_add(root, "clients", json_object_new_int(clients));
	json_object_object_add(root, "clients_capacity", json_object_new_int(capacity));
	sync = sl_sync_status_json(&m, sl_now_tai_ms());
	json_object_object_add(root, "sync", sync);
	service = sl_service_state_json(&svc, sl_now_tai_ms());
	json_object_object_add(root, "service", service);
	program = sl_build_status_json(sl_now_tai_ms());
	json_object_object_add(root, "program", program);

	if (sl_json) {
		sl_print_json(root);
	} else {
		size_t i, n = json_object_array_length(devs);

		printf("pinned:   %s\n", SL_PIN_DIR);
		sl_build_status_print(program);
		printf("rules:    %u (epoch %u)\n", nr_rules, cfg.rules_epoch);
		printf("clients:  %u of %u (%.1f%%)\n", clients, capacity,
		       capacity ? 100.0 * clients / capacity : 0.0);
		printf("devices:  %zu\n", n);
		if (n)
			printf("  %-16s %-8s %-12s %-8s %-10s %s\n", "DEVICE", "IFINDEX",
			       "MODE", "PROG_ID", "SERVICE", "PRESENT");
		for (i = 0; i < n; i++) {
			json_object *d = json_object_array_get_idx(devs, i), *v;

#define F(k) (json_object_object_get_ex(d, k, &v), v)
			printf("  %-16s %-8d %-12s %-8d %-10s %s\n",
			       json_object_get_string(F("device")),
			       json_object_get_int(F("ifindex")),
			       json_object_get_string(F("mode")),
			       json_object_get_int(F("prog_id")),
			       F("service") ? json_object_get_string(v) : "-",
			       json_object_get_boolean(F("present")) ? "yes" : "no (gone)");
#undef F
		}
		if (sync)
			sl_sync_status_print(sync);
		if (service)
			sl_service_state_print(service);
		json_object_put(root);
	}
	free(rules);
	sl_maps_close(&m);
	return SL_EXIT_OK;
}
