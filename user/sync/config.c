// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The `sync:` section of the service's config, read from its YAML tree as
 * service/config.c reads the rest: every problem collected with its line
 * and field ("sync.node", "sync.peers[1].public_key").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "sync/config.h"
#include "sync/engine.h"
#include "sync/redis.h"
#include "sync/wire.h"
#include "util/parse.h"
#include "util/secret_file.h"
#include "util/yaml_secret.h"

static const char *const sync_keys[] = {
	"node", "layout", "interval", "backend", "listen", "peers", "key_file",
	"identity_file", "url", "nodes", "password_file", "username", "cluster",
	"cluster_nodes", "max_reply", "state_dir", NULL,
};
static const char *const peer_keys[] = { "node", "address", "public_key",
					 NULL };

/* An ADDRESS:PORT value into SS; false (reported) when it is not one. */
static bool read_listen(const struct sl_yctx *c, const struct sl_ynode *v,
			const char *field, const char *what,
			struct sockaddr_storage *ss)
{
	const char *text;

	if (!sl_yaml_text(c, v, field, 127, &text))
		return false;
	if (sl_parse_listen(text, ss)) {
		sl_yaml_bad(c, v, field, "'%s' is not ADDRESS:PORT %s", text, what);
		return false;
	}
	return true;
}

/* Redis's shared key keys the hashes API keys are stored under: anyone
 * who can read it can find them, and anyone who can write it or swap the
 * file can choose it. A key that is a symbolic link, belongs to another user,
 * or that its group or others may read or write is refused, as ssh
 * refuses such a private key (util/secret_file.h). A key that cannot be
 * read or holds no key is refused too: the service would run unsynced,
 * each node enforcing the whole limit on its own.
 */
static void check_key_file(const struct sl_yctx *c, const struct sl_ynode *v,
			   const char *path)
{
	enum sl_secret_problem problem;
	uint8_t key[SL_WIRE_KEY];
	struct stat st;
	char why[512];
	int err;

	err = sl_wire_key_read(path, key, &st, &problem);
	explicit_bzero(key, sizeof(key));
	if (err == -EINVAL) {
		sl_yaml_bad(c, v, "sync.key_file", "'%s' holds no key: want " SL_WIRE_KEY_FORMAT,
			    path);
	} else if (err == -EACCES || err == -ELOOP) {
		sl_secret_describe(why, sizeof(why), path, err, &st, problem);
		sl_yaml_bad(c, v, "sync.key_file", "%s", why);
	} else if (err) {
		sl_yaml_bad(c, v, "sync.key_file", "cannot read '%s': %s; sync needs the fleet's key",
			    path, strerror(-err));
	}
}

/* This node's secret key: whoever reads it can speak as this node to
 * every peer, so it is opened as a secret like the key above; a file
 * that holds no key (or one with no public key) is refused.
 */
static void check_identity_file(const struct sl_yctx *c,
				const struct sl_ynode *v, const char *path)
{
	enum sl_secret_problem problem;
	uint8_t key[SL_WIRE_KEY], pub[SL_WIRE_KEY];
	struct stat st;
	char why[512];
	int err;

	err = sl_wire_key_read(path, key, &st, &problem);
	if (!err)
		err = sl_wire_public_key(pub, key);
	explicit_bzero(key, sizeof(key));
	if (err == -EINVAL) {
		sl_yaml_bad(c, v, "sync.identity_file", "'%s' holds no secret key: make one with 'slicelimit sync keygen --out %s'",
			    path, path);
	} else if (err == -EACCES || err == -ELOOP) {
		sl_secret_describe(why, sizeof(why), path, err, &st, problem);
		sl_yaml_bad(c, v, "sync.identity_file", "%s", why);
	} else if (err) {
		sl_yaml_bad(c, v, "sync.identity_file", "cannot read '%s': %s; the UDP mesh needs this node's secret key",
			    path, strerror(-err));
	}
}

static bool same_address(const struct sockaddr_storage *a,
			 const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return a4->sin_port == b4->sin_port &&
		       a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	return a6->sin6_port == b6->sin6_port &&
	       !memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof(a6->sin6_addr));
}

/* Is PEER where this node's own socket, bound to LISTEN, receives? The
 * same address, or with a wildcard listen an address of this host (a
 * loopback one, or one of its interfaces') on the same port.
 */
