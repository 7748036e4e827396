// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * Host unit tests of the service config loader (user/service/config.c, its
 * sync: section in user/sync/config.c): a good file gives the values it
 * says, and every problem of a bad one is found, each with its line and
 * field.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "service/config.h"

/* peers as sync.peers lists them: id, address, public key */
#define PK1	"bd1ae34bf9ff86be8fe7558b82f12b23c04623f6838d50b681e7877403586d5b"
#define PK2	"506a55607cce3347a2c96a29f2de6a7efd60e5ba6ce1b212eb2c1b68e53a7b3d"
#define PK3	"9cc1a72bfdb80d453eafc452b236bb437ce085ddbec4b5d1c4b6113aa9696504"
#define PEER(node, addr, pk) \
	"{node: " #node ", address: '" addr "', public_key: " pk "}"

static struct sl_problems pb;
static struct sl_service_config cfg;

static int load(const char *yaml)
{
	return sl_config_parse_buffer("config.yaml", yaml, strlen(yaml), &cfg, &pb);
}

/* YAML has a problem at LINE in FIELD whose message holds NEEDLE. */
static void expect_error(const char *yaml, unsigned line, const char *field,
			 const char *needle)
{
	unsigned i;

	assert_int_equal(load(yaml), -EINVAL);
	for (i = 0; i < pb.nr; i++)
		if (pb.list[i].line == line && !strcmp(pb.list[i].field, field) &&
		    strstr(pb.list[i].message, needle))
			return;
	sl_problems_print(&pb, stdout);
	fail_msg("expected a problem at line %u, field '%s', with '%s'", line,
		 field, needle);
}

static void test_config_full_file_parsed(void **state)
{
	const char *yaml =
		"devices:\n"
		"  - { name: eth0, mode: xdp }\n"
		"  - name: eth1\n"
		"    mode: tc\n"
		"rules: /etc/slicelimit/rules.yaml\n"
		"clients: 67108864\n"
		"keep_attached: true\n"
		"http:\n"
		"  listen: '[::1]:8081'\n"
		"  token_file: tok\n"
		"sync:\n"
		"  node: 2\n"
		"  layout: split-quota\n"
		"  interval: 1s\n"
		"  listen: 10.0.0.1:7400\n"
		"  peers:\n"
		"    - " PEER(1, "10.0.0.2:7400", PK1) "\n"
		"    - " PEER(3, "10.0.0.3:7400", PK3) "\n"
		"  identity_file: k\n"
		"  state_dir: /srv/slicelimit\n";

	assert_int_equal(load(yaml), 0);
	assert_int_equal(pb.total, 0);
	assert_int_equal(cfg.nr_devices, 2);
	assert_string_equal(cfg.devices[1].name, "eth1");
	assert_int_equal(cfg.devices[1].mode, SL_MODE_TC);
	assert_string_equal(cfg.rules_path, "/etc/slicelimit/rules.yaml");
	assert_int_equal(cfg.clients, 1u << 26);
	assert_true(cfg.keep_attached);
	assert_true(cfg.http.tcp_enabled);
	assert_string_equal(cfg.http.listen, "[::1]:8081");
	assert_string_equal(cfg.http.token, "s3cret-token");
	assert_true(cfg.sync.enabled);
	assert_int_equal(cfg.sync.node, 2);
	assert_int_equal(cfg.sync.layout, SL_LAYOUT_SPLIT_QUOTA);
	assert_int_equal(cfg.sync.interval_ms, 1000);
	assert_int_equal(cfg.sync.nr_peers, 2);
	assert_int_equal(cfg.sync.nodes, 3);	/* peers + 1 */
	assert_string_equal(cfg.sync.state_dir, "/srv/slicelimit");
	assert_int_equal(cfg.sync.peer_node[0], 1);
	assert_int_equal(cfg.sync.peer_node[1], 3);
	assert_int_equal(cfg.sync.peer_public_key[1][0], 0x9c);
	assert_int_equal(cfg.sync.peer_public_key[1][31], 0x04);
	assert_string_equal(cfg.sync.identity_file, "k");
}

