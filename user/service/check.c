// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include "service/check.h"
#include "service/check_local.h"
#include "state/client_exempt.h"
#include "util/parse.h"
#include "rules/rules.h"
#include "sl_key.h"

int sl_checker_init(struct sl_checker *c, int prog_fd,
		    const struct sl_maps *maps)
{
	unsigned i;
	int err;

	memset(c, 0, sizeof(*c));
	if (sodium_init() < 0)
		return -EIO;
	c->prog_fd = prog_fd;
	c->maps = maps;
	atomic_init(&c->sync_stale, true);
	err = -pthread_mutex_init(&c->rules_lock, NULL);
	for (i = 0; !err && i < SL_CHECK_CLIENT_LOCKS; i++) {
		err = -pthread_mutex_init(&c->client_lock[i], NULL);
		if (err) {
			while (i--)
				pthread_mutex_destroy(&c->client_lock[i]);
			pthread_mutex_destroy(&c->rules_lock);
		}
	}
	return err;
}

void sl_checker_fini(struct sl_checker *c)
{
	unsigned i;

	free(c->rules);
	c->rules = NULL;
	for (i = 0; i < SL_CHECK_CLIENT_LOCKS; i++)
		pthread_mutex_destroy(&c->client_lock[i]);
	pthread_mutex_destroy(&c->rules_lock);
}

void sl_checker_sync_changed(struct sl_checker *c)
{
	atomic_store(&c->sync_stale, true);
}

void sl_check_key_addr(const char *key, bool address_keys,
		       struct sl_addr *addr, bool *raw)
{
	/* an address is the packets' client only where the rule says so:
	 * else anyone who may ask could spend a host's packet quota
	 */
	*raw = !address_keys || sl_parse_addr(key, addr) != 0;
	if (!*raw)
		return;
	/* 100::/64 is discard-only (RFC 6666): no packet's source */
	memset(addr, 0, sizeof(*addr));
	addr->byte[0] = 0x01;
	crypto_generichash(&addr->byte[8], 8, (const unsigned char *)key,
			   strlen(key), NULL, 0);
}

/* Read the rules once, and again only when the kernel says the epoch has
 * moved (sl_check answers XDP_ABORTED): a check costs two syscalls, not
 * four. ASK: look at the epoch first (no kernel program tells). The layout
 * is read with them, and when the service says it wrote it. Under
 * rules_lock.
 */
int sl_checker_refresh_rules(struct sl_checker *c, bool ask)
{
	struct sl_config cfg;
	struct sl_rule *rules;
	unsigned nr;
	int err;

	if (atomic_exchange(&c->sync_stale, false))
		c->syncs = sl_client_view_sync_conf(c->maps, &c->sync);
	if (c->epoch_known && !ask)
		return 0;
	err = sl_rules_reread(c->maps, !c->epoch_known, &c->epoch, &rules,
			      &nr, &cfg);
	if (err <= 0)
		return err;
	free(c->rules);
	c->rules = rules;
	c->nr_rules = nr;
	c->cfg = cfg;
	c->epoch_known = true;
	c->syncs = sl_client_view_sync_conf(c->maps, &c->sync);
	return 0;
}

void sl_checker_set_central(struct sl_checker *c, struct sl_central *central)
{
	c->central = central;
}

const char *sl_check_decision_name(enum sl_check_decision d)
{
	static const char *const names[SL_DECIDED__COUNT] = {
		[SL_DECIDED_KERNEL] = "kernel",
		[SL_DECIDED_CENTRAL] = "central",
		[SL_DECIDED_LOCAL] = "local",
		[SL_DECIDED_EXEMPT] = "exempt",
	};

	return d < SL_DECIDED__COUNT ? names[d] : "unknown";
}

