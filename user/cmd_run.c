// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* run: the service. */
#include <getopt.h>
#include "commands.h"
#include "common.h"
#include "service.h"

static const char run_help[] =
"Usage: slicelimit run --config FILE\n"
"\n"
"The service: attach the configured devices, apply the rules, serve the\n"
"HTTP API, until SIGTERM or SIGINT (then detach, unless keep_attached).\n"
"SIGHUP re-reads the config and the rules; a bad file is reported and the\n"
"running state kept. A restart adopts what is pinned.\n"
"\n"
"Config (YAML):\n"
"  devices:\n"
"    - { name: eth0, mode: xdp }        # xdp (default), xdp-generic, tc\n"
"  rules: /etc/slicelimit/rules.yaml\n"
"  clients: 262144                     # client table capacity\n"
"  keep_attached: false                # true: keep enforcing after stop\n"
"  http:\n"
"    listen: 127.0.0.1:8080            # or [::1]:8080, or off\n"
"\n"
"HTTP API:\n"
"  POST /v1/check  {\"rule\": NAME, \"key\": KEY}  (or GET ?rule=&key=)\n"
"       counts one request: 200, or 429 with Retry-After; RateLimit-Policy,\n"
"       RateLimit and X-RateLimit-* headers; deny_status=403 for gateways\n"
"       (nginx auth_request). An IP address key is the same client the\n"
"       kernel counts; any other string is a key of its own.\n"
"  GET  /v1/clients/KEY?rule=NAME   the same numbers, counting nothing\n"
"  GET  /metrics                    Prometheus text\n";

int do_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *config = NULL;
	int c;

	while ((c = sl_getopt_long(argc, argv, "c:h", opts)) != -1) {
		if (c == 'c')
			config = optarg;
		else
			return sl_usage(run_help, c != 'h');
	}
	if (!config || optind != argc) {
		pr_error("run needs --config FILE (slicelimit run --help)");
		return SL_EXIT_USAGE;
	}
	if (sl_args_only)
		return SL_EXIT_OK;
	return sl_service_run(config) ? SL_EXIT_FAIL : SL_EXIT_OK;
}
