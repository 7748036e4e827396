// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sync keygen | pubkey: a node's identity on the UDP mesh */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>
#include "cli/commands.h"
#include "util/log.h"
#include "sync/wire.h"

static const char sync_help[] =
"Usage: slicelimit sync keygen --out FILE [--json]\n"
"       slicelimit sync pubkey FILE [--json]\n"
"\n"
"Each node of a UDP mesh has a key pair of its own: its secret key in\n"
"sync.identity_file, its public key in every peer's config, beside the\n"
"node's id and address. Every datagram is sealed for the one peer it goes\n"
"to, with a key only the two nodes can compute, so no node can speak as\n"
"another, and client addresses never travel in clear.\n"
"\n"
"keygen  make a new key pair: the secret key goes to FILE (64 hex digits,\n"
"        mode 0600, owned by you; FILE must not exist), the public key to\n"
"        stdout (--json: {\"identity_file\", \"public_key\"})\n"
"pubkey  print the public key of the secret key in FILE again\n"
"        (--json: {\"public_key\"})\n"
"\n"
"On node 1 (10.0.0.1), then the same on node 2 with its own file:\n"
"  slicelimit sync keygen --out /etc/slicelimit/sync.identity\n"
"and in node 1's config:\n"
"  sync:\n"
"    node: 1\n"
"    listen: 10.0.0.1:7400\n"
"    identity_file: /etc/slicelimit/sync.identity\n"
"    peers:\n"
"      - {node: 2, address: 10.0.0.2:7400, public_key: <node 2's key>}\n";

static int print_public_key(const char *file, const uint8_t pub[SL_WIRE_KEY])
{
	char hex[2 * SL_WIRE_KEY + 1];
	json_object *o;

	sodium_bin2hex(hex, sizeof(hex), pub, SL_WIRE_KEY);
	if (!sl_json) {
		printf("%s\n", hex);
		return SL_EXIT_OK;
	}
	o = json_object_new_object();
	if (file)
		json_object_object_add(o, "identity_file",
				       json_object_new_string(file));
	json_object_object_add(o, "public_key", json_object_new_string(hex));
	sl_print_json(o);
	return SL_EXIT_OK;
}

/* O_EXCL: an identity is never overwritten (its peers know its public
 * key); O_NOFOLLOW: nor is a file a link points at. The mode is set on
 * the descriptor too, whatever the umask.
 */
static int write_secret(const char *path, const uint8_t secret[SL_WIRE_KEY])
{
	char line[2 * SL_WIRE_KEY + 2];
	size_t len;
	int fd, err = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return -errno;
	sodium_bin2hex(line, sizeof(line), secret, SL_WIRE_KEY);
	len = strlen(line);
	line[len++] = '\n';
	if (fchmod(fd, 0600) || write(fd, line, len) != (ssize_t)len ||
	    fsync(fd))
		err = errno ? -errno : -EIO;
	sodium_memzero(line, sizeof(line));
	if (close(fd) && !err)
		err = -errno;
	if (err)
		unlink(path);
	return err;
}

static int sync_keygen(const char *out)
{
	uint8_t pub[SL_WIRE_KEY], secret[SL_WIRE_KEY];
	int err;

	sl_wire_keypair(pub, secret);
	err = write_secret(out, secret);
	sodium_memzero(secret, sizeof(secret));
	if (err == -EEXIST) {
		pr_error("sync keygen: %s exists: an identity is never overwritten (its peers know its public key); remove it first, or choose another FILE",
			 out);
		return SL_EXIT_FAIL;
	}
	if (err) {
		pr_error("sync keygen: cannot write %s: %s", out,
			 strerror(-err));
		return SL_EXIT_FAIL;
	}
	return print_public_key(out, pub);
}

static int sync_pubkey(const char *file)
{
	uint8_t pub[SL_WIRE_KEY], secret[SL_WIRE_KEY];
	int err;

	err = sl_wire_key_load(file, secret);
	if (!err && sl_wire_public_key(pub, secret)) {
		pr_error("sync pubkey: %s holds no usable secret key", file);
		err = -EINVAL;
	}
	sodium_memzero(secret, sizeof(secret));
	return err ? SL_EXIT_FAIL : print_public_key(NULL, pub);
}

int do_sync(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *sub, *out = NULL;
	int c;

	if (argc < 2)
		return sl_usage(sync_help, true);
	sub = argv[1];
	optind = 2;
	while ((c = sl_getopt_long(argc, argv, "o:h", opts)) != -1) {
		if (c == 'o')
			out = optarg;
		else
			return sl_usage(sync_help, c != 'h');
	}
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help"))
		return sl_usage(sync_help, false);
	if (sodium_init() < 0) {
		pr_error("sync: libsodium would not start");
		return SL_EXIT_FAIL;
	}
	if (!strcmp(sub, "keygen")) {
		if (!out || !*out || optind != argc)
			return sl_usage_error(sync_help, "sync keygen: expected --out FILE and nothing else");
		return sl_args_only ? SL_EXIT_OK : sync_keygen(out);
	}
	if (!strcmp(sub, "pubkey")) {
		if (out || optind != argc - 1)
			return sl_usage_error(sync_help, "sync pubkey: expected FILE (the secret key), no --out");
		return sl_args_only ? SL_EXIT_OK : sync_pubkey(argv[optind]);
	}
	return sl_usage_error(sync_help, "sync: '%s' is not keygen or pubkey",
			      sub);
}
