// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Compiling a rule set into the kernel's tables (see SL_MAX_RULES in
 * include/slicelimit.h) and switching to it.
 *
 * Each table has two generations. An apply writes every table of the idle
 * generation, its config last, and then flips the single word sl_active: a
 * packet reads that word once and from then on sees one generation only,
 * never half old, half new.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "util/grow.h"
#include "instance/lists.h"
#include "util/parse.h"
#include "state/client_keys.h"
#include "instance/instance_maps.h"
#include "util/log.h"
#include "rules/rules.h"

static const char *const protocol_names[] = { "any", "tcp", "udp", "icmp" };
static const char *const unit_names[] = { "packets", "syn", "bytes" };
static const char *const action_names[] = { "drop", "shadow" };
static const char *const algorithm_names[] = {
	"sliding", "sliding-plain", "fixed", "token-bucket", "sliding-log",
	"sliding-counter",
};

#define NAME_OF(table, v) \
	sl_name_of(table, sizeof(table) / sizeof(table[0]), v)

const char *sl_protocol_name(unsigned v) { return NAME_OF(protocol_names, v); }
const char *sl_unit_name(unsigned v) { return NAME_OF(unit_names, v); }
const char *sl_action_name(unsigned v) { return NAME_OF(action_names, v); }
const char *sl_algorithm_name(unsigned v) { return NAME_OF(algorithm_names, v); }

static void bit_set(struct sl_bitmap *b, unsigned pos)
{
	b->word[pos / 64] |= 1ULL << (pos % 64);
}

static bool bitmap_empty(const struct sl_bitmap *b)
{
	unsigned w;

	for (w = 0; w < SL_RULE_WORDS; w++)
		if (b->word[w])
			return false;
	return true;
}

static int read_config(const struct sl_maps *m, struct sl_config *cfg,
		       __u32 *gen)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->active, &zero, gen))
		return -errno;
	*gen &= 1;
	if (bpf_map_lookup_elem(m->config, gen, cfg))
		return -errno;
	return 0;
}

int sl_rules_read_config(const struct sl_maps *m, struct sl_config *cfg)
{
	__u32 gen;

	return read_config(m, cfg, &gen);
}