static bool is_own_address(const struct sockaddr_storage *peer,
			   const struct sockaddr_storage *listen)
{
	const struct sockaddr_in *p4 = (const void *)peer, *l4 = (const void *)listen;
	const struct sockaddr_in6 *p6 = (const void *)peer, *l6 = (const void *)listen;
	struct ifaddrs *all, *i;
	bool own = false;

	if (same_address(peer, listen))
		return true;
	if (peer->ss_family != listen->ss_family)
		return false;
	if (peer->ss_family == AF_INET) {
		if (p4->sin_port != l4->sin_port || l4->sin_addr.s_addr != htonl(INADDR_ANY))
			return false;
		if ((ntohl(p4->sin_addr.s_addr) >> 24) == 127)
			return true;
	} else {
		if (p6->sin6_port != l6->sin6_port ||
		    !IN6_IS_ADDR_UNSPECIFIED(&l6->sin6_addr))
			return false;
		if (IN6_IS_ADDR_LOOPBACK(&p6->sin6_addr))
			return true;
	}
	if (getifaddrs(&all))
		return false;	/* not known: not refused */
	for (i = all; i && !own; i = i->ifa_next) {
		const struct sockaddr *a = i->ifa_addr;

		if (!a || a->sa_family != peer->ss_family)
			continue;
		if (a->sa_family == AF_INET)
			own = ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
			      p4->sin_addr.s_addr;
		else
			own = !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
				      &p6->sin6_addr, sizeof(p6->sin6_addr));
	}
	freeifaddrs(all);
	return own;
}

/* The Redis password, from a file only the service's user may read: the
 * config names the file, never the secret, so the config can be shown,
 * versioned and world-readable while the password is not. Opened as a
 * secret (util/secret_file.h). One line; a trailing newline (as `echo`
 * writes it) is not part of it.
 */
static void read_password(const struct sl_yctx *c, const struct sl_ynode *v,
			  const char *path, struct sl_sync_config *sc)
{
	sc->auth = sl_yaml_secret_line(c, v, "sync.password_file", path,
				       sc->password, sizeof(sc->password)) > 0;
}

/* sync.layout (bounded when not given); the node of "central", which
 * needs backend redis (checked once the backend is known), or NULL.
 */
static const struct sl_ynode *read_sync_layout(const struct sl_yctx *c,
					       const struct sl_ynode *y,
					       struct sl_sync_config *sc)
{
	const struct sl_ynode *v;
	const char *text;

	sc->layout = SL_LAYOUT_BOUNDED;
	/* central is not a kernel layout: the check API decides in the
	 * store, and packets sync as delayed-sync
	 */
	if ((v = sl_yaml_get(y, "layout")) &&
	    sl_yaml_text(c, v, "sync.layout", 31, &text)) {
		if (!strcmp(text, "central")) {
			sc->check_central = true;
			sc->layout = SL_LAYOUT_DELAYED_SYNC;
			return v;
		} else if (sl_parse_layout(text, &sc->layout) ||
			   sc->layout == SL_LAYOUT_LOCAL) {
			sl_yaml_bad(c, v, "sync.layout", "'%s' is not bounded, delayed-sync, split-quota, predictive or central",
				    text);
		}
	}
	return NULL;
}

/* How a list of bare addresses (the form of the shared fleet key) moves
 * to per-node identities.
 */
#define SL_PEERS_MIGRATE "each peer is now {node: ID, address: ADDRESS:PORT, public_key: 64 hex digits}: run 'slicelimit sync keygen --out FILE' on every node, set its sync.identity_file, and list each peer with the public key its keygen printed"