/* central is the check API's mode, not a kernel layout: the packets sync
 * as delayed-sync, and without a store there is nothing to decide in
 */
static void test_config_layout_central_needs_redis(void **state)
{
	assert_int_equal(load("rules: r.yaml\nsync:\n  node: 1\n  layout: central\n"
			      "  backend: redis\n  url: redis://127.0.0.1:6379\n"), 0);
	assert_true(cfg.sync.check_central);
	assert_int_equal(cfg.sync.layout, SL_LAYOUT_DELAYED_SYNC);
	assert_int_equal(load("rules: r.yaml\nsync:\n  node: 1\n  layout: predictive\n"
			      "  backend: redis\n  url: redis://127.0.0.1:6379\n"), 0);
	assert_false(cfg.sync.check_central);
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  layout: central\n"
		     "  listen: 10.0.0.1:7400\n  identity_file: k\n", 4, "sync.layout",
		     "central needs backend: redis");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  layout: centre\n"
		     "  backend: redis\n  url: redis://127.0.0.1:6379\n", 4,
		     "sync.layout", "predictive or central");
}

static void test_config_defaults(void **state)
{
	assert_int_equal(load("rules: r.yaml\n"), 0);
	assert_int_equal(cfg.nr_devices, 0);
	assert_int_equal(cfg.clients, 0);	/* the loader's default */
	assert_false(cfg.keep_attached);
	/* the Unix socket, and no TCP unless asked for */
	assert_true(cfg.http.socket_enabled);
	assert_string_equal(cfg.http.socket, "/run/slicelimit/api.sock");
	assert_int_equal(cfg.http.socket_mode, 0660);
	assert_false(cfg.http.tcp_enabled);
	assert_int_equal(cfg.http.timeout_s, 10);
	assert_false(cfg.sync.enabled);
	assert_int_equal(load("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:1\n"
			      "  identity_file: k\n"), 0);
	assert_int_equal(cfg.sync.layout, SL_LAYOUT_BOUNDED);
	/* Redis has no peer list: bounded by default only given `nodes` */
	assert_int_equal(load("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n"
			      "  url: redis://127.0.0.1:6379\n"), 0);
	assert_int_equal(cfg.sync.layout, SL_LAYOUT_DELAYED_SYNC);
	assert_int_equal(load("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n"
			      "  url: redis://127.0.0.1:6379\n  nodes: 8\n"), 0);
	assert_int_equal(cfg.sync.layout, SL_LAYOUT_BOUNDED);
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  layout: bounded\n  backend: redis\n"
		     "  url: redis://127.0.0.1:6379\n", 3, "sync.nodes",
		     "bounded over Redis needs the number of nodes");
	assert_int_equal(load("rules: r.yaml\nhttp: { listen: off, socket: off }\n"), 0);
	assert_false(cfg.http.tcp_enabled);
	assert_false(cfg.http.socket_enabled);
}

/* clients: had no range check; 4294967297 became 1 */
static void test_config_numbers_range_checked(void **state)
{
	expect_error("rules: r.yaml\nclients: 4294967297\n", 2, "clients",
		     "from 1 to 67108864");
	expect_error("rules: r.yaml\nclients: 0\n", 2, "clients",
		     "from 1 to 67108864");
	expect_error("rules: r.yaml\nclients: many\n", 2, "clients",
		     "not 'many'");
	expect_error("rules: r.yaml\nsync:\n  node: 65536\n  listen: 10.0.0.1:1\n  identity_file: k\n",
		     3, "sync.node", "from 1 to 65535");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:1\n  identity_file: k\n  nodes: 0\n",
		     6, "sync.nodes", "from 1 to 65535");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:65536\n  identity_file: k\n",
		     4, "sync.listen", "not ADDRESS:PORT");
	/* the replay state is found by the service whatever its cwd */
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:1\n  identity_file: k\n  state_dir: var/sl\n",
		     6, "sync.state_dir", "not an absolute path");
}

