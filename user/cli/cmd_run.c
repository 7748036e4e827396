// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* run: the service. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include "cli/commands.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/clock.h"
#include "instance/build_id.h"
#include "service/config.h"
#include "instance/loader.h"
#include "instance/instance_maps.h"
#include "instance/pin_lock.h"
#include "rules/rules.h"
#include "service/privdrop.h"
#include "service/service.h"
#include "service/state.h"
#include "util/yaml_doc.h"
#include "util/secret_file.h"

static const char run_help[] =
"Usage: slicelimit run --config FILE [--user USER]\n"
"       slicelimit run --check --config FILE [--json]\n"
"\n"
"--check validates the config and the rule file it names, loading and\n"
"attaching nothing (no root needed): every problem as FILE:LINE: ...,\n"
"exit 0 when both are valid, 1 when not; with --json one object\n"
"{\"ok\", \"config\", \"rules\", \"problems\": [{\"file\", \"line\", ...}],\n"
"\"warnings\": [...]} (the rule file's, as rules check gives them). A\n"
"config that asks for sync and cannot sync (key file missing or not a\n"
"key, a peer that is this node) is not valid.\n"
"\n"
"The service: attach the configured devices, apply the rules, serve the\n"
"HTTP API, until SIGTERM or SIGINT (then detach, unless keep_attached).\n"
"SIGHUP (or 'slicelimit reload') re-reads the config and the rules; a bad\n"
"file is reported and the running state kept. A restart adopts what is\n"
"pinned; pins of another\n"
"build (status: \"program\") get this build's programs, on the maps whose\n"
"layout is unchanged (the others are recreated, and named).\n"
"\n"
"Once attached, the service becomes USER (default: the config's\n"
"service.user, else $SLICELIMIT_USER, else slicelimit) with no\n"
"capabilities, before it parses any input; a root child\n"
"stays to detach at the stop. A reload then applies rules, not devices.\n"
"--user root keeps every privilege (warned). Secret files: root:USER's group,\n"
"mode 640 (read again as USER on a reload).\n"
"\n"
"Config (YAML):\n"
"  devices:\n"
"    - { name: eth0, mode: xdp }        # xdp (default), xdp-generic, tc\n"
"  rules: /etc/slicelimit/rules.yaml\n"
"  clients: 262144                     # client table capacity\n"
"  keep_attached: false                # true: keep enforcing after stop\n"
"  http:\n"
"    listen: 127.0.0.1:8080            # or [::1]:8080, or off\n"
"  service:\n"
"    user: slicelimit                  # the user it drops to once attached\n"
"\n"
"HTTP API:\n"
"  POST /v1/check  {\"rule\": NAME, \"key\": KEY}  (or GET ?rule=&key=)\n"
"       counts one request: 200, or 429 with Retry-After; RateLimit-Policy,\n"
"       RateLimit and X-RateLimit-* headers; deny_status=403 for gateways\n"
"       (nginx auth_request). An IP address key is the same client the\n"
"       kernel counts; any other string is a key of its own.\n"
"  GET  /v1/clients/KEY?rule=NAME   the same numbers, counting nothing\n"
"  GET  /healthz   200 {\"status\": \"ok\"} while a device is attached with\n"
"                  rules and the sync (if any) is not stale; else 503 with\n"
"                  {\"status\": \"unavailable\", \"reason\"}\n"
"  GET  /metrics                    Prometheus text\n"
"\n"
"One service per pin directory: a second run exits 1 (\"already running\n"
"(pid N, config FILE)\"). While it runs, rules apply, attach and detach\n"
"are refused unless --force; 'slicelimit reload' has it re-read FILE.\n";

static void add_problems(json_object *all, const struct sl_problems *pb)
{
	json_object *list = sl_problems_to_json(pb);
	size_t i, n = json_object_array_length(list);

	for (i = 0; i < n; i++)
		json_object_array_add(all, json_object_get(
			json_object_array_get_idx(list, i)));
	json_object_put(list);
}

/* run --check: both files, every problem of each, nothing touched. The
 * rule file is checked even when the config has problems, as long as it
 * names one, so that one run lists everything to fix.
 */
