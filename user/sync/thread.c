// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The service's sync thread: a round every interval (collect and send, or
 * a Redis round), and in between the peers' datagrams as they arrive.
 * Rounds fall on TAI multiples of the interval, so every node's round is
 * at the same instant (their clocks agree to milliseconds), and each
 * round is settled (sl_sync_settle) a quarter interval later, once its
 * datagrams have crossed: the bounded layout counts a node's units as
 * unknown to its peers until then.
 * Nothing here is on the data path: if this thread stalls, the kernel
 * keeps deciding with what it has (the node's own counts and the peers'
 * as last merged), and a peer's part ages out with its slices.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>
#include "util/log.h"
#include "util/clock.h"
#include "sync/redis.h"
#include "sync/thread.h"

struct sl_sync_service {
	struct sl_sync_config cfg;
	struct sl_sync *sync;
	struct sl_redis *redis;
	int sock;
	int stop_fd;
	pthread_t thread;
};

/* The next TAI multiple of the interval after `now`. */
static uint64_t next_round_ms(uint64_t now, uint64_t interval)
{
	return (now / interval + 1) * interval;
}

static socklen_t addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

static void format_addr(const struct sockaddr_storage *ss, char *buf,
			size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port;

	if (ss->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)ss)->sin6_addr)) {
		/* an IPv4 peer reaching a socket bound to [::] is named as
		 * the config names it
		 */
		const struct sockaddr_in6 *a = (const void *)ss;

		inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], host,
			  sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(a->sin6_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		const struct sockaddr_in *a = (const void *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
		snprintf(buf, len, "%s:%u", host, port);
	}
}

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
	return sl_sync_admit_only(svc->sync, m, svc->cfg.nr_peers);
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

/* A datagram sealed for one peer; an unreachable peer does not stop the
 * rest.
 */
static int send_to_peer(void *ctx, unsigned peer, const uint8_t *msg,
			size_t len)
{
	struct sl_sync_service *svc = ctx;

	if (sendto(svc->sock, msg, len, MSG_DONTWAIT,
		   (const struct sockaddr *)&svc->cfg.peers[peer],
		   addr_len(&svc->cfg.peers[peer])) < 0)
		return -errno;
	return 0;
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
		format_addr(&c->peers[i], addr, sizeof(addr));
		err = sl_wire_keys_add(k, secret, c->peer_node[i],
				       c->peer_public_key[i], addr);
		if (err)
			pr_error("sync: peer node %u (%s): its public key makes no pair key",
				 c->peer_node[i], addr);
	}
	sodium_memzero(secret, sizeof(secret));
	return err;
}

/* At most this many datagrams between two looks at the clock: a peer
 * flooding the port cannot hold back this node's own rounds.
 */
#define SL_RECEIVE_BURST	256

static void receive_all(struct sl_sync_service *svc)
{
	uint8_t buf[SL_WIRE_MAX + 1];
	struct sockaddr_storage from;
	char name[64];
	int i;

	for (i = 0; i < SL_RECEIVE_BURST; i++) {
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(svc->sock, buf, sizeof(buf), MSG_DONTWAIT,
				     (struct sockaddr *)&from, &flen);

		if (n < 0)
			return;
		format_addr(&from, name, sizeof(name));
		/* a datagram longer than SL_WIRE_MAX arrives as SL_WIRE_MAX
		 * + 1 bytes and is refused as malformed
		 */
		sl_sync_receive(svc->sync, buf, n, name, sl_now_tai_ms());
	}
}

static void round_now(struct sl_sync_service *svc)
{
	uint64_t now = sl_now_tai_ms();
	int err;

	if (svc->redis) {
		sl_redis_round(svc->redis, svc->sync, now);
	} else {
		err = sl_sync_collect(svc->sync, now, send_to_peer, svc);
		if (err)
			pr_warn("sync: a round failed: %s", strerror(-err));
	}
	sl_sync_publish(svc->sync, now);
}

static void *sync_thread(void *arg)
{
	struct sl_sync_service *svc = arg;
	uint64_t interval = svc->cfg.interval_ms, now = sl_now_tai_ms();
	uint64_t next = next_round_ms(now, interval), settle_at = 0;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = svc->stop_fd, .events = POLLIN },
			{ .fd = svc->sock, .events = POLLIN },
		};
		uint64_t due = settle_at && settle_at < next ? settle_at : next;
		int timeout;

		now = sl_now_tai_ms();
		/* a clock stepped back: the schedule starts over from now */
		if (next > now + interval)
			next = next_round_ms(now, interval);
		timeout = due > now ? (int)(due - now) : 0;
		if (poll(pfd, svc->sock >= 0 ? 2 : 1, timeout) < 0 &&
		    errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		if (svc->sock >= 0 && pfd[1].revents)
			receive_all(svc);
		now = sl_now_tai_ms();
		if (settle_at && now >= settle_at) {
			sl_sync_settle(svc->sync, now);
			settle_at = 0;
		}
		if (now >= next) {
			round_now(svc);
			now = sl_now_tai_ms();
			settle_at = now + interval / 4;
			/* a late round does not bunch up the following ones */
			next = next_round_ms(now, interval);
		}
	}
	return NULL;
}

