// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The prefix tables of one generation (rules/prefix_tables.h). Each entry
 * holds every rule whose prefix contains the entry's, so that the longest
 * match alone is complete.
 */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include "util/parse.h"
#include "rules/bitmap.h"
#include "rules/map_delete.h"
#include "rules/prefix_tables.h"

static bool lpm_key_of_gen(const void *key, const void *gen)
{
	return ((const struct sl_lpm_key *)key)->gen == *(const __u32 *)gen;
}

static int clear_lpm_gen(int fd, __u32 gen)
{
	return sl_map_delete_where(fd, sizeof(struct sl_lpm_key),
				   lpm_key_of_gen, &gen, NULL);
}

static int put_lpm(int fd, __u32 gen, const struct sl_addr *addr,
		   unsigned len, const struct sl_bitmap *bm)
{
	struct sl_lpm_key key = { .prefixlen = 8 + len, .gen = gen };

	memcpy(key.addr, addr->byte, 16);
	return bpf_map_update_elem(fd, &key, bm, 0) ? -errno : 0;
}

/* For every distinct prefix P that some rule matches on: the rules whose
 * prefix contains P, plus the rules with no prefix; and the root entry
 * with the rules with no prefix. The longest match is then complete.
 */
static int write_match_lpm(int fd, __u32 gen, const struct sl_rule *rules,
			   unsigned nr, bool dst, bool *used)
{
	struct sl_bitmap any = {};
	struct sl_addr zero = {};
	unsigned i, j;
	int err;

	*used = false;
	for (i = 0; i < nr; i++) {
		if (!(dst ? rules[i].dst_prefixlen : rules[i].src_prefixlen))
			sl_bitmap_set(&any, i);
		else
			*used = true;
	}
	if (!*used)
		return 0;
	err = put_lpm(fd, gen, &zero, 0, &any);
	for (i = 0; i < nr && !err; i++) {
		const struct sl_addr *p = dst ? &rules[i].dst : &rules[i].src;
		unsigned plen = dst ? rules[i].dst_prefixlen : rules[i].src_prefixlen;
		struct sl_bitmap bm = any;

		if (!plen)
			continue;
		for (j = 0; j < nr; j++) {
			const struct sl_addr *q = dst ? &rules[j].dst : &rules[j].src;
			unsigned qlen = dst ? rules[j].dst_prefixlen :
					      rules[j].src_prefixlen;

			if (qlen && sl_prefix_contains(q, qlen, p, plen))
				sl_bitmap_set(&bm, j);
		}
		err = put_lpm(fd, gen, p, plen, &bm);
	}
	return err;
}

static int write_exempt_lpm(int fd, __u32 gen, const struct sl_ruleset *rs,
			    bool *used)
{
	unsigned i, j, k, l;
	int err = 0;

	*used = false;
	for (i = 0; i < rs->nr && !err; i++) {
		for (k = 0; k < rs->specs[i].nr_exempt && !err; k++) {
			const struct sl_prefix *p = &rs->specs[i].exempt[k];
			struct sl_bitmap bm = {};

			*used = true;
			for (j = 0; j < rs->nr; j++)
				for (l = 0; l < rs->specs[j].nr_exempt; l++) {
					const struct sl_prefix *q =
						&rs->specs[j].exempt[l];

					if (sl_prefix_contains(&q->addr, q->len,
							       &p->addr, p->len))
						sl_bitmap_set(&bm, j);
				}
			err = put_lpm(fd, gen, &p->addr, p->len, &bm);
		}
	}
	return err;
}

int sl_prefix_tables_write(const struct sl_maps *m, __u32 gen,
			   const struct sl_rule *rules,
			   const struct sl_ruleset *rs, struct sl_config *cfg)
{
	bool used = false;
	int err;

	err = clear_lpm_gen(m->src_rules, gen);
	if (!err)
		err = write_match_lpm(m->src_rules, gen, rules, rs->nr, false,
				      &used);
	cfg->has_src = used;
	if (!err)
		err = clear_lpm_gen(m->dst_rules, gen);
	if (!err)
		err = write_match_lpm(m->dst_rules, gen, rules, rs->nr, true,
				      &used);
	cfg->has_dst = used;
	if (!err)
		err = clear_lpm_gen(m->exempt_rules, gen);
	if (!err)
		err = write_exempt_lpm(m->exempt_rules, gen, rs, &used);
	cfg->has_exempt = used;
	return err;
}