int sl_rules_read_live(const struct sl_maps *m, struct sl_rule **rules,
		       unsigned *nr, struct sl_config *cfg)
{
	__u32 gen, i, key;
	struct sl_rule *out;
	int err;

	err = read_config(m, cfg, &gen);
	if (err)
		return err;
	if (cfg->nr_rules > SL_MAX_RULES)
		return -EUCLEAN;
	out = calloc(cfg->nr_rules ? cfg->nr_rules : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (i = 0; i < cfg->nr_rules; i++) {
		key = gen * SL_MAX_RULES + i;
		if (bpf_map_lookup_elem(m->rules, &key, &out[i])) {
			free(out);
			return -errno;
		}
	}
	*rules = out;
	*nr = cfg->nr_rules;
	return 0;
}

bool sl_rule_rekeys(const struct sl_rule *next, const struct sl_rule *live)
{
	return next->key_ipv4_prefix != live->key_ipv4_prefix ||
	       next->key_ipv6_prefix != live->key_ipv6_prefix ||
	       next->key_by_port != live->key_by_port;
}

/* The client states an apply forgets: every state of a removed rule, and
 * of a kept rule whose client key changed shape, the states keyed the old
 * way (sl_client_key_survives: never read again, or read as another
 * client's). Those go in two passes around the switch: before it, every
 * state keyed the old way; after it, what the old rule keyed meanwhile
 * that the new one cannot reach (a key it can reach may be a new
 * client's own by then).
 */
struct forget_set {
	struct sl_bitmap removed;
	struct sl_bitmap rekeyed;
	struct sl_rule next[SL_MAX_RULES];	/* by id, when rekeyed */
	struct sl_rule live[SL_MAX_RULES];
	bool switched;		/* the new rules run: the second pass */
};

static bool bit_of(const struct sl_bitmap *b, __u32 id)
{
	return (b->word[id / 64] >> (id % 64)) & 1;
}

static void forget_rekeyed(struct forget_set *fs, const struct sl_rule *next,
			   const struct sl_rule *live)
{
	__u32 id = live->id % SL_MAX_RULES;

	bit_set(&fs->rekeyed, id);
	fs->next[id] = *next;
	fs->live[id] = *live;
}

static bool client_forgotten(const void *key, const void *arg)
{
	const struct sl_client_key *k = key;
	const struct forget_set *fs = arg;
	__u32 id = k->rule_id % SL_MAX_RULES;

	if (bit_of(&fs->removed, id))
		return fs->switched;
	if (!bit_of(&fs->rekeyed, id) ||
	    sl_client_key_survives(&fs->next[id], &fs->live[id], k))
		return false;
	return !fs->switched || !sl_client_key_reachable(&fs->next[id], k);
}

/* Keep the id of every rule whose name (and algorithm) is still there;
 * give new rules ids
 * that no live rule holds, so no new rule inherits live client state.
 * Returns the ids of removed rules in `removed` (a bitmap), and in FS the
 * kept rules whose client key changes shape.
 */
static int assign_ids(const struct sl_maps *m, struct sl_rule *rules,
		      unsigned nr, struct sl_bitmap *removed,
		      struct forget_set *fs, bool *is_new)
{
	struct sl_rule *live = NULL;
	struct sl_config cfg;
	struct sl_bitmap taken = {};
	unsigned nr_live = 0, i, j, next = 0;
	int err;

	err = sl_rules_read_live(m, &live, &nr_live, &cfg);
	if (err)
		return err;
	memset(removed, 0, sizeof(*removed));
	for (j = 0; j < nr_live; j++) {
		bit_set(&taken, live[j].id % SL_MAX_RULES);
		bit_set(removed, live[j].id % SL_MAX_RULES);
	}
	for (i = 0; i < nr; i++) {
		is_new[i] = true;
		for (j = 0; j < nr_live; j++) {
			/* a new algorithm reads the state differently:
			 * such a rule starts afresh under a new id
			 */
			if (strcmp(rules[i].name, live[j].name) ||
			    rules[i].algorithm != live[j].algorithm)
				continue;
			rules[i].id = live[j].id;
			removed->word[rules[i].id / 64] &= ~(1ULL << (rules[i].id % 64));
			if (sl_rule_rekeys(&rules[i], &live[j]))
				forget_rekeyed(fs, &rules[i], &live[j]);
			is_new[i] = false;
			break;
		}
	}
	for (i = 0; i < nr; i++) {
		if (!is_new[i])
			continue;
		while (next < SL_MAX_RULES &&
		       (taken.word[next / 64] >> (next % 64)) & 1)
			next++;
		if (next >= SL_MAX_RULES) {
			free(live);
			return -ENOSPC;
		}
		rules[i].id = next;
		bit_set(&taken, next);
	}
	free(live);
	return 0;
}

/* ---- port classes ---- */

static bool rule_has_ports(const struct sl_rule *r)
{
	return r->port_min != 0 || r->port_max != 65535;
}

/* Does rule r apply to port-space `space` (0 TCP, 1 UDP, 2 ICMP, 3 other)? */
static bool rule_in_space(const struct sl_rule *r, int space)
{
	switch (space) {
	case 0: return r->protocol == SL_PROTO_TCP || r->protocol == SL_PROTO_ANY;
	case 1: return r->protocol == SL_PROTO_UDP || r->protocol == SL_PROTO_ANY;
	case 2: return (r->protocol == SL_PROTO_ICMP || r->protocol == SL_PROTO_ANY) &&
		       !rule_has_ports(r);
	default: return r->protocol == SL_PROTO_ANY && !rule_has_ports(r);
	}
}

struct port_tables {
	__u32 *slot_class;		/* SL_PORT_SLOTS */
	struct sl_bitmap *classes;	/* SL_MAX_CLASSES; 0 stays empty */
	unsigned nr_classes;
};

/* Split each port space at every rule's range ends; each piece is a class.
 * At most 2 * nr + 1 pieces per space, so SL_MAX_CLASSES always suffices.
 */
static int build_port_tables(const struct sl_rule *rules, unsigned nr,
			     struct port_tables *t)
{
	static const unsigned base[4] = { SL_SLOT_TCP, SL_SLOT_UDP,
					  SL_SLOT_ICMP, SL_SLOT_OTHER };
	static const unsigned size[4] = { 65536, 65536, 1, 1 };
	char *cut = calloc(65537, 1);
	int space;

	if (!cut)
		return -ENOMEM;
	t->nr_classes = 1;
	for (space = 0; space < 4; space++) {
		unsigned lo, hi, i;

		memset(cut, 0, 65537);
		cut[0] = cut[size[space]] = 1;
		for (i = 0; i < nr; i++) {
			if (!rule_in_space(&rules[i], space) || size[space] == 1)
				continue;
			cut[rules[i].port_min] = 1;
			cut[rules[i].port_max + 1] = 1;
		}
		for (lo = 0; lo < size[space]; lo = hi) {
			struct sl_bitmap bm = {};
			unsigned cls = 0, p;

			for (hi = lo + 1; !cut[hi]; hi++)
				;
			for (i = 0; i < nr; i++)
				if (rule_in_space(&rules[i], space) &&
				    (size[space] == 1 ||
				     (rules[i].port_min <= lo && lo <= rules[i].port_max)))
					bit_set(&bm, i);
			if (!bitmap_empty(&bm)) {
				if (t->nr_classes >= SL_MAX_CLASSES) {
					free(cut);
					return -E2BIG;
				}
				cls = t->nr_classes++;
				t->classes[cls] = bm;
			}
			for (p = lo; p < hi; p++)
				t->slot_class[base[space] + p] = cls;
		}
	}
	free(cut);
	return 0;
}

static int write_array(int fd, __u32 first_key, const void *values,
		       size_t value_size, __u32 count)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 *keys, i, n = count;
	int err = 0;

	if (!count)
		return 0;
	keys = calloc(count, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (i = 0; i < count; i++)
		keys[i] = first_key + i;
	if (bpf_map_update_batch(fd, keys, values, &n, &opts)) {
		/* older kernels: one update per element */
		for (i = 0; i < count && !err; i++)
			if (bpf_map_update_elem(fd, &keys[i],
						(const char *)values + i * value_size, 0))
				err = -errno;
	}
	free(keys);
	return err;
}

/* ---- prefix tables ---- */

/* Keys read per batched lookup: about 4 MiB of keys and values a call. */
#define SL_DELETE_BATCH_BYTES	(4u << 20)

typedef bool (*key_match_fn)(const void *key, const void *arg);

/* The keys `match` accepts, appended to *doomed (*nr of them). */
static int doom(char **doomed, size_t *nr, size_t *cap, const void *key,
		size_t key_size)
{
	if (sl_grow((void **)doomed, cap, *nr + 1, key_size))
		return -ENOMEM;
	memcpy(*doomed + (*nr)++ * key_size, key, key_size);
	return 0;
}

static bool is_hash(__u32 type)
{
	return type == BPF_MAP_TYPE_HASH || type == BPF_MAP_TYPE_LRU_HASH ||
	       type == BPF_MAP_TYPE_PERCPU_HASH ||
	       type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

/* A hash map's keys by batched lookups: the kernel's cursor is a bucket
 * index and moves on whatever the data path evicts meanwhile, so the walk
 * ends after one pass. (get_next_key starts again from the first bucket
 * when the key it is given has gone, which under churn need never end.)
 */
static int collect_batched(int fd, const struct bpf_map_info *info,
			   key_match_fn match, const void *arg, char **doomed,
			   size_t *nr, size_t *cap)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	size_t vsize = info->value_size, ksize = info->key_size;
	__u32 batch, count, i;
	__u64 cursor = 0;
	void *in = NULL;
	char *keys, *vals;
	int err = 0, ret;

	if (info->type == BPF_MAP_TYPE_PERCPU_HASH ||
	    info->type == BPF_MAP_TYPE_LRU_PERCPU_HASH)
		vsize = ((vsize + 7) & ~(size_t)7) * libbpf_num_possible_cpus();
	batch = SL_DELETE_BATCH_BYTES / (vsize + ksize);
	if (batch < 1)
		batch = 1;
	keys = calloc(batch, ksize);
	vals = calloc(batch, vsize);
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	do {
		count = batch;
		ret = bpf_map_lookup_batch(fd, in, &cursor, keys, vals, &count,
					   &opts);
		if (ret && errno != ENOENT) {
			err = -errno;
			break;
		}
		for (i = 0; i < count && !err; i++)
			if (match(keys + i * ksize, arg))
				err = doom(doomed, nr, cap, keys + i * ksize, ksize);
		in = &cursor;
	} while (!ret && !err);
out:
	free(vals);
	free(keys);
	return err;
}

/* Any other map (the prefix tries, which only userspace writes: nothing
 * evicts their keys) key by key.
 */
static int collect_walked(int fd, size_t key_size, key_match_fn match,
			  const void *arg, char **doomed, size_t *nr,
			  size_t *cap)
{
	char key[64], next[64];
	void *prev = NULL;
	int err = 0;

	if (key_size > sizeof(key))
		return -E2BIG;
	while (!err && !bpf_map_get_next_key(fd, prev, next)) {
		if (match(next, arg))
			err = doom(doomed, nr, cap, next, key_size);
		memcpy(key, next, key_size);
		prev = key;
	}
	return err;
}

/* Delete every key of map `fd` that `match` accepts. Keys are collected
 * first: deleting while walking would skip entries. Deleted in batches;
 * a key the data path evicted meanwhile is stepped over.
 */
static int delete_keys_where(int fd, size_t key_size, key_match_fn match,
			     const void *arg, __u64 *deleted)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), count;
	size_t nr = 0, cap = 0, done = 0;
	char *doomed = NULL;
	int err;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.key_size != key_size)
		return -EINVAL;
	err = is_hash(info.type) ?
	      collect_batched(fd, &info, match, arg, &doomed, &nr, &cap) :
	      collect_walked(fd, key_size, match, arg, &doomed, &nr, &cap);
	while (!err && done < nr) {
		count = nr - done;
		if (is_hash(info.type) &&
		    !bpf_map_delete_batch(fd, doomed + done * key_size, &count,
					  &opts)) {
			done += count;
			continue;
		}
		/* the batch stopped at a key already gone (or the map has no
		 * batch delete): that one alone, then on
		 */
		if (is_hash(info.type))
			done += count;
		if (done < nr &&
		    bpf_map_delete_elem(fd, doomed + done * key_size) &&
		    errno != ENOENT)
			err = -errno;
		done++;
	}
	/* a key the data path evicted meanwhile is counted too: it was
	 * there when the walk saw it
	 */
	if (!err && deleted)
		*deleted += nr;
	free(doomed);
	return err;
}

