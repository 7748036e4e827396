// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Redis Cluster: connecting (the URL's server, else the nodes the last
 * map named), the slot map, the connection per master, and following
 * MOVED and ASK to the master they name. Built on redis_link.c (one
 * connection, the outage), which never calls back here.
 *
 * Redis Cluster: a script call touches one slot only if its keys share
 * one, and must go to the master serving it. At connect the URL's
 * server is asked for CLUSTER SLOTS: a standalone server (or a proxy:
 * anything that is not a slot map) serves every slot on the one
 * connection; a Cluster's masters get a connection each, opened at first
 * use (AUTH and the scripts loaded there too), and every batch is cut
 * per slot (CRC16 of the hash tag, as Cluster computes it) and sent to
 * the slot's master. MOVED (a failover or resharding) is followed to
 * the master it names and the map is read again before the next round;
 * ASK is followed with ASKING; all are refused before the script runs,
 * so following them applies a batch once. Any other failure is the
 * outage above (all connections dropped); the reconnect asks the URL's
 * server and then every node the last map named (masters and replicas),
 * so a fleet pointed at a master that died finds the promoted replica.
 * Batches to a standalone server mix slots (cheaper) until it answers
 * CROSSSLOT (a Cluster proxy); from then on they are cut per slot.
 */
#include "sync/redis_internal.h"

/* Where to look for the Cluster when the URL's node is gone: the nodes a
 * map named that the config allows (replicas it does not name are not
 * an attack: skipped quietly).
 */
static void seed_add(struct sl_redis *r, const char *host, int port)
{
	unsigned i;

	if (port == r->port && !strcmp(host, r->host))
		return;	/* the URL's: always tried first */
	for (i = 0; i < r->nr_allowed && !redis_addr_eq(&r->allowed[i], host, port);
	     i++)
		;
	if (i == r->nr_allowed)
		return;
	for (i = 0; i < r->nr_seeds; i++)
		if (redis_addr_eq(&r->seeds[i], host, port))
			return;
	if (r->nr_seeds == SL_REDIS_MAX_SEEDS)
		return;
	snprintf(r->seeds[r->nr_seeds].host, sizeof(r->seeds[0].host), "%s",
		 host);
	r->seeds[r->nr_seeds++].port = port;
}

/* One "host, port, id" of a CLUSTER SLOTS range into a; an empty host
 * is the server that answered.
 */
static bool slots_addr(const redisReply *e, const char *asked,
		       struct redis_addr *a)
{
	if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
	    e->element[0]->type != REDIS_REPLY_STRING ||
	    e->element[1]->type != REDIS_REPLY_INTEGER ||
	    e->element[1]->integer <= 0 || e->element[1]->integer > 65535 ||
	    e->element[0]->len >= sizeof(a->host))
		return false;
	snprintf(a->host, sizeof(a->host), "%s",
		 e->element[0]->len ? e->element[0]->str : asked);
	a->port = e->element[1]->integer;
	return true;
}

/* A map being read: its masters so far, and who serves each slot. */
struct fresh_map {
	struct redis_node nodes[SL_REDIS_MAX_NODES];
	unsigned nr;
	uint8_t slot_node[16384];
};

/* One range of a CLUSTER SLOTS answer into m: its master, its slots, and
 * every node it names as a seed. 0, or -1 with the reason in r->why.
 */
static int map_range(struct sl_redis *r, struct fresh_map *m,
		     const redisReply *e, const char *asked)
{
	struct redis_addr a;
	long long lo, hi, s;
	unsigned i;
	size_t k;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
	    e->element[0]->type != REDIS_REPLY_INTEGER ||
	    e->element[1]->type != REDIS_REPLY_INTEGER ||
	    !slots_addr(e->element[2], asked, &a)) {
		snprintf(r->why, sizeof(r->why),
			 "CLUSTER SLOTS: a range of an unexpected form");
		return -1;
	}
	lo = e->element[0]->integer;
	hi = e->element[1]->integer;
	if (lo < 0 || hi > 16383 || lo > hi) {
		snprintf(r->why, sizeof(r->why),
			 "CLUSTER SLOTS: range %lld-%lld", lo, hi);
		return -1;
	}
	for (i = 0; i < m->nr && !redis_addr_eq(&m->nodes[i].a, a.host, a.port); i++)
		;
	if (i == m->nr && !redis_node_allowed(r, a.host, a.port,
					     "CLUSTER SLOTS"))
		return -1;
	if (i == m->nr) {
		if (m->nr == SL_REDIS_MAX_NODES) {
			snprintf(r->why, sizeof(r->why),
				 "CLUSTER SLOTS: more than %d masters",
				 SL_REDIS_MAX_NODES);
			return -1;
		}
		m->nodes[m->nr++].a = a;
	}
	for (s = lo; s <= hi; s++)
		m->slot_node[s] = i;
	seed_add(r, a.host, a.port);
	for (k = 3; k < e->elements; k++)
		if (slots_addr(e->element[k], asked, &a))
			seed_add(r, a.host, a.port);
	return 0;
}

