// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <linux/bpf.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "check.h"
#include "common.h"
#include "rules.h"
#include "sl_key.h"

int sl_checker_init(struct sl_checker *c, int prog_fd,
		    const struct sl_maps *maps)
{
	memset(c, 0, sizeof(*c));
	if (sodium_init() < 0)
		return -EIO;
	c->prog_fd = prog_fd;
	c->maps = maps;
	return -pthread_mutex_init(&c->lock, NULL);
}

void sl_checker_fini(struct sl_checker *c)
{
	free(c->rules);
	c->rules = NULL;
	pthread_mutex_destroy(&c->lock);
}

void sl_check_key_addr(const char *key, struct sl_addr *addr, bool *raw)
{
	*raw = sl_parse_addr(key, addr) != 0;
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
 * four.
 */
static int refresh_rules(struct sl_checker *c)
{
	struct sl_config cfg;
	struct sl_rule *rules;
	unsigned nr;
	int err;

	if (c->epoch_known)
		return 0;
	err = sl_rules_read_live(c->maps, &rules, &nr, &cfg);
	if (err)
		return err;
	free(c->rules);
	c->rules = rules;
	c->nr_rules = nr;
	c->epoch = cfg.rules_epoch;
	c->epoch_known = true;
	return 0;
}

/* Checks are serialised: two concurrent checks for a client's last unit
 * must not both pass, and the kernel's per-CPU design would let two
 * checks on two CPUs decide at the same instant. Packets on other CPUs
 * keep the kernel's own allowance of one unit per CPU.
 */
int sl_check(struct sl_checker *c, const char *rule, const char *key,
	     bool count, struct sl_check_result *out)
{
	struct sl_check_req req = { .magic = SL_CHECK_MAGIC };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = &req,
		    .data_size_in = sizeof(req));
	struct sl_client_key ckey;
	bool raw;
	unsigned i, tries;
	int err = -ENOENT;

	if (!key || !*key)
		return -EINVAL;
	sl_check_key_addr(key, &req.addr, &raw);
	req.flags = raw ? SL_CHECK_RAW_KEY : 0;

	pthread_mutex_lock(&c->lock);
	/* a read-only lookup runs no program to learn of a new rule set */
	if (!count)
		c->epoch_known = false;
	for (tries = 0; tries < 3; tries++) {
		err = refresh_rules(c);
		if (err)
			break;
		err = -ENOENT;
		for (i = 0; i < c->nr_rules; i++)
			if (!strcmp(c->rules[i].name, rule))
				break;
		if (i == c->nr_rules) {
			/* perhaps a rule added since we read them */
			if (tries == 0) {
				c->epoch_known = false;
				continue;
			}
			break;
		}
		out->rule = c->rules[i];
		req.position = i;
		req.rules_epoch = c->epoch;
		req.rule_id = c->rules[i].id;
		err = 0;
		if (!count) {
			out->allowed = true;
			break;
		}
		if (bpf_prog_test_run_opts(c->prog_fd, &opts)) {
			err = -errno;
			break;
		}
		if (opts.retval != XDP_ABORTED) {
			out->allowed = opts.retval == XDP_PASS;
			break;
		}
		c->epoch_known = false;	/* rules changed under us: again */
		err = -EAGAIN;
	}
	if (!err) {
		if (raw) {
			ckey.addr = req.addr;
			ckey.rule_id = out->rule.id;
			ckey.dport = 0;
		} else {
			sl_client_key_make(&ckey, &out->rule, &req.addr, 0);
		}
		err = sl_client_view_read(c->maps, &out->rule, &ckey,
					  sl_now_tai_ms(), &out->view);
		if (!count)
			out->allowed = out->view.remaining > 0;
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}