static bool lpm_key_of_gen(const void *key, const void *gen)
{
	return ((const struct sl_lpm_key *)key)->gen == *(const __u32 *)gen;
}

static int clear_lpm_gen(int fd, __u32 gen)
{
	return delete_keys_where(fd, sizeof(struct sl_lpm_key),
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
			bit_set(&any, i);
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
				bit_set(&bm, j);
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
						bit_set(&bm, j);
				}
			err = put_lpm(fd, gen, &p->addr, p->len, &bm);
		}
	}
	return err;
}

/* ---- apply ---- */

static int zero_rule_stats(const struct sl_maps *m, __u32 id)
{
	void *zeros = calloc(m->nr_cpus, sizeof(struct sl_rule_stats));
	int err = 0;

	if (!zeros)
		return -ENOMEM;
	if (bpf_map_update_elem(m->rule_stats, &id, zeros, 0))
		err = -errno;
	free(zeros);
	return err;
}

static int forget_clients_in(int fd, const struct forget_set *fs,
			     __u64 *deleted)
{
	return delete_keys_where(fd, sizeof(struct sl_client_key),
				 client_forgotten, fs, deleted);
}

/* Forget the client state of rules that are gone, so that their ids can be
 * reused later without inheriting counts, and the states of a rekeyed
 * rule keyed the old way (one pass of the two: fs->switched). *forgotten
 * counts the client states (not the peers' parts of them).
 */