/* Before, a config error had no line at all */
static void test_config_errors_have_lines(void **state)
{
	expect_error("devices:\n  - { name: eth0, mode: fast }\nrules: r.yaml\n", 2,
		     "devices[0].mode", "'fast' is not xdp, xdp-generic or tc");
	expect_error("rules: r.yaml\nkeep_atached: true\n", 2, "keep_atached",
		     "did you mean 'keep_attached'?");
	expect_error("rules: r.yaml\nkeep_attached: sometimes\n", 2,
		     "keep_attached", "expected true or false");
	expect_error("rules: r.yaml\nrules: s.yaml\n", 2, "rules", "given twice");
	expect_error("clients: 5\n", 1, "rules", "required");
	/* fuzz_config: an empty block scalar was taken as a rules path */
	expect_error("rules: |\n", 1, "rules", "empty");
	expect_error("rules: ''\n", 1, "rules", "empty");
	expect_error("rules: r.yaml\nhttp:\n  listen: localhost\n", 3, "http.listen",
		     "not ADDRESS:PORT");
	expect_error("rules: r.yaml\nhttp:\n  listen: 127.0.0.1:1\n   bad: 1\n", 4, "",
		     "not valid YAML");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n", 3,
		     "sync.url", "required");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n  url: http://x\n",
		     5, "sync.url", "not redis://");
	expect_error("rules: r.yaml\ndevices:\n  - name: eth0\n  - name: eth0\n", 4,
		     "devices[1].name", "listed twice");
	expect_error("", 1, "", "empty config");
}

/* One run reports them all. */
static void test_config_every_problem_reported(void **state)
{
	const char *yaml =
		"devices:\n"
		"  - { name: eth0, mode: fast }\n"
		"clients: 99999999999\n"
		"keep_attached: 1\n"
		"sync:\n"
		"  node: 0\n"
		"  layout: sideways\n"
		"  interval: 5ms\n"
		"  listen: 10.0.0.1:7400\n"
		"  identity_file: k\n";
	static const struct { unsigned line; const char *field; } want[] = {
		{ 2, "devices[0].mode" }, { 3, "clients" }, { 4, "keep_attached" },
		{ 6, "sync.node" }, { 7, "sync.layout" }, { 8, "sync.interval" },
	};
	unsigned i;

	assert_int_equal(load(yaml), -EINVAL);
	/* and `rules:` is missing: reported at the top of the file */
	assert_int_equal(pb.total, sizeof(want) / sizeof(want[0]) + 1);
	assert_int_equal(pb.list[0].line, 1);
	assert_string_equal(pb.list[0].field, "rules");
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(pb.list[i + 1].line, want[i].line);
		assert_string_equal(pb.list[i + 1].field, want[i].field);
	}
}

