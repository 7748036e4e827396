// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "state/aggregate.h"
#include "state/client_keys.h"
#include "util/grow.h"
#include "sl_algo.h"
#include "sl_key.h"
#include "sl_newcomer.h"

bool sl_client_addr_hashed(const struct sl_addr *addr)
{
	static const __u8 prefix[8] = { 0x01 };

	return !memcmp(addr->byte, prefix, sizeof(prefix));
}

void sl_client_key_of(struct sl_client_key *key, const struct sl_rule *rule,
		      const struct sl_addr *addr, __u16 dport)
{
	if (!sl_client_addr_hashed(addr)) {
		sl_client_key_make(key, rule, addr, dport);
		return;
	}
	/* as the check program keys it (SL_CHECK_RAW_KEY) */
	key->addr = *addr;
	key->rule_id = rule->id;
	key->dport = 0;
}

bool sl_client_key_reachable(const struct sl_rule *rule,
			     const struct sl_client_key *key)
{
	struct sl_client_key made;

	sl_client_key_of(&made, rule, &key->addr, key->dport);
	return !memcmp(&made, key, sizeof(made));
}

bool sl_client_key_survives(const struct sl_rule *next,
			    const struct sl_rule *live,
			    const struct sl_client_key *key)
{
	if (sl_client_addr_hashed(&key->addr))
		return true;
	if (next->key_by_port != live->key_by_port)
		return false;
	return sl_addr_is_ipv4(&key->addr) ?
	       next->key_ipv4_prefix == live->key_ipv4_prefix :
	       next->key_ipv6_prefix == live->key_ipv6_prefix;
}

int sl_client_probation(const struct sl_maps *m,
			const struct sl_client_key *key, bool forget)
{
	struct sl_newcomer_conf conf;
	struct sl_newcomer_bucket b;
	__u32 zero = 0, idx;
	int way, free;
	__u64 h;

	if (m->newcomer_conf < 0 || m->newcomers < 0)
		return 0;
	if (bpf_map_lookup_elem(m->newcomer_conf, &zero, &conf))
		return -errno;
	if (!conf.buckets)
		return 0;
	h = sl_newcomer_hash(key, conf.seed);
	idx = sl_newcomer_index(h, conf.buckets);
	if (bpf_map_lookup_elem_flags(m->newcomers, &idx, &b, BPF_F_LOCK))
		return -errno;
	way = sl_newcomer_find(&b, sl_newcomer_tag(h), &free);
	if (way < 0)
		return 0;
	if (!forget)
		return 1;
	/* a way the data path wrote meanwhile may be undone: a newcomer
	 * lost from probation is decided as a first packet again, which
	 * probation allows for (include/sl_newcomer.h)
	 */
	b.tag[way] = 0;
	b.units[way] = 0;
	b.first_ms[way] = 0;
	if (bpf_map_update_elem(m->newcomers, &idx, &b, BPF_F_LOCK))
		return -errno;
	return 1;
}

struct collect {
	struct sl_client_key want;	/* any port */
	struct sl_client_key *keys;
	size_t nr, cap;
};

static int collect_ports(void *ctx, const struct sl_client_key *key,
			 const void *state, __u32 value_size)
{
	struct collect *c = ctx;

	(void)state;
	(void)value_size;
	if (key->rule_id != c->want.rule_id ||
	    memcmp(&key->addr, &c->want.addr, sizeof(key->addr)))
		return 0;
	if (sl_grow((void **)&c->keys, &c->cap, c->nr + 1, sizeof(*key)))
		return -ENOMEM;
	c->keys[c->nr++] = *key;
	return 0;
}

int sl_client_keys(const struct sl_maps *m, const struct sl_rule *rule,
		   const struct sl_addr *addr, bool has_port, __u16 port,
		   struct sl_client_key **keys, size_t *nr)
{
	int fd = sl_state_fd(m, rule->algorithm);
	__u32 size = sl_state_size(rule->algorithm);
	struct collect c = {};
	void *state;
	int err;

	*keys = NULL;
	*nr = 0;
	sl_client_key_of(&c.want, rule, addr, has_port ? port : 0);
	if (!rule->key_by_port || has_port || sl_client_addr_hashed(addr)) {
		state = malloc(size);
		if (!state)
			return -ENOMEM;
		err = bpf_map_lookup_elem(fd, &c.want, state) ? -errno : 0;
		free(state);
		if (err == -ENOENT)
			err = sl_client_probation(m, &c.want, false);
		else if (!err)
			err = 1;
		if (err <= 0)
			return err;
		*keys = malloc(sizeof(c.want));
		if (!*keys)
			return -ENOMEM;
		**keys = c.want;
		*nr = 1;
		return 0;
	}
	err = sl_for_each_client_in(m, fd, size, collect_ports, &c);
	if (err) {
		free(c.keys);
		return err;
	}
	*keys = c.keys;
	*nr = c.nr;
	return 0;
}