static int forget_clients(const struct sl_maps *m, const struct forget_set *fs,
			  __u64 *forgotten)
{
	int err = 0;
	__u32 id;

	if ((!fs->switched || bitmap_empty(&fs->removed)) &&
	    bitmap_empty(&fs->rekeyed))
		return 0;
	/* and their counters, so a dump never shows a gone rule's numbers */
	for (id = 0; fs->switched && id < SL_MAX_RULES && !err; id++)
		if (bit_of(&fs->removed, id))
			err = zero_rule_stats(m, id);
	if (!err)
		err = forget_clients_in(m->clients, fs, forgotten);
	if (!err)
		err = forget_clients_in(m->clients_plain, fs, forgotten);
	if (!err)
		err = forget_clients_in(m->clients_log, fs, forgotten);
	/* peers' counts too: a reused id must not inherit them */
	if (!err && m->peer_view >= 0)
		err = forget_clients_in(m->peer_view, fs, NULL);
	/* and the keys on probation, which a reused id would find */
	if (!err)
		err = sl_newcomers_forget(m);
	return err;
}

/* Every table of the idle generation GEN but its config, and the
 * zeroed stats of new rules; *cfg says which lookups it needs.
 */
static int write_generation(const struct sl_maps *m, __u32 gen,
			    const struct sl_rule *rules,
			    const struct sl_ruleset *rs, const bool *is_new,
			    struct port_tables *pt, struct sl_config *cfg)
{
	bool used = false;
	__u32 i;
	int err;

