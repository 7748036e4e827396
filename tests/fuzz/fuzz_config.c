// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_config: arbitrary bytes as the service config (`run --config`),
 * through sl_config_parse_buffer() (the libyaml tree, the typed reads, the
 * sync checks) and the problem list's printers.
 *
 * Invariants: no crash, no leak, no read past the buffer (it is not
 * NUL-terminated); the result is 0 or -EINVAL/-ENOMEM; on 0 there is no
 * problem and every value is in the range the README gives, restated here
 * independently of service/config.c; on -EINVAL there is at least one problem,
 * each at a line of the input, and the --json form parses back with the
 * same count.
 */
#include "fuzz_common.h"
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "service/config.h"
#include "util/yaml_doc.h"

static void fail(const char *what)
{
	fprintf(report ? report : stderr, "fuzz_config: %s\n", what);
	abort();
}

static void check_accepted(const struct sl_service_config *c)
{
	unsigned i, j;

	if (c->nr_devices > SL_MAX_DEVICES)
		fail("more than SL_MAX_DEVICES devices");
	for (i = 0; i < c->nr_devices; i++) {
		size_t n = strnlen(c->devices[i].name, sizeof(c->devices[i].name));

		if (n == 0 || n >= sizeof(c->devices[i].name))
			fail("device name empty or not terminated");
		if (c->devices[i].mode != SL_MODE_XDP &&
		    c->devices[i].mode != SL_MODE_XDP_GENERIC &&
		    c->devices[i].mode != SL_MODE_TC)
			fail("unknown device mode");
	}
	if (!c->rules_path[0] ||
	    strnlen(c->rules_path, sizeof(c->rules_path)) >= sizeof(c->rules_path))
		fail("no rules path, or not terminated");
	if (c->clients > (1u << 26))
		fail("clients above 2^26");
	if (strnlen(c->http.listen, sizeof(c->http.listen)) >= sizeof(c->http.listen))
		fail("http listen not terminated");
	if (c->http.tcp_enabled && !c->http.token[0])
		fail("a TCP listener without a token");
	if (c->http.socket_enabled && c->http.socket[0] != '/')
		fail("a socket path that is not absolute");
	if (!c->sync.enabled)
		return;
	if (c->sync.node < 1 || c->sync.node > 65535)
		fail("sync.node outside 1..65535");
	if (c->sync.layout == SL_LAYOUT_LOCAL || c->sync.layout >= SL_LAYOUT__COUNT)
		fail("sync.layout not a sync layout");
	if (c->sync.interval_ms < 10 || c->sync.interval_ms > 60000)
		fail("sync.interval outside 10ms..60s");
	if (c->sync.nodes < 1 || c->sync.nodes > 65535)
		fail("sync.nodes outside 1..65535");
	if (c->sync.nr_peers > SL_MAX_PEERS)
		fail("more than SL_MAX_PEERS peers");
	if (c->sync.backend == SL_SYNC_UDP && !c->sync.identity_file[0])
		fail("udp sync without an identity file");
	if (c->sync.backend == SL_SYNC_UDP && c->sync.key_file[0])
		fail("udp sync with a shared key file");
	for (i = 0; i < c->sync.nr_peers; i++) {
		if (!c->sync.peer_node[i] || c->sync.peer_node[i] > 65535 ||
		    c->sync.peer_node[i] == c->sync.node)
			fail("a peer's node id outside 1..65535, or this node's");
		for (j = 0; j < i; j++)
			if (c->sync.peer_node[j] == c->sync.peer_node[i])
				fail("a peer's node id listed twice");
	}
	if (c->sync.backend == SL_SYNC_REDIS && strncmp(c->sync.url, "redis://", 8))
		fail("redis sync without a redis:// url");
	/* a password only from a file read whole, a user only with one */
	if (c->sync.auth && (c->sync.backend != SL_SYNC_REDIS ||
			     !c->sync.password[0] ||
			     strchr(c->sync.password, '\n')))
		fail("AUTH without redis or with an empty or multi-line password");
	if (c->sync.username[0] && !c->sync.auth)
		fail("sync.username without a password");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_report_open();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_service_config cfg;
	static struct sl_problems pb;
	int err;

	err = sl_config_parse_buffer("fuzz.yaml", (const char *)data, size, &cfg, &pb);
	if (err == 0) {
		if (pb.total)
			fail("accepted with problems");
		check_accepted(&cfg);
	} else if (err == -EINVAL) {
		const char *broke = fuzz_problems_check(&pb, data, size, false);

		if (broke)
			fail(broke);
	} else if (err != -ENOMEM) {
		fprintf(report, "fuzz_config: unexpected error %d\n", err);
		abort();
	}
	return 0;
}