static int run_check(const char *path)
{
	struct sl_service_config cfg;
	struct sl_problems *pb = malloc(sizeof(*pb));
	struct sl_ruleset rs;
	json_object *problems = json_object_new_array();
	json_object *warnings = json_object_new_array();
	unsigned total;
	bool ok, cfg_ok;
	int err;

	if (!pb) {
		json_object_put(problems);
		json_object_put(warnings);
		pr_error("out of memory");
		return SL_EXIT_FAIL;
	}
	err = sl_config_parse_file(path, &cfg, pb);
	ok = cfg_ok = !err;
	total = pb->total;
	if (pb->oom)
		pr_error("%s: out of memory", path);
	sl_problems_print(pb, stderr);
	add_problems(problems, pb);
	if (cfg.rules_path[0]) {
		err = sl_rules_parse_file(cfg.rules_path, &rs, pb);
		if (!err && rs.warnings) {
			sl_warnings_print(rs.warnings, stderr);
			add_problems(warnings, rs.warnings);
		}
		if (!err)
			sl_rules_free(&rs);
		ok = ok && !err;
		total += pb->total;
		if (pb->oom)
			pr_error("%s: out of memory", cfg.rules_path);
		sl_problems_print(pb, stderr);
		add_problems(problems, pb);
	}
	free(pb);
	if (sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "ok", json_object_new_boolean(ok));
		json_object_object_add(o, "config", json_object_new_string(path));
		json_object_object_add(o, "rules", cfg.rules_path[0] ?
			json_object_new_string(cfg.rules_path) : NULL);
		json_object_object_add(o, "http", cfg_ok ?
			sl_http_listeners_to_json(
				cfg.http.socket_enabled ? cfg.http.socket : "",
				cfg.http.socket_mode,
				cfg.http.tcp_enabled ? cfg.http.listen : "") :
			NULL);
		json_object_object_add(o, "problems", problems);
		json_object_object_add(o, "warnings", warnings);
		sl_print_json(o);
		/* this object is the answer: no error object after it */
		sl_error_answered();
	} else {
		json_object_put(problems);
		json_object_put(warnings);
		if (ok)
			printf("%s: valid; %s: valid\n", path, cfg.rules_path);
		else
			fprintf(stderr, "%sslicelimit: %u problem%s; nothing was loaded\n",
				sl_log_prefix(SL_LOG_ERR), total, total == 1 ? "" : "s");
	}
	return ok ? SL_EXIT_OK : SL_EXIT_FAIL;
}

/* The config's service.user, read before the service reads the config
 * for good: the secrets in it are checked against that user. Nothing is
 * reported here: the service's own read reports every problem.
 */
static void config_user(const char *path, char *user, size_t len)
{
	struct sl_service_config *cfg = malloc(sizeof(*cfg));
	struct sl_problems *pb = malloc(sizeof(*pb));

	user[0] = '\0';
	if (cfg && pb) {
		sl_config_parse_file(path, cfg, pb);
		snprintf(user, len, "%s", cfg->service_user);
	}
	free(cfg);
	free(pb);
}

int do_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'n' },
		{ "user", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sl_service_user user;
	const char *config = NULL, *user_name = NULL;
	char cfg_user[sizeof(user.name)];
	bool check = false;
	int c;

	while ((c = sl_getopt_long(argc, argv, "c:nu:h", opts)) != -1) {
		if (c == 'c')
			config = optarg;
		else if (c == 'n')
			check = true;
		else if (c == 'u')
			user_name = optarg;
		else
			return sl_usage(run_help, c != 'h');
	}
	if (!config || optind != argc) {
		pr_error("run needs --config FILE (slicelimit run --help)");
		return SL_EXIT_USAGE;
	}
	/* the argv fuzzer stops here too: a path it makes up could be a
	 * FIFO or /dev/stdin, and the read would never end
	 */
	if (sl_args_only)
		return SL_EXIT_OK;
	/* --user, the config's service.user, $SLICELIMIT_USER, slicelimit */
	if (!user_name) {
		config_user(config, cfg_user, sizeof(cfg_user));
		user_name = cfg_user[0] ? cfg_user : getenv("SLICELIMIT_USER");
	}
	if (!user_name || !user_name[0])
		user_name = SL_SERVICE_USER;
	if (check) {
		/* the secrets as the service will check them, when its user
		 * exists here (a check may run on another host)
		 */
		if (!sl_privdrop_find(user_name, &user) && !user.root)
			sl_secret_set_service_user(user.uid, user.gid);
		return run_check(config);
	}
	if (sl_privdrop_lookup(user_name, &user))
		return SL_EXIT_FAIL;
	if (!user.root)
		sl_secret_set_service_user(user.uid, user.gid);
	return sl_service_run(config, &user) ? SL_EXIT_FAIL : SL_EXIT_OK;
}

static const char reload_help[] =
"Usage: slicelimit reload [--clients N] [--json]\n"
"\n"
"With a service running: have it re-read its config and rules (SIGHUP),\n"
"and wait until it has applied them (exit 0) or refused them (exit 1,\n"
"with its reason); --json: {\"service\", \"config\", \"reloaded\"}.\n"
"\n"
"Without one: swap this build's programs in for the pinned ones of another\n"
"build (after a package upgrade), on every attached device, keeping each\n"
"pinned map whose layout (type, key and value size, max_entries, flags,\n"
"and the value's BTF type) is unchanged, so the clients' counts survive;\n"
"a map whose layout changed is recreated empty and named. Nothing to do\n"
"when the programs are this build's. A running service's restart does the\n"
"same. --json prints the \"program\" object of status --json and\n"
"\"upgraded\".\n";

/* A service reloads in well under a second; one that takes longer is
 * reported, not waited for without end.
 */
#define RELOAD_WAIT_MS	10000

