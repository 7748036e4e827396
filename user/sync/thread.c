// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The service's sync thread: starts the engine and its transport (the
 * peers' UDP socket, or Redis), runs the rounds (sync/round.c) on a
 * thread of their own, and stops them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>
#include "util/log.h"
#include "util/clock.h"
#include "sync/peer_addr.h"
#include "sync/redis.h"
#include "sync/round.h"
#include "sync/thread.h"

struct sl_sync_service {
	struct sl_sync_config cfg;
	struct sl_sync_round round;	/* its engine and transport */
	pthread_t thread;
};

/* The configured peers, as the engine admits them to its peer slots:
 * each by its node id and its address. sl_wire_decode has already
 * refused a datagram from any other id or address; the slots bound to
 * both keep a configured peer's slot its own should the two gates ever
 * disagree.
 */
static int admit_configured_peers(struct sl_sync_service *svc)
{
	struct sl_sync_member m[SL_MAX_PEERS];
	unsigned i;

	memset(m, 0, sizeof(m));
	for (i = 0; i < svc->cfg.nr_peers; i++) {
		const struct sockaddr_storage *ss = &svc->cfg.peers[i];

		m[i].node = svc->cfg.peer_node[i];
		if (ss->ss_family == AF_INET6)
			inet_ntop(AF_INET6,
				  &((const struct sockaddr_in6 *)ss)->sin6_addr,
				  m[i].host, sizeof(m[i].host));
		else
			inet_ntop(AF_INET,
				  &((const struct sockaddr_in *)ss)->sin_addr,
				  m[i].host, sizeof(m[i].host));
	}
	return sl_sync_admit_only(svc->round.engine, m, svc->cfg.nr_peers);
}

/* The replay state's file in the state directory, made if missing (one
 * file per node id: nodes sharing a directory in tests keep apart).
 */
static void replay_state_path(const struct sl_sync_config *c, char *buf,
			      size_t len)
{
	buf[0] = '\0';
	if (!c->state_dir[0])
		return;
	if (mkdir(c->state_dir, 0700) && errno != EEXIST) {
		pr_warn("sync: cannot make %s: %s; the replay state is kept in memory only",
			c->state_dir, strerror(errno));
		return;
	}
	snprintf(buf, len, "%s/sync-replay-node%u", c->state_dir, c->node);
}

/* This node's identity and its peers' public keys into the pairs' keys,
 * in the order of cfg.peers (send_to_peer's index). 0 or -errno, said
 * once.
 */
static int load_keys(const struct sl_sync_config *c, struct sl_wire_keys *k)
{
	uint8_t secret[SL_WIRE_KEY];
	char addr[64];
	unsigned i;
	int err;

	err = sl_wire_key_load(c->identity_file, secret);
	if (!err && (err = sl_wire_keys_init(k, c->node, secret)))
		pr_error("sync identity %s: not a secret key", c->identity_file);
	for (i = 0; !err && i < c->nr_peers; i++) {
		sl_peer_addr_format(&c->peers[i], addr, sizeof(addr));
		err = sl_wire_keys_add(k, secret, c->peer_node[i],
				       c->peer_public_key[i], addr);
		if (err)
			pr_error("sync: peer node %u (%s): its public key makes no pair key",
				 c->peer_node[i], addr);
	}
	sodium_memzero(secret, sizeof(secret));
	return err;
}