/* One entry of sync.peers: the peer's id, address and public key. */
static void read_peer(const struct sl_yctx *c, const struct sl_ynode *p,
		      unsigned i, struct sl_sync_config *sc,
		      const struct sl_ynode *listen)
{
	unsigned k = sc->nr_peers, j;
	const struct sl_ynode *v;
	const char *text;
	char field[40];
	uint64_t n;
	bool ok = true;

	snprintf(field, sizeof(field), "sync.peers[%u]", i);
	if (p->type == SL_YNODE_SCALAR) {
		sl_yaml_bad(c, p, field, "'%s': " SL_PEERS_MIGRATE, p->text);
		return;
	}
	if (!sl_yaml_check_keys(c, p, field, peer_keys))
		return;
	snprintf(field, sizeof(field), "sync.peers[%u].node", i);
	if (!(v = sl_yaml_get(p, "node"))) {
		sl_yaml_bad(c, p, field, "required: the peer's sync.node, 1 to 65535");
		ok = false;
	} else if (!sl_yaml_uint(c, v, field, 1, 65535, &n)) {
		ok = false;
	} else if (n == sc->node) {
		sl_yaml_bad(c, v, field, "%u is this node's own id: list the other nodes only",
			    (unsigned)n);
		ok = false;
	} else {
		for (j = 0; j < k; j++)
			if (sc->peer_node[j] == n)
				break;
		if (j < k) {
			sl_yaml_bad(c, v, field, "node %u is listed twice",
				    (unsigned)n);
			ok = false;
		}
		sc->peer_node[k] = n;
	}
	snprintf(field, sizeof(field), "sync.peers[%u].address", i);
	if (!(v = sl_yaml_get(p, "address"))) {
		sl_yaml_bad(c, p, field, "required: ADDRESS:PORT the peer sends from and listens on (its sync.listen)");
		ok = false;
	} else if (!read_listen(c, v, field, "of a peer (10.0.0.2:7400)",
				&sc->peers[k])) {
		ok = false;
	} else if (listen && is_own_address(&sc->peers[k], &sc->listen)) {
		/* this node would wait for a peer that is not there */
		sl_yaml_bad(c, v, field, "'%s' is this node's own sync.listen: list the other nodes only",
			    v->text);
		ok = false;
	}
	snprintf(field, sizeof(field), "sync.peers[%u].public_key", i);
	if (!(v = sl_yaml_get(p, "public_key"))) {
		sl_yaml_bad(c, p, field, "required: the peer's public key, 64 hex digits (what 'slicelimit sync keygen' or 'sync pubkey' printed on it)");
		ok = false;
	} else if (!sl_yaml_text(c, v, field, 127, &text)) {
		ok = false;
	} else if (sl_wire_key_parse(text, sc->peer_public_key[k])) {
		sl_yaml_bad(c, v, field, "'%s' is not a public key: want 64 hex digits (slicelimit sync pubkey FILE prints it)",
			    text);
		ok = false;
	}
	if (ok)
		sc->nr_peers++;
}

/* The UDP mesh: where to listen, this node's identity, the peers. */
static void read_sync_udp(const struct sl_yctx *c, const struct sl_ynode *y,
			  struct sl_sync_config *sc)
{
	const struct sl_ynode *v, *peers = sl_yaml_get(y, "peers");
	const char *text;
	unsigned i;

	if (!(v = sl_yaml_get(y, "listen")))
		sl_yaml_bad(c, y, "sync.listen", "required: ADDRESS:PORT to receive peers' messages on (10.0.0.1:7400)");
	else if (!read_listen(c, v, "sync.listen", "to receive peers' messages on (10.0.0.1:7400)",
			      &sc->listen))
		v = NULL;
	if (peers && peers->type != SL_YNODE_SEQ)
		sl_yaml_bad(c, peers, "sync.peers", "expected a list of {node, address, public_key}");
	else if (peers && peers->nr > SL_MAX_PEERS)
		sl_yaml_bad(c, peers, "sync.peers", "%u peers: at most %u",
			    peers->nr, SL_MAX_PEERS);
	else
		for (i = 0; peers && i < peers->nr; i++)
			read_peer(c, peers->kids[i], i, sc, v);
	if ((v = sl_yaml_get(y, "key_file")))
		sl_yaml_bad(c, v, "sync.key_file", "the UDP mesh no longer shares one fleet key (any holder could speak as any node): set sync.identity_file to this node's secret key ('slicelimit sync keygen --out FILE') and give each peer its public_key; key_file is for backend: redis");
	if (!(v = sl_yaml_get(y, "identity_file")))
		sl_yaml_bad(c, y, "sync.identity_file", "required: this node's secret key (make one with 'slicelimit sync keygen --out /etc/slicelimit/sync.identity')");
	else if (sl_yaml_text(c, v, "sync.identity_file",
			      sizeof(sc->identity_file) - 1, &text)) {
		snprintf(sc->identity_file, sizeof(sc->identity_file), "%s",
			 text);
		check_identity_file(c, v, text);
	}
}