/* A reload the service refused as "not valid": its problems are in the
 * service's log only, so the file is checked here the same way (the
 * config, or the rule file it names), each problem printed as
 * FILE:LINE: ... and, under --json, in the error's "problems".
 */
static void reload_not_valid(const struct sl_service_state *now, char *msg)
{
	struct sl_problems *pb = malloc(sizeof(*pb));
	struct sl_service_config *cfg;
	char file[sizeof(now->last_refused_file) + 1];
	struct sl_ruleset rs;

	snprintf(file, sizeof(file), "%.*s", (int)sizeof(now->last_refused_file),
		 now->last_refused_file);
	if (!pb) {
		pr_error("%s", msg);
		return;
	}
	if (!strncmp(file, now->config, sizeof(now->config))) {
		cfg = malloc(sizeof(*cfg));
		if (cfg)
			sl_config_parse_file(file, cfg, pb);
		free(cfg);
	} else if (!sl_rules_parse_file(file, &rs, pb)) {
		sl_rules_free(&rs);
	}
	sl_problems_print(pb, stderr);
	pr_error_problems(sl_problems_to_json(pb), "%s", msg);
	free(pb);
}

/* reload with a service running: its SIGHUP, and what became of it. */
static int reload_service(void)
{
	const struct timespec poll = { .tv_nsec = 20 * 1000000L };
	struct sl_service_state before, now;
	unsigned waited;
	bool applied;

	if (sl_service_state_read(&before) || !before.pid) {
		pr_error("a service holds the pins but has published no state yet; try again");
		return SL_EXIT_FAIL;
	}
	if (kill((pid_t)before.pid, SIGHUP)) {
		pr_error("cannot signal the service (pid %u): %s", before.pid,
			 strerror(errno));
		return SL_EXIT_FAIL;
	}
	for (waited = 0;; waited += 20) {
		if (!sl_service_state_read(&now) &&
		    now.reloads_applied + now.reloads_refused !=
		    before.reloads_applied + before.reloads_refused)
			break;
		if (waited >= RELOAD_WAIT_MS) {
			pr_error("the service (pid %u) did not answer the reload in 10 s",
				 before.pid);
			return SL_EXIT_FAIL;
		}
		nanosleep(&poll, NULL);
	}
	applied = now.reloads_applied != before.reloads_applied;
	if (!applied) {
		char msg[512];

		snprintf(msg, sizeof(msg), "the service (pid %u) refused the reload: %.*s: %.*s; it runs on what it had",
			 now.pid, (int)sizeof(now.last_refused_file),
			 now.last_refused_file, (int)sizeof(now.last_refused_error),
			 now.last_refused_error);
		if (!strncmp(now.last_refused_error, "not valid",
			     sizeof(now.last_refused_error)))
			reload_not_valid(&now, msg);
		else
			pr_error("%s", msg);
		return SL_EXIT_FAIL;
	}
	if (sl_json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "service", json_object_new_int64(now.pid));
		json_object_object_add(o, "config", json_object_new_string_len(
			now.config, strnlen(now.config, sizeof(now.config))));
		json_object_object_add(o, "reloaded", json_object_new_boolean(1));
		sl_print_json(o);
	} else {
		printf("reloaded %.*s (service pid %u)\n", (int)sizeof(now.config),
		       now.config, now.pid);
	}
	return SL_EXIT_OK;
}

int do_reload(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "clients", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sl_load_opts lo = {};
	struct sl_build_rec rec;
	uint64_t n;
	int c, err;

	while ((c = sl_getopt_long(argc, argv, "c:h", opts)) != -1) {
		if (c == 'c' && !sl_parse_uint(optarg, 1, SL_MAX_CLIENTS, &n))
			lo.clients = n;
		else
			return sl_usage(reload_help, c != 'h');
	}
	if (optind != argc)
		return sl_usage_error(reload_help, "reload: no arguments, got '%s'",
				      argv[optind]);
	if (sl_args_only)
		return SL_EXIT_OK;
	if (sl_require_bpffs())
		return SL_EXIT_FAIL;
	err = sl_writer_lock();
	if (err)
		return SL_EXIT_FAIL;
	/* the service holds the maps and the check program it opened: a
	 * swap under it would leave it on the old ones; it reloads itself
	 */
	if (sl_service_holds_pins()) {
		sl_writer_unlock();
		return reload_service();
	}
	err = sl_upgrade_pinned(&lo, &rec);
	sl_writer_unlock();
	if (err)
		return SL_EXIT_FAIL;
	if (sl_json) {
		struct sl_build_status bs;
		json_object *o;

		sl_build_status_read(sl_now_tai_ms(), &bs);
		o = sl_build_status_to_json(&bs);

		json_object_object_add(o, "upgraded",
				       json_object_new_boolean(rec.upgraded_ms != 0));
		sl_print_json(o);
	} else if (!rec.upgraded_ms) {
		printf("nothing to do: %s\n", access(SL_PIN_DIR "/prog_xdp", F_OK) ?
		       "nothing is loaded" : "the loaded programs are this build's");
	}
	return SL_EXIT_OK;
}
