// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "service/check_local.h"
#include "core/client_exempt.h"
#include "core/parse.h"
#include "core/clock.h"
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
static int refresh_rules(struct sl_checker *c, bool ask)
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

/* What a check needs of the named rule, copied out under rules_lock:
 * the rule, its position and epoch, the layout. -ENOENT: no such rule
 * (read again once, for a rule added since).
 */
struct rule_snapshot {
	struct sl_rule rule;
	unsigned position;
	__u32 epoch;
	struct sl_sync_conf sync;
	bool syncs;
	struct sl_config cfg;	/* of `epoch`: which exempt table */
};

static int snapshot_rule(struct sl_checker *c, const char *name, bool ask,
			 struct rule_snapshot *s)
{
	unsigned i, tries;
	int err = -ENOENT;

	pthread_mutex_lock(&c->rules_lock);
	if (ask)
		c->epoch_known = false;
	for (tries = 0; tries < 2; tries++) {
		err = refresh_rules(c, false);
		if (err)
			break;
		err = -ENOENT;
		for (i = 0; i < c->nr_rules; i++)
			if (!strcmp(c->rules[i].name, name))
				break;
		if (i < c->nr_rules) {
			s->rule = c->rules[i];
			s->position = i;
			s->epoch = c->epoch;
			s->sync = c->sync;
			s->syncs = c->syncs;
			s->cfg = c->cfg;
			err = 0;
			break;
		}
		c->epoch_known = false;	/* perhaps a rule added since */
	}
	pthread_mutex_unlock(&c->rules_lock);
	return err;
}

static void forget_epoch(struct sl_checker *c)
{
	pthread_mutex_lock(&c->rules_lock);
	c->epoch_known = false;
	pthread_mutex_unlock(&c->rules_lock);
}