/* sync.cluster and the nodes a Cluster may send this node to. */
static void read_sync_cluster(const struct sl_yctx *c, const struct sl_ynode *y,
			      struct sl_sync_config *sc)
{
	const struct sl_ynode *v, *nodes = sl_yaml_get(y, "cluster_nodes");
	struct sl_redis_node_conf *n;
	const char *text, *end;
	unsigned i;

	if ((v = sl_yaml_get(y, "cluster")))
		sl_yaml_bool(c, v, "sync.cluster", &sc->cluster);
	if (!nodes)
		return;
	if (!sc->cluster) {
		sl_yaml_bad(c, nodes, "sync.cluster_nodes", "only with cluster: true");
		return;
	}
	if (nodes->type != SL_YNODE_SEQ || nodes->nr > SL_MAX_CLUSTER_NODES) {
		sl_yaml_bad(c, nodes, "sync.cluster_nodes", "expected a list of at most %u HOST:PORT",
			    SL_MAX_CLUSTER_NODES);
		return;
	}
	for (i = 0; i < nodes->nr; i++) {
		if (!sl_yaml_text(c, nodes->kids[i], "sync.cluster_nodes", 300,
				  &text))
			continue;
		n = &sc->cluster_nodes[sc->nr_cluster_nodes];
		n->port = 6379;
		if (sl_parse_host_port(text, n->host, sizeof(n->host), &n->port,
				       &end) || *end) {
			sl_yaml_bad(c, nodes->kids[i], "sync.cluster_nodes", "'%s' is not HOST:PORT",
				    text);
			continue;
		}
		sc->nr_cluster_nodes++;
	}
}

/* Redis: its URL and, for an ACL user, the user's name and password. */
static void read_sync_redis(const struct sl_yctx *c, const struct sl_ynode *y,
			    struct sl_sync_config *sc)
{
	const struct sl_ynode *v;
	const char *text;
	uint64_t n;

	if (!(v = sl_yaml_get(y, "url")))
		sl_yaml_bad(c, y, "sync.url", "required: redis://HOST:PORT");
	else if (sl_yaml_text(c, v, "sync.url", sizeof(sc->url) - 1, &text)) {
		if (strncmp(text, "redis://", 8))
			sl_yaml_bad(c, v, "sync.url", "'%s' is not redis://HOST:PORT",
				    text);
		else
			snprintf(sc->url, sizeof(sc->url), "%s", text);
	}
	if ((v = sl_yaml_get(y, "password_file")) &&
	    sl_yaml_text(c, v, "sync.password_file", 4095, &text))
		read_password(c, v, text, sc);
	if ((v = sl_yaml_get(y, "username")) &&
	    sl_yaml_text(c, v, "sync.username", sizeof(sc->username) - 1,
			 &text)) {
		if (!*text || strpbrk(text, " \t\r\n"))
			sl_yaml_bad(c, v, "sync.username", "'%s' is not an ACL user name (no spaces)",
				    text);
		else if (!sl_yaml_get(y, "password_file"))
			sl_yaml_bad(c, v, "sync.username", "needs password_file: the user's password");
		else
			snprintf(sc->username, sizeof(sc->username),
				 "%s", text);
	}
	read_sync_cluster(c, y, sc);
	sc->max_reply = SL_REDIS_MAX_REPLY_DEFAULT;
	if ((v = sl_yaml_get(y, "max_reply")) &&
	    sl_yaml_uint(c, v, "sync.max_reply", 4096, 1u << 30, &n))
		sc->max_reply = n;
}

/* sync.nodes: how many nodes share each limit (unless given, the peers
 * and this one).
 */
static void read_sync_nodes(const struct sl_yctx *c, const struct sl_ynode *y,
			    struct sl_sync_config *sc)
{
	const struct sl_ynode *v;
	uint64_t n;