static int open_socket(struct sl_sync_service *svc)
{
	/* a round after many new clients is a burst of datagrams to and
	 * from every peer: room for a few thousand of them
	 */
	int one = 1, bytes = 8 << 20, fd;

	fd = socket(svc->cfg.listen.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	svc->round.sock = fd;
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof(bytes)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
	if (bind(fd, (const struct sockaddr *)&svc->cfg.listen,
		 sl_peer_addr_len(&svc->cfg.listen)))
		return -errno;
	return 0;
}

/* The engine, with this node's keys and its replay state's file (UDP).
 * 0, or -1 with WHY set.
 */
static int start_engine(struct sl_sync_service *svc, const struct sl_maps *m,
			char *why, size_t why_len)
{
	const struct sl_sync_config *c = &svc->cfg;
	struct sl_sync_opts o = {
		.layout = c->layout,
		.node = c->node,
		.interval_ms = c->interval_ms,
		.nodes = c->nodes,
		.peers_configured = c->nr_peers,
	};
	char state[4200];

	if (c->backend == SL_SYNC_UDP && load_keys(c, &o.keys)) {
		sodium_memzero(&o.keys, sizeof(o.keys));
		snprintf(why, why_len, "cannot use the identity %s",
			 c->identity_file);
		return -1;
	}
	o.incarnation = sl_now_tai_ms() * 1000000;
	if (c->backend == SL_SYNC_UDP) {
		replay_state_path(c, state, sizeof(state));
		o.replay_state = state;
	}
	svc->round.engine = sl_sync_new(m, &o);
	sodium_memzero(&o.keys, sizeof(o.keys));	/* the engine has a copy */
	if (!svc->round.engine) {
		pr_error("sync: cannot start: %s", strerror(errno));
		snprintf(why, why_len, "cannot start: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The Redis store, as the config says to reach it. 0, or -1 with WHY
 * set.
 */
static int start_redis(struct sl_sync_service *svc, char *why,
		       size_t why_len)
{
	const struct sl_sync_config *c = &svc->cfg;
	struct sl_redis *redis;
	unsigned i;

	redis = svc->round.redis = sl_redis_new(c->url, c->node,
						c->interval_ms);
	if (!redis) {
		snprintf(why, why_len, "cannot use %s", c->url);
		return -1;
	}
	if (c->auth && sl_redis_set_auth(redis, c->username, c->password)) {
		pr_error("sync: out of memory");
		return -1;
	}
	sl_redis_set_cluster(redis, c->cluster);
	sl_redis_set_max_reply(redis, c->max_reply);
	for (i = 0; i < c->nr_cluster_nodes; i++)
		if (sl_redis_allow_node(redis, c->cluster_nodes[i].host,
					c->cluster_nodes[i].port))
			return -1;
	return 0;
}

/* The peers over UDP: the configured ones admitted, the socket bound.
 * 0, or -1 with WHY set.
 */
static int start_udp(struct sl_sync_service *svc, char *why, size_t why_len)
{
	char name[64];
	int err;

	err = admit_configured_peers(svc);
	if (!err)
		err = open_socket(svc);
	if (err) {
		sl_peer_addr_format(&svc->cfg.listen, name, sizeof(name));
		pr_error("sync: cannot listen on %s: %s", name,
			 strerror(-err));
		snprintf(why, why_len, "cannot listen on %s: %s", name,
			 strerror(-err));
		return -1;
	}
	return 0;
}

static void *sync_thread(void *arg)
{
	struct sl_sync_service *svc = arg;

	sl_sync_run_rounds(&svc->round);
	return NULL;
}

static void service_free(struct sl_sync_service *svc)
{
	if (svc->round.sock >= 0)
		close(svc->round.sock);
	if (svc->round.stop_fd >= 0)
		close(svc->round.stop_fd);
	sl_redis_free(svc->round.redis);
	sl_sync_free(svc->round.engine);
	free(svc);
}

struct sl_sync_service *sl_sync_service_start(const struct sl_sync_config *c,
					      const struct sl_maps *m,
					      char *why, size_t why_len)
{
	struct sl_sync_service *svc;
	int err;

	snprintf(why, why_len, "out of memory");
	svc = calloc(1, sizeof(*svc));
	if (!svc)
		return NULL;
	svc->cfg = *c;
	svc->round.sock = -1;
	svc->round.stop_fd = eventfd(0, EFD_CLOEXEC);
	svc->round.interval_ms = c->interval_ms;
	svc->round.peers = svc->cfg.peers;
	if (start_engine(svc, m, why, why_len) ||
	    (c->backend == SL_SYNC_REDIS ? start_redis(svc, why, why_len) :
					   start_udp(svc, why, why_len)))
		goto fail;
	/* counts already in the pinned maps went out from the service that
	 * made them (nothing, on a fresh load)
	 */
	err = sl_sync_adopt(svc->round.engine, sl_now_tai_ms());
	if (err)
		pr_warn("sync: cannot read the pinned counts: %s", strerror(-err));
	sl_sync_publish(svc->round.engine, sl_now_tai_ms());
	if (svc->round.stop_fd < 0 ||
	    pthread_create(&svc->thread, NULL, sync_thread, svc)) {
		pr_error("sync: cannot start its thread");
		snprintf(why, why_len, "cannot start its thread");
		goto fail;
	}
	pr_notice("sync: node %u, %s every %u ms, %s", c->node,
		  sl_layout_name(c->layout), c->interval_ms,
		  c->backend == SL_SYNC_REDIS ? c->url : "udp");
	return svc;
fail:
	service_free(svc);
	return NULL;
}

void sl_sync_service_stop(struct sl_sync_service *svc)
{
	uint64_t one = 1;

	if (!svc)
		return;
	if (write(svc->round.stop_fd, &one, sizeof(one)) != sizeof(one))
		pthread_cancel(svc->thread);	/* cannot happen: 8 bytes */
	pthread_join(svc->thread, NULL);
	service_free(svc);
}