static pthread_mutex_t *client_lock(struct sl_checker *c,
				    const struct sl_client_key *k)
{
	const unsigned char *p = (const void *)k;
	__u64 h = 1469598103934665603ull;	/* FNV-1a */
	size_t i;

	for (i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return &c->client_lock[(h ^ (h >> 32)) & (SL_CHECK_CLIENT_LOCKS - 1)];
}

/* The view of a counting check from what sl_check copied after its
 * decision (struct sl_check_reply): 0, or -ENODATA when it copied no
 * state (sliding-log, a client on probation) and the maps must be read.
 */
static int view_from_reply(const struct sl_check_reply *r,
			   const struct sl_rule *rule, __u32 cost,
			   struct sl_client_view *v)
{
	static const struct sl_peer_view no_peers;

	if (r->has & SL_CHECK_HAS_EXEMPT) {
		sl_client_view_exempt(rule, v);
		return 0;
	}
	if (!(r->has & SL_CHECK_HAS_STATE))
		return -ENODATA;
	sl_client_view_of(rule, &r->state,
			  !(r->has & SL_CHECK_HAS_SYNC) ? NULL :
			  r->has & SL_CHECK_HAS_PEERS ? &r->peers : &no_peers,
			  r->has & SL_CHECK_HAS_SYNC ? &r->sync : NULL,
			  r->now_ms, cost, v);
	return 0;
}

/* Checks of one client are serialised: two concurrent checks for a
 * client's last unit must not both pass, and in the kernel two decisions
 * of one client's shared state taken at the same instant on two CPUs can
 * both take it (docs/ACCURACY.md, "Why no accept is lost to another
 * CPU"). Checks of other clients run at the
 * same time on other threads (BPF_PROG_TEST_RUN is the caller's own run);
 * packets on other CPUs keep the kernel's own allowance of one unit per
 * CPU beyond the first. A counting check is one bpf() call: the program
 * decides and copies the client's state after its decision into the
 * reply (bpf/check.h), and the view is computed from that copy; what it
 * cannot copy, and a read-only lookup, is read from the maps under the
 * same lock, so that it is the state right after this check.
 */
static int check_kernel(struct sl_checker *c, const char *rule,
			const char *key, __u32 cost,
			struct sl_check_result *out)
{
	struct sl_check_msg msg;
	struct sl_check_req *req = &msg.req;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = &msg,
		    .data_size_in = sizeof(msg), .data_out = &msg,
		    .data_size_out = sizeof(msg));
	struct sl_client_key ckey;
	struct rule_snapshot s;
	pthread_mutex_t *lock;
	unsigned tries;
	bool raw;
	int err = -EAGAIN;

	if (!key || !*key)
		return -EINVAL;

	for (tries = 0; tries < 3; tries++) {
		/* a read-only lookup runs no program to learn of a new
		 * rule set: it asks
		 */
		err = snapshot_rule(c, rule, !cost, &s);
		if (err)
			return err;
		out->rule = s.rule;
		err = sl_check_cost_fits_rule(&s.rule, cost);
		if (err)
			return err;
		memset(&msg, 0, sizeof(msg));
		req->magic = SL_CHECK_MAGIC;
		sl_check_key_addr(key, s.rule.api_key_is_address, &req->addr,
				  &raw);
		req->flags = raw ? SL_CHECK_RAW_KEY : 0;
		/* the program counts nothing for an address the rule
		 * exempts, and says so in its reply; a lookup asks the map:
		 * say so, not the count of its prefix
		 */
		if (!cost && !raw && s.rule.nr_exempt &&
		    sl_client_exempt(c->maps, &s.cfg, s.position, &req->addr,
				     128)) {
			sl_client_view_exempt(&s.rule, &out->view);
			out->allowed = true;
			return 0;
		}
		if (raw) {
			ckey.addr = req->addr;
			ckey.rule_id = s.rule.id;
			ckey.dport = 0;
		} else {
			sl_client_key_make(&ckey, &s.rule, &req->addr, 0);
		}
		lock = client_lock(c, &ckey);
		pthread_mutex_lock(lock);
		if (cost) {
			req->units = cost;
			req->position = s.position;
			req->rules_epoch = s.epoch;
			req->rule_id = s.rule.id;
			if (bpf_prog_test_run_opts(c->prog_fd, &opts)) {
				err = -errno;
				pthread_mutex_unlock(lock);
				return err;
			}
			if (opts.retval == XDP_ABORTED) {
				/* rules changed under us: again */
				pthread_mutex_unlock(lock);
				forget_epoch(c);
				err = -EAGAIN;
				continue;
			}
			out->allowed = opts.retval == XDP_PASS;
			if (opts.data_size_out == sizeof(msg) &&
			    !view_from_reply(&msg.reply, &s.rule, cost,
					     &out->view)) {
				pthread_mutex_unlock(lock);
				return 0;
			}
		}
		/* bounded: the share round moves every sync round (the
		 * engine writes it as it sends and as it settles); the answer
		 * is of the round the kernel decided in, read after it
		 */
		if (s.syncs && s.sync.layout == SL_LAYOUT_BOUNDED)
			s.syncs = sl_client_view_sync_conf(c->maps, &s.sync);
		err = sl_client_view_compute(c->maps, &s.rule, &ckey,
					     sl_now_tai_ms(),
					     s.syncs ? &s.sync : NULL,
					     cost ? cost : 1, &out->view);
		pthread_mutex_unlock(lock);
		if (!cost)
			out->allowed = out->view.remaining > 0;
		return err;
	}
	return err;
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
		err = refresh_rules(c, tries == 0);
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
static int check_central(struct sl_checker *c, const char *name,
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
		err = check_central(c, rule, key, cost, out);
		if (err == 0 || err == -ENOENT || err == -EINVAL ||
		    err == -ERANGE || err == -EOPNOTSUPP)
			return err;
		/* the store could not answer: never reject for that
		 * (NFR-3); this node decides on its own count
		 */
		err = check_kernel(c, rule, key, cost, out);
		out->decision = out->view.exempt ? SL_DECIDED_EXEMPT :
						   SL_DECIDED_LOCAL;
		return err;
	}
	err = check_kernel(c, rule, key, cost, out);
	out->decision = out->view.exempt ? SL_DECIDED_EXEMPT : SL_DECIDED_KERNEL;
	return err;
}
