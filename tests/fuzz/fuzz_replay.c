// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_replay: the whole `replay` path in-process. The first four bytes
 * pick the flags (algorithm, limit, window, slices, bucket, --decisions,
 * --json), which go through replay's own flag parser
 * (sl_replay_args_parse); the rest is the trace, read, decided by the real
 * BPF object (BPF_PROG_TEST_RUN under the model clock), counted into
 * max_in_window and printed by the human or the JSON printer (stdout is
 * /dev/null). Loading the program takes seconds, so one instance stays
 * loaded: each input applies its rule to it and starts from an empty
 * client table, as a fresh `replay` would.
 *
 * Invariants: no crash, no leak; flags give SL_REPLAY_RUN or a usage
 * error; a run gives 0, -EINVAL (a bad trace) or -ENOMEM; per client sent
 * = accepted + rejected and max_in_window <= accepted (and >= 1 when any
 * was accepted); the one ad-hoc rule, which matches every request, is
 * listed unmatched exactly when the trace has no request.
 */
#include "fuzz_common.h"
#include <bpf/bpf.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cmd_replay.h"
#include "util/log.h"
#include "instance/instance.h"
#include "rules/rules.h"

static struct sl_instance in;
static struct sl_instance *nodes[1] = { &in };
static struct sl_rule applied;	/* the rule the instance has */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sl_instance_opts o = { .clients = 4096, .model_clock = true };

	/* the printers' output is not what is checked here */
	fuzz_report_open();
	if (!freopen("/dev/null", "w", stdout))
		die("cannot send stdout to /dev/null");
	fuzz_open_instance(&in, &o);
	return 0;
}

/* What a fresh instance holds: no client state of any algorithm. */
static void clear_clients(void)
{
	int fds[] = { in.maps.clients, in.maps.clients_plain,
		      in.maps.clients_log };
	struct sl_client_key key;
	unsigned i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		while (!bpf_map_get_next_key(fds[i], NULL, &key))
			if (bpf_map_delete_elem(fds[i], &key))
				die("cannot delete a client: %s", strerror(errno));
}

static void check_result(const struct sl_replay_result *res)
{
	__u64 sent = 0;
	size_t i;

	for (i = 0; i < res->nr; i++) {
		const struct sl_replay_client *c = &res->client[i];

		if (c->sent != c->accepted + c->rejected)
			die("client %zu: sent %llu != accepted %llu + rejected %llu",
			    i, (unsigned long long)c->sent,
			    (unsigned long long)c->accepted,
			    (unsigned long long)c->rejected);
		if (c->max_in_window > c->accepted ||
		    (c->accepted && !c->max_in_window))
			die("client %zu: max_in_window %llu with %llu accepted",
			    i, (unsigned long long)c->max_in_window,
			    (unsigned long long)c->accepted);
		sent += c->sent;
	}
	if (res->nr_unmatched != !sent)
		die("%u rules unmatched after %llu requests of one rule matching all",
		    res->nr_unmatched, (unsigned long long)sent);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const windows[] = {
		"1ms", "7ms", "100ms", "1s", "60s", "1m", "12d", "0.5s",
	};
	static const char *const refills[] = { "0.5", "10", "1e9", "0" };
	char limit[16], slices[16], capacity[16];
	char *argv[16];
	struct sl_replay_result res;
	struct sl_replay_args a;
	int argc = 0, err;
	FILE *f;

	if (size < 4)
		return 0;
	argv[argc++] = "replay";
	/* one value past the algorithms: no --algorithm, the default */
	if (data[0] % (SL_ALGO__COUNT + 1) < SL_ALGO__COUNT) {
		argv[argc++] = "--algorithm";
		argv[argc++] = (char *)sl_algorithm_name(data[0] %
							 (SL_ALGO__COUNT + 1));
	}
	/* small limits reject soon; 0xff: a limit out of range */
	snprintf(limit, sizeof(limit), "%u", data[1] == 0xff ? 0 : 1 + data[1] % 8);
	argv[argc++] = "--limit";
	argv[argc++] = limit;
	argv[argc++] = "--window";
	argv[argc++] = (char *)windows[data[2] % 8];
	if (data[3] & 1)
		argv[argc++] = "--decisions";
	if (data[3] & 4) {
		snprintf(slices, sizeof(slices), "%u", 1 + (data[3] >> 4));
		argv[argc++] = "--slices";
		argv[argc++] = slices;
	}
	if (data[3] & 8) {
		snprintf(capacity, sizeof(capacity), "%u", 1 + (data[2] >> 4));
		argv[argc++] = "--bucket-capacity";
		argv[argc++] = capacity;
		argv[argc++] = "--refill-per-s";
		argv[argc++] = (char *)refills[(data[0] >> 4) % 4];
	}
	argv[argc] = NULL;
	sl_json = data[3] & 2;

	optind = 0;	/* a fresh getopt for every input */
	err = sl_replay_args_parse(argc, argv, &a);
	if (err == SL_EXIT_USAGE)
		return 0;
	if (err != SL_REPLAY_RUN)
		die("sl_replay_args_parse: %d", err);
	/* applying fills the 131,074-slot port table: only on a new rule */
	if (memcmp(&applied, &a.rs.specs[0].rule, sizeof(applied))) {
		err = sl_rules_apply(&in.maps, &a.rs);
		if (err)
			die("sl_rules_apply: %s", strerror(-err));
		applied = a.rs.specs[0].rule;
	}
	clear_clients();

	/* fmemopen() needs a buffer: an empty trace is one empty line */
	f = size > 4 ? fmemopen((void *)(data + 4), size - 4, "r") :
		       fmemopen((void *)"\n", 1, "r");
	if (!f)
		die("fmemopen: %s", strerror(errno));
	err = sl_replay_trace(nodes, &a, "fuzz.trace", f, &res);
	fclose(f);
	if (!err) {
		check_result(&res);
		sl_replay_result_free(&res);
	} else if (err != -EINVAL && err != -ENOMEM) {
		die("sl_replay_trace: unexpected error %d", err);
	}
	sl_replay_args_free(&a);
	return 0;
}
