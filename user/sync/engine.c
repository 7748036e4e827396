// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sync engine's life: made over an instance's maps and freed, who may
 * hold a peer slot, the live rules (by id and by name hash), its status.
 * The round's jobs are each in their own file (sync/engine_internal.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "util/parse.h"
#include "rules/rules.h"
#include "sync/engine_internal.h"

static const char *const layout_names[SL_LAYOUT__COUNT] = {
	[SL_LAYOUT_LOCAL] = "local",
	[SL_LAYOUT_DELAYED_SYNC] = "delayed-sync",
	[SL_LAYOUT_SPLIT_QUOTA] = "split-quota",
	[SL_LAYOUT_PREDICTIVE] = "predictive",
	[SL_LAYOUT_BOUNDED] = "bounded",
};

const char *sl_layout_name(unsigned layout)
{
	return sl_name_of(layout_names, SL_LAYOUT__COUNT, layout);
}

int sl_parse_layout(const char *s, enum sl_layout *layout)
{
	unsigned v;

	if (sl_parse_name(s, sl_layout_name, SL_LAYOUT__COUNT, &v))
		return -EINVAL;
	*layout = v;
	return 0;
}

/* Re-read the live rules when they changed (rule names map to this
 * node's ids).
 */
int sl_sync_refresh_rules(struct sl_sync_engine *s)
{
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	struct rule_ref *refs;
	unsigned nr = 0, i;
	int err;

	/* every apply bumps the epoch: two lookups a round, not one per rule */
	err = sl_rules_reread(&s->maps, !s->rules, &s->rules_epoch, &rules,
			      &nr, &cfg);
	if (err <= 0)
		return err;
	refs = calloc(nr ? nr : 1, sizeof(*refs));
	if (!refs) {
		free(rules);
		return -ENOMEM;
	}
	memset(s->by_id, 0, sizeof(s->by_id));
	for (i = 0; i < nr; i++) {
		refs[i].rule = rules[i];
		refs[i].hash = sl_rule_name_hash(rules[i].name);
		refs[i].id = rules[i].id;
		refs[i].algorithm = rules[i].algorithm;
		refs[i].window_ms = rules[i].window_ms;
		if (rules[i].id < SL_MAX_RULES)
			s->by_id[rules[i].id] = &refs[i];
	}
	free(rules);
	free(s->rules);
	s->rules = refs;
	s->nr_rules = nr;
	return 0;
}

const struct rule_ref *sl_sync_rule_by_hash(const struct sl_sync_engine *s,
					    __u32 hash)
{
	unsigned i;

	for (i = 0; i < s->nr_rules; i++)
		if (s->rules[i].hash == hash)
			return &s->rules[i];
	return NULL;
}

struct sl_sync_engine *sl_sync_new(const struct sl_maps *m,
				   const struct sl_sync_opts *o)
{
	struct sl_sync_engine *s;
	__u32 zero = 0;
	int err;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->maps = *m;
	s->maps.owned = false;
	s->o = *o;
	s->sender.node = o->node;
	s->sender.incarnation = o->incarnation;
	s->sender.keys = &s->o.keys;
	s->datagrams.max = SIZE_MAX;
	s->conf.layout = o->layout;
	s->conf.nodes = o->nodes;
	s->conf.interval_ms = o->interval_ms;
	/* rounds count from the start: the bounded layout's shares hold
	 * from the first accept, before the first round is sent
	 */
	s->conf.round = 1;
	s->conf.share_round = 1;
	s->conf.live_nodes = o->nodes;
	s->st.node = o->node;
	s->st.layout = o->layout;
	s->st.interval_ms = o->interval_ms;
	s->st.peers_configured = o->peers_configured;
	s->walk_all = true;
	s->cap = 1024;
	/* room for every client the syncing tables can hold, twice over:
	 * the table never needs more, however many sources a flood spoofs
	 */
	s->max_cap = s->cap;
	while (s->max_cap < 2 * ((size_t)sl_map_capacity(m->clients) +
				 sl_map_capacity(m->clients_plain) +
				 sl_map_capacity(m->clients_log)))
		s->max_cap *= 2;
	s->table = calloc(s->cap, sizeof(*s->table));
	s->view_entries = calloc(0x10000, sizeof(*s->view_entries));
	if (o->replay_state && o->replay_state[0])
		s->state_path = strdup(o->replay_state);
	s->o.replay_state = NULL;	/* the caller's string: s->state_path */
	err = s->table && s->view_entries &&
	      (s->state_path || !o->replay_state || !o->replay_state[0]) ?
	      sl_client_hash_init(&s->hash) : -ENOMEM;
	/* a record per peer and client the view can hold: every peer may
	 * report every client the view holds
	 */
	if (!err)
		err = peer_units_init(&s->peer_units,
				      (o->peers_configured ?
				       o->peers_configured : 1) *
				      (size_t)sl_map_capacity(m->peer_view));
	if (!err)
		err = sl_sync_refresh_rules(s);
	if (!err && !(s->changed = sl_changed_open(m)))
		err = -errno;
	if (!err && bpf_map_update_elem(m->sync, &zero, &s->conf, BPF_ANY))
		err = -errno;
	if (err) {
		sl_sync_free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

void sl_sync_free(struct sl_sync_engine *s)
{
	if (!s)
		return;
	sl_changed_close(s->changed);
	free(s->table);
	free(s->rules);
	free(s->datagrams.e);
	free(s->view_entries);
	peer_units_free(&s->peer_units);
	free(s->state_path);
	/* the pairs' keys speak as this node */
	explicit_bzero(&s->o.keys, sizeof(s->o.keys));
	free(s);
}

int sl_sync_admit_only(struct sl_sync_engine *s, const struct sl_sync_member *m,
		       unsigned n)
{
	if (n > SL_MAX_PEERS)
		return -E2BIG;
	memcpy(s->members, m, n * sizeof(*m));
	s->nr_members = n;
	s->admit_set = true;
	s->view_share = 0;	/* over the members now */
	return 0;
}

struct sl_sync_status *sl_sync_status(struct sl_sync_engine *s)
{
	return &s->st;
}

int sl_sync_publish(struct sl_sync_engine *s, uint64_t now_ms)
{
	__u32 zero = 0;

	s->st.updated_ms = now_ms;
	return bpf_map_update_elem(s->maps.sync_status, &zero, &s->st,
				   BPF_ANY) ? -errno : 0;
}


void sl_sync_store_report(struct sl_sync_engine *s,
			  const struct sl_sync_store *st)
{
	if (s->store_reported && s->st.backend_up != st->up)
		s->st.store_transitions++;
	s->store_reported = true;
	s->st.backend_up = st->up;
	s->st.backend_errors = st->errors;
	s->st.backend_reconnects = st->reconnects;
}