	err = build_port_tables(rules, rs->nr, pt);
	if (!err)
		err = write_array(m->port_classes, gen * SL_PORT_SLOTS,
				  pt->slot_class, sizeof(__u32), SL_PORT_SLOTS);
	if (!err)
		err = write_array(m->class_rules, gen * SL_MAX_CLASSES,
				  pt->classes, sizeof(struct sl_bitmap),
				  pt->nr_classes);
	if (!err)
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
	if (!err && rs->nr)
		err = write_array(m->rules, gen * SL_MAX_RULES, rules,
				  sizeof(*rules), rs->nr);
	for (i = 0; !err && i < rs->nr; i++)
		if (is_new[i])
			err = zero_rule_stats(m, rules[i].id);
	return err;
}

int sl_rules_apply(const struct sl_maps *m, const struct sl_ruleset *rs)
{
	return sl_rules_apply_counted(m, rs, NULL);
}

int sl_rules_apply_counted(const struct sl_maps *m,
			   const struct sl_ruleset *rs, __u64 *forgotten)
{
	struct port_tables pt = {};
	struct sl_config live_cfg, cfg = {};
	struct forget_set *fs;
	struct sl_rule *rules;
	bool *is_new;
	__u32 zero = 0, gen, i;
	__u64 none = 0;
	int err;

	if (!forgotten)
		forgotten = &none;
	*forgotten = 0;
	if (rs->nr > SL_MAX_RULES)
		return -E2BIG;
	rules = calloc(rs->nr + 1, sizeof(*rules));
	is_new = calloc(rs->nr + 1, sizeof(*is_new));
	fs = calloc(1, sizeof(*fs));
	pt.slot_class = calloc(SL_PORT_SLOTS, sizeof(*pt.slot_class));
	pt.classes = calloc(SL_MAX_CLASSES, sizeof(*pt.classes));
	if (!rules || !is_new || !fs || !pt.slot_class || !pt.classes) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < rs->nr; i++)
		rules[i] = rs->specs[i].rule;

	err = assign_ids(m, rules, rs->nr, &fs->removed, fs, is_new);
	if (err)
		goto out;
	if (bpf_map_lookup_elem(m->active, &zero, &gen) ||
	    bpf_map_lookup_elem(m->config, &(__u32){ gen & 1 }, &live_cfg)) {
		err = -errno;
		goto out;
	}
	gen = !(gen & 1);	/* the idle generation */
	err = write_generation(m, gen, rules, rs, is_new, &pt, &cfg);
	if (!err)
		err = forget_clients(m, fs, forgotten);
	if (err)
		goto out;

	cfg.gen = gen;
	cfg.rules_epoch = live_cfg.rules_epoch + 1;
	cfg.nr_rules = rs->nr;
	for (i = 0; i < rs->nr; i++)
		bit_set(&cfg.all_rules, i);
	/* the lists are not the rules': read from their maps, as late as
	 * can be, so that the switch keeps what they hold now
	 */
	sl_lists_config_lock();
	sl_config_lists(&cfg) = sl_lists_in_use(m);
	if (bpf_map_update_elem(m->config, &gen, &cfg, 0) ||
	    bpf_map_update_elem(m->active, &zero, &gen, 0)) {
		err = -errno;
		sl_lists_config_unlock();
		goto out;
	}
	sl_lists_config_unlock();
	fs->switched = true;
	err = forget_clients(m, fs, forgotten);
out:
	free(pt.classes);
	free(pt.slot_class);
	free(fs);
	free(is_new);
	free(rules);
	return err;
}

int sl_open_live(struct sl_maps *m, struct sl_rule **rules, unsigned *nr,
		 struct sl_config *cfg)
{
	int err;

	if (sl_require_bpffs())
		return -ENODEV;
	err = sl_maps_open_pinned(m);
	if (err == -ENOENT) {
		pr_error("nothing loaded under %s (slicelimit attach DEV)", SL_PIN_DIR);
		return err;
	}
	if (err) {
		pr_error("cannot open the pins under %s: %s%s", SL_PIN_DIR,
			 strerror(-err), sl_privilege_hint(err));
		return err;
	}
	err = sl_rules_read_live(m, rules, nr, cfg);
	if (err) {
		pr_error("cannot read the running rules: %s", strerror(-err));
		sl_maps_close(m);
	}
	return err;
}