/* A password file at MODE holding TEXT; its path in `path`. */
static void password_file(char *path, mode_t mode, const char *text)
{
	FILE *f;
	int fd;

	strcpy(path, "/tmp/sl-test-pass.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_config_redis_password_read_from_file_never_world_readable(void **state)
{
	char path[64], yaml[512];

	password_file(path, 0600, "s3cret pass\n");
	snprintf(yaml, sizeof(yaml), "rules: r.yaml\nsync:\n  node: 1\n"
		 "  backend: redis\n  url: redis://127.0.0.1:6379\n"
		 "  password_file: %s\n  username: sl\n", path);
	assert_int_equal(load(yaml), 0);
	assert_true(cfg.sync.auth);
	assert_string_equal(cfg.sync.password, "s3cret pass");
	assert_string_equal(cfg.sync.username, "sl");

	/* a secret: readable by neither its group nor every user */
	assert_int_equal(chmod(path, 0640), 0);
	expect_error(yaml, 6, "sync.password_file", "readable by its group");
	assert_int_equal(chmod(path, 0604), 0);
	expect_error(yaml, 6, "sync.password_file", "readable by every user");
	unlink(path);

	expect_error(yaml, 6, "sync.password_file", "cannot open");
	password_file(path, 0600, "");
	snprintf(yaml, sizeof(yaml), "rules: r.yaml\nsync:\n  node: 1\n"
		 "  backend: redis\n  url: redis://127.0.0.1:6379\n"
		 "  password_file: %s\n", path);
	expect_error(yaml, 6, "sync.password_file", "on one line");
	unlink(path);

	expect_error("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n"
		     "  url: redis://127.0.0.1:6379\n  username: sl\n", 6,
		     "sync.username", "needs password_file");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  identity_file: k\n  password_file: /x\n", 6,
		     "sync.password_file", "only with backend: redis");
}

/* A node's secret key speaks as the node: readable by its owner only. */
static void test_config_identity_file_refused_when_others_may_read_it(void **state)
{
	char path[64], yaml[512];

	password_file(path, 0600, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n");
	snprintf(yaml, sizeof(yaml), "rules: r.yaml\nsync:\n  node: 1\n"
		 "  listen: 10.0.0.1:7400\n  identity_file: %s\n", path);
	assert_int_equal(load(yaml), 0);
	assert_string_equal(cfg.sync.identity_file, path);
	assert_int_equal(chmod(path, 0644), 0);	/* what umask 022 makes */
	expect_error(yaml, 5, "sync.identity_file", "readable by every user");
	assert_int_equal(chmod(path, 0640), 0);
	expect_error(yaml, 5, "sync.identity_file", "readable by its group");
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(load(yaml), 0);
	unlink(path);
}

/* Each secret file (the sync key, the Redis password) is opened without
 * following a symbolic link and checked on the open descriptor: a link to
 * a good file, a file every user (or its group) may write, and a file
 * owned by another user (nobody) are refused, each saying what is wrong;
 * root's own 0600 file is taken.
 */
static void secret_file_refused(const char *field, const char *yaml_fmt,
				unsigned line, const char *text)
{
	char path[64], link[80], yaml[512];

	password_file(path, 0600, text);
	snprintf(yaml, sizeof(yaml), yaml_fmt, path);
	assert_int_equal(load(yaml), 0);

	snprintf(link, sizeof(link), "%s.link", path);
	assert_int_equal(symlink(path, link), 0);
	snprintf(yaml, sizeof(yaml), yaml_fmt, link);
	expect_error(yaml, line, field, "is a symbolic link");
	unlink(link);

	snprintf(yaml, sizeof(yaml), yaml_fmt, path);
	assert_int_equal(chmod(path, 0666), 0);
	expect_error(yaml, line, field, "writable by every user (mode 0666)");
	assert_int_equal(chmod(path, 0620), 0);
	expect_error(yaml, line, field, "writable by its group (mode 0620)");
	assert_int_equal(chmod(path, 0600), 0);

	assert_int_equal(chown(path, 65534, 65534), 0);	/* nobody */
	expect_error(yaml, line, field, "owned by uid 65534");
	assert_int_equal(chown(path, 0, 0), 0);
	assert_int_equal(load(yaml), 0);
	unlink(path);
}

/* The check API: a Unix socket unless told otherwise; TCP only with a
 * token, and a TCP listener without one is refused saying what to add.
 */
static void test_config_http_tcp_needs_a_token(void **state)
{
	expect_error("rules: r.yaml\nhttp:\n  listen: 127.0.0.1:8080\n", 3,
		     "http.listen", "TCP needs http.token_file");
	expect_error("rules: r.yaml\nhttp:\n  token_file: tok\n", 3,
		     "http.token_file", "only with http.listen");
	assert_int_equal(load("rules: r.yaml\nhttp:\n  listen: 127.0.0.1:8080\n"
			      "  token_file: tok\n  socket: off\n  timeout: 5s\n"
			      "  connections_per_ip: 4\n"), 0);
	assert_true(cfg.http.tcp_enabled);
	assert_false(cfg.http.socket_enabled);
	assert_string_equal(cfg.http.token, "s3cret-token");
	assert_int_equal(cfg.http.timeout_s, 5);
	assert_int_equal(cfg.http.per_ip, 4);
	assert_int_equal(load("rules: r.yaml\nhttp:\n  socket: /run/x/api.sock\n"
			      "  socket_mode: \"0666\"\n  socket_group: root\n"), 0);
	assert_string_equal(cfg.http.socket, "/run/x/api.sock");
	assert_int_equal(cfg.http.socket_mode, 0666);
	assert_true(cfg.http.socket_group_set);
	assert_int_equal(cfg.http.socket_gid, 0);
	expect_error("rules: r.yaml\nhttp:\n  socket: api.sock\n", 3,
		     "http.socket", "not an absolute path");
	expect_error("rules: r.yaml\nhttp:\n  socket_mode: rw\n", 3,
		     "http.socket_mode", "not an octal file mode");
	expect_error("rules: r.yaml\nhttp:\n  socket_group: no-such-group-x\n", 3,
		     "http.socket_group", "no group");
	expect_error("rules: r.yaml\nhttp:\n  timeout: 1h\n", 3,
		     "http.timeout", "from 1s to 300s");
}

static void test_config_rls_off_unless_given(void **state)
{
	assert_int_equal(load("rules: /r.yaml\n"), 0);
	assert_false(cfg.rls.socket_enabled);
	assert_false(cfg.rls.tcp_enabled);
	assert_int_equal(load("rules: /r.yaml\nrls:\n"), 0);
	assert_true(cfg.rls.socket_enabled);
	assert_string_equal(cfg.rls.socket, SL_RLS_SOCKET_DEFAULT);
	assert_int_equal(cfg.rls.socket_mode, 0660);
	assert_int_equal(load("rules: /r.yaml\nrls: {socket_mode: \"0600\", timeout: 3s}\n"), 0);
	assert_true(cfg.rls.socket_enabled);
	assert_int_equal(cfg.rls.socket_mode, 0600);
	assert_int_equal(cfg.rls.timeout_s, 3);
	expect_error("rules: /r.yaml\nrls:\n  listen: 127.0.0.1:8081\n", 3,
		     "rls.listen", "needs rls.token_file");
	expect_error("rules: /r.yaml\nrls:\n  socket: \"off\"\n", 3, "rls",
		     "neither socket nor listen");
	expect_error("rules: /r.yaml\nrls:\n  socket: /run/slicelimit/api.sock\n",
		     3, "rls.socket", "is http.socket too");
	expect_error("rules: /r.yaml\nrls:\n  sockets: /x\n", 3,
		     "rls.sockets", "did you mean 'socket'");
}

static void test_config_secret_files_checked_on_the_open_descriptor(void **state)
{
	if (geteuid()) {
		skip();	/* chown to another user needs root */
		return;
	}
	secret_file_refused("sync.identity_file",
			    "rules: r.yaml\nsync:\n  node: 1\n"
			    "  listen: 10.0.0.1:7400\n  identity_file: %s\n", 5,
			    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n");
	secret_file_refused("sync.password_file",
			    "rules: r.yaml\nsync:\n  node: 1\n"
			    "  backend: redis\n  url: redis://127.0.0.1:6379\n"
			    "  password_file: %s\n", 6, "s3cret pass\n");
	secret_file_refused("http.token_file",
			    "rules: r.yaml\nhttp:\n  listen: 127.0.0.1:1\n"
			    "  token_file: %s\n", 4, "t0ken\n");
}

/* A config that asks for sync and cannot sync is refused, not run
 * unsynced: a key file that is missing (a typo), holds no key (3 bytes),
 * and a peer list that names this node's own address.
 */
static void test_config_sync_that_cannot_run_refused(void **state)
{
	char path[64], yaml[512];

	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  identity_file: sync.kye\n", 5, "sync.identity_file",
		     "cannot read 'sync.kye': No such file or directory");
	password_file(path, 0600, "abc");
	snprintf(yaml, sizeof(yaml), "rules: r.yaml\nsync:\n  node: 1\n"
		 "  listen: 10.0.0.1:7400\n  identity_file: %s\n", path);
	expect_error(yaml, 5, "sync.identity_file",
		     "holds no secret key: make one with 'slicelimit sync keygen");
	unlink(path);
	/* over Redis: a key named is a key used */
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n"
		     "  url: redis://127.0.0.1:6379\n  key_file: nokey\n", 6,
		     "sync.key_file", "cannot read 'nokey'");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  identity_file: k\n  peers:\n    - " PEER(2, "10.0.0.2:7400", PK2) "\n"
		     "    - " PEER(3, "10.0.0.1:7400", PK3) "\n", 8,
		     "sync.peers[1].address", "this node's own sync.listen");
	assert_int_equal(pb.total, 1);
	/* a wildcard listen receives on every address of this host */
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 0.0.0.0:7400\n"
		     "  identity_file: k\n  peers: [" PEER(2, "10.0.0.2:7400", PK2) ", "
		     PEER(3, "127.0.0.1:7400", PK3) "]\n", 6,
		     "sync.peers[1].address", "'127.0.0.1:7400' is this node's own sync.listen");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: '[::]:7400'\n"
		     "  identity_file: k\n  peers: [" PEER(2, "[::1]:7400", PK2) "]\n", 6,
		     "sync.peers[0].address", "this node's own sync.listen");
	assert_int_equal(load("rules: r.yaml\nsync:\n  node: 1\n  listen: 0.0.0.0:7400\n"
			      "  identity_file: k\n  peers: [" PEER(2, "127.0.0.1:7401", PK2) "]\n"), 0);
	/* the same address on another port is another node */
	assert_int_equal(load("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
			      "  identity_file: k\n  peers: [" PEER(2, "10.0.0.1:7401", PK2) "]\n"), 0);
	assert_int_equal(cfg.sync.nr_peers, 1);
}