/* The map read becomes the Cluster's: connections that still lead to a
 * master are kept (`c`, the server asked, among them if it is one), the
 * others closed.
 */
static void map_install(struct sl_redis *r, struct fresh_map *m,
			redisContext *c, const char *asked, int asked_port)
{
	unsigned i, k;

	for (i = 0; i < m->nr; i++) {
		for (k = 0; k < r->nr_nodes; k++)
			if (r->nodes[k].c &&
			    redis_addr_eq(&r->nodes[k].a, m->nodes[i].a.host,
				    m->nodes[i].a.port)) {
				m->nodes[i].c = r->nodes[k].c;
				r->nodes[k].c = NULL;
				break;
			}
		if (!m->nodes[i].c &&
		    redis_addr_eq(&m->nodes[i].a, asked, asked_port)) {
			m->nodes[i].c = c;
			c = NULL;
		}
	}
	for (k = 0; k < r->nr_nodes; k++)
		if (r->nodes[k].c)
			redisFree(r->nodes[k].c);
	memcpy(r->nodes, m->nodes, sizeof(m->nodes));
	r->nr_nodes = m->nr;
	memcpy(r->slot_node, m->slot_node, sizeof(r->slot_node));
	r->cluster = true;
	r->per_slot = true;	/* a script's keys must share a slot */
	r->map_stale = false;
	r->c = NULL;
	if (c)
		redisFree(c);
}

/* Ask `c` (a server at `asked`) for the slot map. 1: a Cluster, whose
 * masters and slots are now r->nodes and r->slot_node (connections to
 * masters kept from before, and `c` itself if it is one, carried over);
 * 0: a standalone server (c is left alone); -1: no usable answer (why).
 * `c` is taken over on 1.
 */
int redis_read_map(struct sl_redis *r, redisContext *c, const char *asked,
		   int asked_port)
{
	struct fresh_map *m = NULL;
	redisReply *x;
	size_t j;
	int ret = -1;

	/* a standalone server says "cluster support disabled"; a proxy may
	 * say anything: whatever is not a map is a server of every slot
	 */
	x = sl_redis_commandl(c, &r->lim, "CLUSTER", "SLOTS", NULL);
	if (x && x->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(x);
		return 0;
	}
	if (!x || x->type != REDIS_REPLY_ARRAY || !x->elements) {
		snprintf(r->why, sizeof(r->why), "CLUSTER SLOTS at %s:%d: %s",
			 asked, asked_port, !x ? (c->err ? c->errstr : "no reply") :
			 x->type == REDIS_REPLY_ERROR ? x->str : "no slots");
		goto out;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(r->why, sizeof(r->why), "out of memory");
		goto out;
	}
	memset(m->slot_node, 0xff, sizeof(m->slot_node));
	for (j = 0; j < x->elements; j++)
		if (map_range(r, m, x->element[j], asked))
			goto out;
	map_install(r, m, c, asked, asked_port);
	ret = 1;
out:
	free(m);
	freeReplyObject(x);
	return ret;
}

/* The connection of node i, opened (and the scripts loaded) at first
 * use, as r->c. 0, or -EIO with the reason in r->why.
 */
int redis_use_node(struct sl_redis *r, unsigned i)
{
	struct redis_node *n = &r->nodes[i];

	if (!n->c) {
		n->c = redis_open_ctx(r, n->a.host, n->a.port);
		if (!n->c) {
			r->c = NULL;
			return -EIO;
		}
		r->c = n->c;
		if (redis_load_scripts(r)) {
			if (r->c->err)
				snprintf(r->why, sizeof(r->why), "%s",
					 r->c->errstr);
			redisFree(n->c);
			n->c = NULL;
			r->c = NULL;
			return -EIO;
		}
	}
	r->c = n->c;
	return 0;
}

/* r->c for a command on keys of `slot`. */
int redis_use_slot(struct sl_redis *r, uint16_t slot)
{
	if (!r->cluster)
		return redis_use_node(r, 0);
	if (r->slot_node[slot] >= r->nr_nodes) {
		snprintf(r->why, sizeof(r->why),
			 "Cluster slot %u is served by no master", slot);
		r->c = NULL;
		return -EIO;
	}
	return redis_use_node(r, r->slot_node[slot]);
}

/* After a MOVED: the map read again from a master still connected (the
 * one the index lives on). An error is an outage.
 */
