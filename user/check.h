/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Counting one request for a key under a named rule, for the HTTP API: the
 * request runs through the kernel's sl_check program (BPF_PROG_TEST_RUN),
 * so it is decided by the same code on the same client state as packets.
 * A key that is an IP address is that client; any other string is hashed
 * into an address no packet can carry (the discard prefix 100::/64).
 */
#ifndef SL_CHECK_H
#define SL_CHECK_H

#include <pthread.h>
#include <stdbool.h>
#include "client_view.h"
#include "maps.h"

struct sl_checker {
	int prog_fd;			/* sl_check */
	const struct sl_maps *maps;
	pthread_mutex_t lock;		/* one check at a time: see check.c */
	struct sl_rule *rules;		/* the live rules, as of `epoch` */
	unsigned nr_rules;
	__u32 epoch;
	bool epoch_known;
};

struct sl_check_result {
	bool allowed;
	struct sl_rule rule;		/* the rule that answered */
	struct sl_client_view view;	/* right after the check */
};

int sl_checker_init(struct sl_checker *c, int prog_fd,
		    const struct sl_maps *maps);
void sl_checker_fini(struct sl_checker *c);

/* count: true counts one request (POST /v1/check); false only reads
 * (GET /v1/clients/KEY). -ENOENT: no rule of that name; -EINVAL: empty key.
 */
int sl_check(struct sl_checker *c, const char *rule, const char *key,
	     bool count, struct sl_check_result *out);

/* The client key a check uses (exported for tests). */
void sl_check_key_addr(const char *key, struct sl_addr *addr, bool *raw);

#endif /* SL_CHECK_H */