/* The UDP mesh authenticates each node: a config of the shared-key era
 * (bare peer addresses, key_file) is refused saying how to move on, and
 * a peer is its id, address and public key, each required and checked.
 */
static void test_config_peers_need_id_address_and_public_key(void **state)
{
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  identity_file: k\n  peers: [10.0.0.2:7400]\n", 6,
		     "sync.peers[0]", "'10.0.0.2:7400': each peer is now {node: ID, address: ADDRESS:PORT, public_key: 64 hex digits}: run 'slicelimit sync keygen");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  key_file: k\n  peers: [" PEER(2, "10.0.0.2:7400", PK2) "]\n", 5,
		     "sync.key_file", "the UDP mesh no longer shares one fleet key");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n", 3,
		     "sync.identity_file", "required: this node's secret key");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  identity_file: k\n  peers: [{address: 10.0.0.2:7400, public_key: " PK2 "}]\n",
		     6, "sync.peers[0].node", "required");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  identity_file: k\n  peers: [{node: 2, public_key: " PK2 "}]\n",
		     6, "sync.peers[0].address", "required");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  identity_file: k\n  peers: [{node: 2, address: 10.0.0.2:7400}]\n",
		     6, "sync.peers[0].public_key", "required");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  identity_file: k\n  peers: [" PEER(2, "10.0.0.2:7400", "abcd") "]\n",
		     6, "sync.peers[0].public_key", "'abcd' is not a public key");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  identity_file: k\n  peers: [" PEER(1, "10.0.0.2:7400", PK2) "]\n",
		     6, "sync.peers[0].node", "this node's own id");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  identity_file: k\n  peers:\n    - " PEER(2, "10.0.0.2:7400", PK2) "\n"
		     "    - " PEER(2, "10.0.0.3:7400", PK3) "\n", 8,
		     "sync.peers[1].node", "node 2 is listed twice");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:7400\n"
		     "  identity_file: k\n  peers: [{node: 2, address: 10.0.0.2:7400, public_key: " PK2 ", key: x}]\n",
		     6, "sync.peers[0].key", "unknown field");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n"
		     "  url: redis://127.0.0.1:6379\n  identity_file: k\n", 6,
		     "sync.identity_file", "only with backend: udp");
}