int redis_refresh_map(struct sl_redis *r)
{
	struct redis_node *n;

	if (redis_use_slot(r, redis_index_slot()))
		return -EIO;
	n = &r->nodes[r->slot_node[redis_index_slot()]];
	/* redis_read_map takes the connection over: detach it from its node */
	{
		redisContext *c = n->c;
		char host[sizeof(n->a.host)];
		int port = n->a.port;

		snprintf(host, sizeof(host), "%s", n->a.host);
		n->c = NULL;
		if (redis_read_map(r, c, host, port) != 1) {
			redisFree(c);
			return -EIO;
		}
	}
	return 0;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": the node it names. */
int redis_redirect_node(struct sl_redis *r, const redisReply *x)
{
	char host[256];
	const char *sp, *colon = NULL, *p;
	unsigned long port;
	unsigned i;
	size_t len;

	sp = memchr(x->str, ' ', x->len);
	sp = sp ? memchr(sp + 1, ' ', x->len - (sp + 1 - x->str)) : NULL;
	if (!sp)
		return -1;
	sp++;
	for (p = sp; p < x->str + x->len; p++)
		if (*p == ':')
			colon = p;	/* the last: an IPv6 host has more */
	if (!colon || colon == sp || (size_t)(colon - sp) >= sizeof(host))
		return -1;
	len = colon - sp;
	memcpy(host, sp, len);
	host[len] = 0;
	port = strtoul(colon + 1, NULL, 10);
	if (!port || port > 65535)
		return -1;
	for (i = 0; i < r->nr_nodes; i++)
		if (redis_addr_eq(&r->nodes[i].a, host, port))
			return i;
	if (!redis_node_allowed(r, host, port, "a redirect"))
		return -1;
	if (r->nr_nodes == SL_REDIS_MAX_NODES)
		return -1;
	memset(&r->nodes[i], 0, sizeof(r->nodes[i]));
	snprintf(r->nodes[i].a.host, sizeof(r->nodes[i].a.host), "%s", host);
	r->nodes[i].a.port = port;
	seed_add(r, host, port);
	r->nr_nodes++;
	return i;
}

/* Connect: the URL's server, or if it is gone (a Cluster master that
 * failed over), each node the last map named, until one answers (for
 * about an interval; the next attempt starts from the URL again); a
 * Cluster's map is read there. The index's node is opened at once, so
 * a server that refuses the scripts is an outage now.
 */
int redis_connect(struct sl_redis *r, uint64_t now_ms)
{
	char first[sizeof(r->why)] = "";
	redisContext *c = NULL;
	const char *host = r->host;
	int port = r->port, ret = -1;
	unsigned i;

	uint64_t until = sl_now_mono_ms() + r->interval_ms;

	redis_drop_all(r);
	/* the seeds are tried for one interval at most (each connection
	 * waits half of one): the round stays bounded when many are gone
	 */
	for (i = 0; i <= r->nr_seeds && (!i || sl_now_mono_ms() < until); i++) {
		if (i) {
			host = r->seeds[i - 1].host;
			port = r->seeds[i - 1].port;
		}
		r->why[0] = 0;
		c = redis_open_ctx(r, host, port);
		if (c) {
			/* not configured as a Cluster: whatever the server
			 * says of slots, it serves them all
			 */
			ret = r->want_cluster ?
			      redis_read_map(r, c, host, port) : 0;
			if (ret >= 0)
				break;
			redisFree(c);
			c = NULL;
		}
		if (!first[0])
			snprintf(first, sizeof(first), "%s", r->why);
	}
	if (ret < 0) {
		const char *why = first[0] ? first : r->why;

		redis_went_down(r, now_ms, strncmp(why, "AUTH", 4) ?
				"unreachable" : "refused the login", why);
		return -EIO;
	}
	if (!ret) {
		/* standalone: the server that answered serves every slot */
		r->cluster = false;
		snprintf(r->nodes[0].a.host, sizeof(r->nodes[0].a.host), "%s",
			 host);
		r->nodes[0].a.port = port;
		r->nodes[0].c = c;
		r->nr_nodes = 1;
		r->c = c;
		if (redis_load_scripts(r)) {
			redis_went_down(r, now_ms, "unreachable", r->c->err ?
					r->c->errstr : r->why);
			return -EIO;
		}
	} else if (redis_use_slot(r, redis_index_slot())) {
		redis_went_down(r, now_ms, "unreachable", r->why);
		return -EIO;
	}
	r->up = true;
	r->store.up = true;
	if (r->ever_up)
		r->store.reconnects++;
	if (r->down_logged)
		pr_notice("sync: redis at %s reachable again%s", r->where,
			  r->cluster ? " (Cluster)" : "");
	else
		pr_info("sync: redis at %s connected%s", r->where,
			r->cluster ? " (Cluster)" : "");
	r->ever_up = true;
	r->down_logged = false;
	r->backoff_ms = 0;
	return 0;
}
