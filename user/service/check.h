/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Counting one request of some units for a key under a named rule, for the
 * HTTP API, and who decides it: this node's kernel (service/check_local.c,
 * the same code on the same client state as packets) or, with a central
 * store attached (sync layout central, service/check_central.h), the store
 * for the fleet; when the store cannot answer, the kernel decides on this
 * node's own count (fail open, NFR-3). A key that is an IP address is that
 * client under a rule with api_key_is_address; any other string, and an
 * address under any other rule, is hashed into an address no packet can
 * carry (the discard prefix 100::/64).
 */
#ifndef SL_SERVICE_CHECK_H
#define SL_SERVICE_CHECK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "service/check_central.h"
#include "state/client_view.h"
#include "instance/instance_maps.h"

/* Client locks: a power of two, enough that checks of different clients
 * on as many threads as CPUs seldom share one.
 */
#define SL_CHECK_CLIENT_LOCKS	256

struct sl_checker {
	int prog_fd;			/* sl_check */
	const struct sl_maps *maps;
	pthread_mutex_t rules_lock;	/* the rules, config and layout below */
	struct sl_rule *rules;		/* the live rules, as of `epoch` */
	unsigned nr_rules;
	__u32 epoch;
	bool epoch_known;
	struct sl_config cfg;		/* of `epoch`: generation, exempt */
	struct sl_sync_conf sync;	/* the layout, when `syncs` */
	bool syncs;
	atomic_bool sync_stale;		/* read the layout again */
	/* one check of a client at a time: see check_local.c */
	pthread_mutex_t client_lock[SL_CHECK_CLIENT_LOCKS];
	struct sl_central *central;	/* NULL: every check in the kernel */
};

/* Who decided a check. */
enum sl_check_decision {
	SL_DECIDED_KERNEL = 0,	/* this node's kernel program (no central store) */
	SL_DECIDED_CENTRAL,	/* the central store, for the fleet */
	SL_DECIDED_LOCAL,	/* the store could not answer: this node's
				 * kernel on its own count (fail open) */
	SL_DECIDED_EXEMPT,	/* the rule exempts the address: not counted */
	SL_DECIDED__COUNT,
};

struct sl_check_result {
	bool allowed;
	enum sl_check_decision decision;
	struct sl_rule rule;		/* the rule that answered */
	struct sl_client_view view;	/* right after the check */
};

int sl_checker_init(struct sl_checker *c, int prog_fd,
		    const struct sl_maps *maps);
void sl_checker_fini(struct sl_checker *c);
/* The instance's sync layout was written (the sync service started or
 * stopped): the next check reads it again. Checks keep the layout
 * otherwise; under bounded each reads the share round again, which moves
 * every sync round.
 */
void sl_checker_sync_changed(struct sl_checker *c);
/* Decide checks in the central store from now on (owned by the caller). */
void sl_checker_set_central(struct sl_checker *c, struct sl_central *central);

/* "kernel", "central", "local", "exempt" */
const char *sl_check_decision_name(enum sl_check_decision d);

/* cost: N >= 1 charges a request of N units (POST /v1/check), which fits
 * whole or is refused whole, and the view's retry is until N units fit;
 * 0 only reads (GET /v1/clients/KEY). -ENOENT: no rule of that name;
 * -EINVAL: empty key; -ERANGE: a cost over the rule's limit (it could
 * never fit); -EOPNOTSUPP: a cost over 1 under sliding-log, which counts
 * requests. Nothing is charged on an error.
 */
int sl_check(struct sl_checker *c, const char *rule, const char *key,
	     __u32 cost, struct sl_check_result *out);

/* 0 if a cost of COST can be charged under RULE; -ERANGE or -EOPNOTSUPP
 * as sl_check says.
 */
int sl_check_cost_fits_rule(const struct sl_rule *rule, __u32 cost);

/* The client key a check uses: an address KEY is that address when
 * ADDRESS_KEYS (the rule's api_key_is_address); any other key, and an
 * address under a rule without it, is hashed into 100::/64 (*raw true),
 * a key space no packet's source reaches.
 */
void sl_check_key_addr(const char *key, bool address_keys,
		       struct sl_addr *addr, bool *raw);

/* The client's id in the central store: "k:KEY" for a key that is not an
 * address, "ip:ADDR" or "ip:ADDR/BITS" for one (masked to the rule's
 * prefix, so one id is the client the kernel counts). Its length, or
 * -ENAMETOOLONG.
 */
int sl_check_central_id(const char *key, const struct sl_rule *rule,
			char *buf, size_t size);

#endif /* SL_SERVICE_CHECK_H */