/* The files the configs above name, relative to a directory of this run:
 * `k` is a valid key only its owner reads.
 */
static int in_key_dir(void **state)
{
	static char dir[] = "/tmp/sl-test-config.XXXXXX";
	FILE *f;

	(void)state;
	if (!mkdtemp(dir) || chdir(dir))
		return -1;
	f = fopen("k", "w");
	if (!f)
		return -1;
	fputs("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", f);
	fclose(f);
	if (chmod("k", 0600))
		return -1;
	f = fopen("tok", "w");
	if (!f)
		return -1;
	fputs("s3cret-token\n", f);
	fclose(f);
	return chmod("tok", 0600);
}

static int out_of_key_dir(void **state)
{
	char dir[64];

	(void)state;
	if (!getcwd(dir, sizeof(dir)))
		return -1;
	unlink("k");
	unlink("tok");
	if (chdir("/"))
		return -1;
	return rmdir(dir);
}

/* Cluster mode only when asked for, and the nodes it may follow; the
 * reply cap.
 */
static void test_config_redis_cluster_only_when_configured(void **state)
{
	assert_int_equal(load("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n"
			      "  url: redis://10.0.0.1:7000\n"), 0);
	assert_false(cfg.sync.cluster);
	assert_int_equal(cfg.sync.nr_cluster_nodes, 0);
	assert_int_equal(cfg.sync.max_reply, 4u << 20);
	assert_int_equal(load("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n"
			      "  url: redis://10.0.0.1:7000\n  cluster: true\n"
			      "  cluster_nodes: [10.0.0.2:7000, '[2001:db8::3]:7001']\n"
			      "  max_reply: 1048576\n"), 0);
	assert_true(cfg.sync.cluster);
	assert_int_equal(cfg.sync.nr_cluster_nodes, 2);
	assert_string_equal(cfg.sync.cluster_nodes[0].host, "10.0.0.2");
	assert_int_equal(cfg.sync.cluster_nodes[0].port, 7000);
	assert_string_equal(cfg.sync.cluster_nodes[1].host, "2001:db8::3");
	assert_int_equal(cfg.sync.cluster_nodes[1].port, 7001);
	assert_int_equal(cfg.sync.max_reply, 1048576);
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n"
		     "  url: redis://10.0.0.1:7000\n  cluster_nodes: [10.0.0.2:7000]\n",
		     6, "sync.cluster_nodes", "only with cluster: true");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n"
		     "  url: redis://10.0.0.1:7000\n  cluster: true\n"
		     "  cluster_nodes: [10.0.0.2:x]\n", 7, "sync.cluster_nodes",
		     "is not HOST:PORT");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n"
		     "  url: redis://10.0.0.1:7000\n  cluster: maybe\n", 6,
		     "sync.cluster", "");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  backend: redis\n"
		     "  url: redis://10.0.0.1:7000\n  max_reply: 10\n", 6,
		     "sync.max_reply", "");
	expect_error("rules: r.yaml\nsync:\n  node: 1\n  listen: 10.0.0.1:1\n"
		     "  identity_file: k\n  cluster: true\n", 6, "sync.cluster",
		     "only with backend: redis");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_full_file_parsed),
		cmocka_unit_test(test_config_defaults),
		cmocka_unit_test(test_config_layout_central_needs_redis),
		cmocka_unit_test(test_config_numbers_range_checked),
		cmocka_unit_test(test_config_errors_have_lines),
		cmocka_unit_test(test_config_every_problem_reported),
		cmocka_unit_test(test_config_redis_password_read_from_file_never_world_readable),
		cmocka_unit_test(test_config_identity_file_refused_when_others_may_read_it),
		cmocka_unit_test(test_config_peers_need_id_address_and_public_key),
		cmocka_unit_test(test_config_secret_files_checked_on_the_open_descriptor),
		cmocka_unit_test(test_config_http_tcp_needs_a_token),
		cmocka_unit_test(test_config_rls_off_unless_given),
		cmocka_unit_test(test_config_sync_that_cannot_run_refused),
		cmocka_unit_test(test_config_redis_cluster_only_when_configured),
	};

	return cmocka_run_group_tests(tests, in_key_dir, out_of_key_dir);
}
