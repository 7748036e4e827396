// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "service/check_local.h"
#include "state/client_exempt.h"
#include "util/clock.h"
#include "rules/rules.h"
#include "sl_key.h"

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
		err = sl_checker_refresh_rules(c, false);
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
/* The key the kernel counts `req`'s address under for rule `r`: the
 * address as it is for a raw key, masked and ported as a packet's.
 */
static void check_client_key(struct sl_client_key *ckey,
			     const struct sl_rule *r,
			     const struct sl_check_req *req, bool raw)
{
	if (raw) {
		memset(ckey, 0, sizeof(*ckey));
		ckey->addr = req->addr;
		ckey->rule_id = r->id;
		ckey->dport = 0;
	} else {
		sl_client_key_make(ckey, r, &req->addr, 0);
	}
}

/* The check program run once for a counting check, under the client's
 * lock: 1 when its reply gave the whole answer, 0 when the view is still
 * to be read from the maps, 2 when the rules changed under it.
 */
static int run_check_program(struct sl_checker *c,
			     const struct rule_snapshot *s,
			     struct sl_check_msg *msg, __u32 cost,
			     struct sl_check_result *out)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = msg,
		    .data_size_in = sizeof(*msg), .data_out = msg,
		    .data_size_out = sizeof(*msg));
	struct sl_check_req *req = &msg->req;

	req->units = cost;
	req->position = s->position;
	req->rules_epoch = s->epoch;
	req->rule_id = s->rule.id;
	if (bpf_prog_test_run_opts(c->prog_fd, &opts))
		return -errno;
	if (opts.retval == XDP_ABORTED) {
		forget_epoch(c);
		return 2;
	}
	out->allowed = opts.retval == XDP_PASS;
	return opts.data_size_out == sizeof(*msg) &&
	       !view_from_reply(&msg->reply, &s->rule, cost, &out->view);
}

/* One try of sl_check_kernel under the rule set snapshot `s`: 0 or
 * -errno, or 1 when the rules changed under it and it is to be tried again.
 */
static int check_under(struct sl_checker *c, struct rule_snapshot *s,
		       const char *key, __u32 cost,
		       struct sl_check_result *out)
{
	struct sl_check_msg msg;
	struct sl_check_req *req = &msg.req;
	struct sl_client_key ckey;
	pthread_mutex_t *lock;
	bool raw;
	int err;

	memset(&msg, 0, sizeof(msg));
	req->magic = SL_CHECK_MAGIC;
	sl_check_key_addr(key, s->rule.api_key_is_address, &req->addr, &raw);
	req->flags = raw ? SL_CHECK_RAW_KEY : 0;
	/* the program counts nothing for an address the rule exempts, and
	 * says so in its reply; a lookup asks the map: say so, not the
	 * count of its prefix
	 */
	if (!cost && !raw && s->rule.nr_exempt &&
	    sl_client_exempt(c->maps, &s->cfg, s->position, &req->addr, 128)) {
		sl_client_view_exempt(&s->rule, &out->view);
		out->allowed = true;
		return 0;
	}
	check_client_key(&ckey, &s->rule, req, raw);
	lock = client_lock(c, &ckey);
	pthread_mutex_lock(lock);
	if (cost) {
		err = run_check_program(c, s, &msg, cost, out);
		if (err) {
			pthread_mutex_unlock(lock);
			return err == 1 ? 0 : err == 2 ? 1 : err;
		}
	}
	/* bounded: the share round moves every sync round (the engine
	 * writes it as it sends and as it settles); the answer is of the
	 * round the kernel decided in, read after it
	 */
	if (s->syncs && s->sync.layout == SL_LAYOUT_BOUNDED)
		s->syncs = sl_client_view_sync_conf(c->maps, &s->sync);
	err = sl_client_view_compute(c->maps, &s->rule, &ckey,
				     sl_now_tai_ms(),
				     s->syncs ? &s->sync : NULL,
				     cost ? cost : 1, &out->view);
	pthread_mutex_unlock(lock);
	if (!cost)
		out->allowed = out->view.remaining > 0;
	return err;
}

int sl_check_kernel(struct sl_checker *c, const char *rule,
		    const char *key, __u32 cost,
		    struct sl_check_result *out)
{
	struct rule_snapshot s;
	unsigned tries;
	int err;

	if (!key || !*key)
		return -EINVAL;
	/* a rule set switched between the snapshot and the program's run
	 * is met again under the new one
	 */
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
		err = check_under(c, &s, key, cost, out);
		if (err != 1)
			return err;
	}
	return -EAGAIN;
}