	sc->nodes = sc->nr_peers + 1;
	if ((v = sl_yaml_get(y, "nodes")) &&
	    sl_yaml_uint(c, v, "sync.nodes", 1, 65535, &n))
		sc->nodes = n;
	/* with Redis there is no peer list to count: bounded, the default,
	 * needs `nodes`, and without it the default is delayed-sync
	 */
	if (sc->backend == SL_SYNC_REDIS && !v && !sl_yaml_get(y, "layout"))
		sc->layout = SL_LAYOUT_DELAYED_SYNC;
	if ((sc->layout == SL_LAYOUT_SPLIT_QUOTA ||
	     sc->layout == SL_LAYOUT_BOUNDED) && sc->backend == SL_SYNC_REDIS &&
	    !v)
		sl_yaml_bad(c, y, "sync.nodes", "%s over Redis needs the number of nodes sharing each limit, 1 to 65535",
			    sl_layout_name(sc->layout));
}

void sl_sync_config_read(const struct sl_yctx *c, const struct sl_ynode *y,
			 struct sl_sync_config *sc)
{
	const struct sl_ynode *v, *central;
	const char *text, *backend = "udp";
	uint64_t n, ms = 200;

	if (!sl_yaml_check_keys(c, y, "sync", sync_keys))
		return;
	sc->enabled = true;
	if (!(v = sl_yaml_get(y, "node")))
		sl_yaml_bad(c, y, "sync.node", "required: this node's id, 1 to 65535, unique in the fleet");
	else if (sl_yaml_uint(c, v, "sync.node", 1, 65535, &n))
		sc->node = n;
	central = read_sync_layout(c, y, sc);
	if ((v = sl_yaml_get(y, "interval")) &&
	    sl_yaml_text(c, v, "sync.interval", 31, &text) &&
	    (sl_parse_duration_ms(text, &ms) || ms < 10 || ms > 60000)) {
		sl_yaml_bad(c, v, "sync.interval", "'%s' is not a duration from 10ms to 60s (200ms, 1s)",
			    text);
		ms = 200;
	}
	sc->interval_ms = ms;
	if ((v = sl_yaml_get(y, "backend")) &&
	    !sl_yaml_text(c, v, "sync.backend", 15, &backend))
		backend = "udp";
	if (!strcmp(backend, "redis"))
		sc->backend = SL_SYNC_REDIS;
	else if (strcmp(backend, "udp"))
		sl_yaml_bad(c, v, "sync.backend", "'%s' is not udp or redis", backend);
	if (central && sc->backend != SL_SYNC_REDIS)
		sl_yaml_bad(c, central, "sync.layout", "central needs backend: redis (checks are decided in the store; a UDP mesh has none)");
	if (sc->backend == SL_SYNC_REDIS &&
	    (v = sl_yaml_get(y, "key_file")) &&
	    sl_yaml_text(c, v, "sync.key_file", sizeof(sc->key_file) - 1, &text)) {
		snprintf(sc->key_file, sizeof(sc->key_file), "%s", text);
		check_key_file(c, v, text);
	}
	snprintf(sc->state_dir, sizeof(sc->state_dir), "%s",
		 SL_SYNC_STATE_DIR_DEFAULT);
	if ((v = sl_yaml_get(y, "state_dir")) &&
	    sl_yaml_text(c, v, "sync.state_dir", sizeof(sc->state_dir) - 1,
			 &text)) {
		if (text[0] != '/')
			sl_yaml_bad(c, v, "sync.state_dir", "'%s' is not an absolute path (the directory that keeps the replay state across restarts)",
				    text);
		else
			snprintf(sc->state_dir, sizeof(sc->state_dir), "%s",
				 text);
	}
	if (sc->backend == SL_SYNC_UDP)
		read_sync_udp(c, y, sc);
	else
		read_sync_redis(c, y, sc);
	if (sc->backend == SL_SYNC_UDP && (v = sl_yaml_get(y, "password_file")))
		sl_yaml_bad(c, v, "sync.password_file", "only with backend: redis (the UDP mesh authenticates with identity_file)");
	if (sc->backend == SL_SYNC_REDIS &&
	    (v = sl_yaml_get(y, "identity_file")))
		sl_yaml_bad(c, v, "sync.identity_file", "only with backend: udp (Redis authenticates with password_file)");
	if (sc->backend == SL_SYNC_UDP && (v = sl_yaml_get(y, "cluster")))
		sl_yaml_bad(c, v, "sync.cluster", "only with backend: redis");
	read_sync_nodes(c, y, sc);
}