int sl_check_central_id(const char *key, const struct sl_rule *rule,
			char *buf, size_t size)
{
	struct sl_client_key ckey;
	struct sl_addr addr;
	char text[INET6_ADDRSTRLEN];
	unsigned bits, full;
	bool raw;
	int n;

	sl_check_key_addr(key, rule->api_key_is_address, &addr, &raw);
	if (raw) {
		n = snprintf(buf, size, "k:%s", key);
	} else {
		sl_client_key_make(&ckey, rule, &addr, 0);
		if (sl_addr_is_ipv4(&ckey.addr)) {
			inet_ntop(AF_INET, &ckey.addr.byte[12], text, sizeof(text));
			bits = rule->key_ipv4_prefix;
			full = 32;
		} else {
			inet_ntop(AF_INET6, ckey.addr.byte, text, sizeof(text));
			bits = rule->key_ipv6_prefix;
			full = 128;
		}
		n = bits < full ? snprintf(buf, size, "ip:%s/%u", text, bits) :
				  snprintf(buf, size, "ip:%s", text);
	}
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : n;
}

/* The named rule as it runs now. No kernel program runs to say that the
 * rules changed, so the epoch is read every time (one lookup).
 */
static int live_rule(struct sl_checker *c, const char *name,
		     struct sl_rule *rule, unsigned *pos)
{
	unsigned i, tries;
	int err;

	for (tries = 0; tries < 2; tries++) {
		err = sl_checker_refresh_rules(c, tries == 0);
		if (err)
			return err;
		for (i = 0; i < c->nr_rules; i++)
			if (!strcmp(c->rules[i].name, name)) {
				*rule = c->rules[i];
				*pos = i;
				return 0;
			}
		c->epoch_known = false;	/* perhaps added since */
	}
	return -ENOENT;
}

/* The store decides; no checker lock is held meanwhile, so checks of a
 * node wait for each other only on the store's connection.
 */
static int check_in_store(struct sl_checker *c, const char *name,
			  const char *key, __u32 cost,
			  struct sl_check_result *out)
{
	char id[8 + 256 + INET6_ADDRSTRLEN];
	struct sl_addr addr;
	unsigned pos;
	bool raw;
	int err, n;

	if (!key || !*key)
		return -EINVAL;
	pthread_mutex_lock(&c->rules_lock);
	err = live_rule(c, name, &out->rule, &pos);
	sl_check_key_addr(key, !err && out->rule.api_key_is_address, &addr,
			  &raw);
	if (!err && !raw && out->rule.nr_exempt &&
	    sl_client_exempt(c->maps, &c->cfg, pos, &addr, 128)) {
		/* the kernel counts nothing for it either */
		sl_client_view_exempt(&out->rule, &out->view);
		out->allowed = true;
		out->decision = SL_DECIDED_EXEMPT;
		pthread_mutex_unlock(&c->rules_lock);
		return 0;
	}
	pthread_mutex_unlock(&c->rules_lock);
	if (err)
		return err;
	err = sl_check_cost_fits_rule(&out->rule, cost);
	if (err)
		return err;
	n = sl_check_central_id(key, &out->rule, id, sizeof(id));
	if (n < 0)
		return n;
	err = sl_central_check(c->central, &out->rule, id, n, cost,
			       &out->allowed, &out->view);
	if (!err)
		out->decision = SL_DECIDED_CENTRAL;
	return err;
}

int sl_check_cost_fits_rule(const struct sl_rule *rule, __u32 cost)
{
	/* more than the limit never fits: a permanent 429 would hide the
	 * caller's mistake
	 */
	if (cost > sl_rule_quota(rule))
		return -ERANGE;
	/* the log keeps one entry per accept, whatever its units */
	if (cost > 1 && rule->algorithm == SL_ALGO_SLIDING_LOG)
		return -EOPNOTSUPP;
	return 0;
}

int sl_check(struct sl_checker *c, const char *rule, const char *key,
	     __u32 cost, struct sl_check_result *out)
{
	int err;

	out->view.exempt = false;
	if (c->central) {
		err = check_in_store(c, rule, key, cost, out);
		if (err == 0 || err == -ENOENT || err == -EINVAL ||
		    err == -ERANGE || err == -EOPNOTSUPP)
			return err;
		/* the store could not answer: never reject for that
		 * (NFR-3); this node decides on its own count
		 */
		err = sl_check_kernel(c, rule, key, cost, out);
		out->decision = out->view.exempt ? SL_DECIDED_EXEMPT :
						   SL_DECIDED_LOCAL;
		return err;
	}
	err = sl_check_kernel(c, rule, key, cost, out);
	out->decision = out->view.exempt ? SL_DECIDED_EXEMPT : SL_DECIDED_KERNEL;
	return err;
}