static int open_socket(struct sl_sync_service *svc)
{
	/* a round after many new clients is a burst of datagrams to and
	 * from every peer: room for a few thousand of them
	 */
	int one = 1, bytes = 8 << 20;

	svc->sock = socket(svc->cfg.listen.ss_family, SOCK_DGRAM | SOCK_CLOEXEC,
			   0);
	if (svc->sock < 0)
		return -errno;
	setsockopt(svc->sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (setsockopt(svc->sock, SOL_SOCKET, SO_RCVBUFFORCE, &bytes,
		       sizeof(bytes)))
		setsockopt(svc->sock, SOL_SOCKET, SO_RCVBUF, &bytes,
			   sizeof(bytes));
	if (setsockopt(svc->sock, SOL_SOCKET, SO_SNDBUFFORCE, &bytes,
		       sizeof(bytes)))
		setsockopt(svc->sock, SOL_SOCKET, SO_SNDBUF, &bytes,
			   sizeof(bytes));
	if (bind(svc->sock, (const struct sockaddr *)&svc->cfg.listen,
		 addr_len(&svc->cfg.listen)))
		return -errno;
	return 0;
}

struct sl_sync_service *sl_sync_service_start(const struct sl_sync_config *c,
					      const struct sl_maps *m,
					      char *why, size_t why_len)
{
	struct sl_sync_opts o = {
		.layout = c->layout,
		.node = c->node,
		.interval_ms = c->interval_ms,
		.nodes = c->nodes,
		.peers_configured = c->nr_peers,
	};
	struct sl_sync_service *svc;
	char name[64], state[4200];
	unsigned i;
	int err = 0;

	snprintf(why, why_len, "out of memory");
	svc = calloc(1, sizeof(*svc));
	if (!svc)
		return NULL;
	svc->cfg = *c;
	svc->sock = -1;
	svc->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (c->backend == SL_SYNC_UDP && load_keys(c, &o.keys)) {
		snprintf(why, why_len, "cannot use the identity %s",
			 c->identity_file);
		goto fail;
	}
	o.incarnation = sl_now_tai_ms() * 1000000;
	if (c->backend == SL_SYNC_UDP) {
		replay_state_path(c, state, sizeof(state));
		o.replay_state = state;
	}
	svc->sync = sl_sync_new(m, &o);
	sodium_memzero(&o.keys, sizeof(o.keys));	/* the engine has a copy */
	if (!svc->sync) {
		pr_error("sync: cannot start: %s", strerror(errno));
		snprintf(why, why_len, "cannot start: %s", strerror(errno));
		goto fail;
	}
	if (c->backend == SL_SYNC_REDIS) {
		svc->redis = sl_redis_new(c->url, c->node, c->interval_ms);
		if (!svc->redis) {
			snprintf(why, why_len, "cannot use %s", c->url);
			goto fail;
		}
		if (c->auth && sl_redis_set_auth(svc->redis, c->username,
						 c->password)) {
			pr_error("sync: out of memory");
			goto fail;
		}
		sl_redis_set_cluster(svc->redis, c->cluster);
		sl_redis_set_max_reply(svc->redis, c->max_reply);
		for (i = 0; i < c->nr_cluster_nodes; i++)
			if (sl_redis_allow_node(svc->redis,
						c->cluster_nodes[i].host,
						c->cluster_nodes[i].port))
				goto fail;
	} else {
		err = admit_configured_peers(svc);
		if (!err)
			err = open_socket(svc);
		if (err) {
			format_addr(&c->listen, name, sizeof(name));
			pr_error("sync: cannot listen on %s: %s", name,
				 strerror(-err));
			snprintf(why, why_len, "cannot listen on %s: %s", name,
				 strerror(-err));
			goto fail;
		}
	}
	/* counts already in the pinned maps went out from the service that
	 * made them (nothing, on a fresh load)
	 */
	err = sl_sync_adopt(svc->sync, sl_now_tai_ms());
	if (err)
		pr_warn("sync: cannot read the pinned counts: %s", strerror(-err));
	sl_sync_publish(svc->sync, sl_now_tai_ms());
	if (svc->stop_fd < 0 ||
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
	sodium_memzero(&o.keys, sizeof(o.keys));
	if (svc->sock >= 0)
		close(svc->sock);
	if (svc->stop_fd >= 0)
		close(svc->stop_fd);
	sl_redis_free(svc->redis);
	sl_sync_free(svc->sync);
	free(svc);
	return NULL;
}

void sl_sync_service_stop(struct sl_sync_service *svc)
{
	uint64_t one = 1;

	if (!svc)
		return;
	if (write(svc->stop_fd, &one, sizeof(one)) != sizeof(one))
		pthread_cancel(svc->thread);	/* cannot happen: 8 bytes */
	pthread_join(svc->thread, NULL);
	close(svc->stop_fd);
	if (svc->sock >= 0)
		close(svc->sock);
	sl_redis_free(svc->redis);
	sl_sync_free(svc->sync);
	free(svc);
}
