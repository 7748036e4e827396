// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Redis backend of the sync engine (the promise: sync/redis.h): the
 * backend itself, its URL and login. Its jobs are in the files that
 * sync/redis_internal.h lists: the layout in the store (redis_keys.c),
 * a round (redis_round.c), expiry (redis_expiry.c), outages
 * (redis_link.c) and the Cluster (redis_cluster.c).
 */
#include "util/parse.h"
#include "sync/redis_internal.h"

int sl_redis_url_parse(const char *url, char *host, size_t host_size,
		       int *port_out)
{
	uint16_t port = 6379;
	const char *p;

	if (strncmp(url, "redis://", 8) ||
	    sl_parse_host_port(url + 8, host, host_size, &port, &p) ||
	    strchr(host, '@'))
		return -EINVAL;
	if (*p == '/')
		p++;
	if (*p)
		return -EINVAL;	/* no database, user or options: not used */
	*port_out = port;
	return 0;
}

static int parse_url(struct sl_redis *r, const char *url)
{
	if (sl_redis_url_parse(url, r->host, sizeof(r->host), &r->port))
		return -EINVAL;
	snprintf(r->where, sizeof(r->where), "%s%s%s:%d",
		 strchr(r->host, ':') ? "[" : "", r->host,
		 strchr(r->host, ':') ? "]" : "", r->port);
	return 0;
}

int sl_redis_set_auth(struct sl_redis *r, const char *user, const char *pass)
{
	free(r->user);
	free(r->pass);
	r->user = user && *user ? strdup(user) : NULL;
	r->pass = pass ? strdup(pass) : NULL;
	if ((user && *user && !r->user) || (pass && !r->pass))
		return -ENOMEM;
	return 0;
}

void sl_redis_set_cluster(struct sl_redis *r, bool on)
{
	r->want_cluster = on;
}

int sl_redis_allow_node(struct sl_redis *r, const char *host, int port)
{
	struct redis_addr *a;

	if (r->nr_allowed == SL_REDIS_MAX_SEEDS || strlen(host) >= sizeof(a->host))
		return -E2BIG;
	a = &r->allowed[r->nr_allowed++];
	snprintf(a->host, sizeof(a->host), "%s", host);
	a->port = port;
	return 0;
}

unsigned long long sl_redis_refused(const struct sl_redis *r)
{
	return r->refused;
}

void sl_redis_set_max_reply(struct sl_redis *r, size_t bytes)
{
	r->lim.max_reply = bytes;
}

struct sl_redis *sl_redis_new(const char *url, unsigned node,
			      unsigned interval_ms)
{
	struct sl_redis *r = calloc(1, sizeof(*r));

	if (!r) {
		pr_error("sync: out of memory");
		return NULL;
	}
	if (!url || parse_url(r, url)) {
		pr_error("sync.url: '%s' is not redis://HOST:PORT",
			 url ? url : "");
		free(r);
		return NULL;
	}
	r->node = node;
	r->ent.max = SL_REDIS_MAX_ENTRIES;
	r->spare.max = SL_REDIS_MAX_ENTRIES;
	r->interval_ms = interval_ms ? interval_ms : 1000;
	r->lim.timeout_ms = r->interval_ms / 2;
	if (r->lim.timeout_ms < SL_REDIS_TIMEOUT_MIN_MS)
		r->lim.timeout_ms = SL_REDIS_TIMEOUT_MIN_MS;
	r->lim.max_reply = SL_REDIS_MAX_REPLY_DEFAULT;
	return r;
}

void sl_redis_free(struct sl_redis *r)
{
	if (!r)
		return;
	redis_drop_all(r);
	if (r->pass)
		explicit_bzero(r->pass, strlen(r->pass));
	free(r->pass);
	free(r->user);
	free(r->ent.e);
	free(r->spare.e);
	free(r->push);
	free(r->learn);
	free(r->scores);
	free(r->totals);
	free(r->argv);
	free(r->argvlen);
	free(r->num);
	free(r);
}
