// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <bpf/bpf.h>
#include "state/aggregate.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/log.h"
#include "util/parse.h"
#include "rules/rules.h"
#include "sl_key.h"
#include "sl_peer.h"
#include "sync/client_hash.h"
#include "sync/engine.h"
#include "sync/peer_units.h"
#include "sync/replay_state.h"

/* What this node last reported of a client, per peer slice: the next
 * round sends only what grew. `accepted` (the client's accept counter)
 * tells in one compare whether anything changed at all.
 */
struct sent_client {
	struct sl_client_key key;
	__u32 accepted;
	bool in_use;
	__u64 changed_ms;
	struct sl_slot sent[SL_PEER_SLOTS];
};

/* Replay protection per sender: its incarnation, the highest sequence
 * seen, and which of the 64 below it were seen (as IPsec does).
 */
struct peer_seen {
	__u64 incarnation;
	__u64 max_seq;
	__u64 window;		/* bit i: max_seq - i was seen */
};

struct rule_ref {
	__u32 hash;
	__u16 id;
	__u8 algorithm;
	__u32 window_ms;
	struct sl_rule rule;
};

struct sl_sync {
	struct sl_maps maps;		/* a copy: fds owned by the caller */
	struct sl_sync_opts o;
	struct sl_sync_conf conf;	/* what sl_sync holds: the layout, and
					 * the round that marks changed clients */
	struct sl_changed *changed;	/* the reader of sl_changed */
	struct sl_wire_sender sender;	/* node, incarnation, key, sequence */
	struct sl_sync_status st;
	bool store_reported;	/* st.backend_up holds a round's report */
	struct peer_seen seen[SL_MAX_PEERS];

	/* who may hold a peer slot (sl_sync_admit_only) */
	bool admit_set;
	struct sl_sync_member members[SL_MAX_PEERS];
	unsigned nr_members;
	unsigned member_of[SL_MAX_PEERS];	/* slot -> member index + 1 */

	/* sl_peer_view entries per node id that made them (the entry's
	 * pad), and how many one peer may make: see view_share()
	 */
	__u32 *view_entries;
	__u64 view_share;

	/* the replay state on disk (sync/replay_state.h) */
	char *state_path;		/* NULL: memory only */
	__u64 accepted_until_ms;	/* as written: no datagram dated later
					 * is accepted before it is moved */
	bool state_warned;		/* a failed write was logged */
	struct sl_replay_state restored;	/* the previous run's windows */

	/* what each peer reported per client lately: the cap of a peer's
	 * entries is over its datagrams, not per datagram (merge_entry)
	 */
	struct peer_units_table peer_units;

	struct sent_client *table;	/* open addressing, power of two */
	struct sl_client_hash hash;	/* its keyed hash */
	size_t cap, used, max_cap;

	struct rule_ref *rules;		/* live rules */
	unsigned nr_rules;
	__u32 rules_epoch;		/* of the rules read */
	struct rule_ref *by_id[SL_MAX_RULES];

	struct sl_wire_entry in[SL_WIRE_MAX_ENTRIES];	/* decoded */
	struct sl_sync_entries datagrams;	/* sl_sync_collect's round */
	/* the round being collected, into `out` (NULL: sl_sync_adopt's,
	 * which sends nothing)
	 */
	struct sl_sync_entries *out;
	enum sl_sync_carrier to;
	bool out_full;		/* entries were given up: a send error */
	__u64 now_ms;
	__u64 prev_ms;		/* when the previous round began */
	__u64 before_prev_ms;	/* and the one before: a peer heard since
				 * is live (bounded) */
	__u64 started_ms;	/* sl_sync_adopt: older messages are refused */
	bool walk_all;		/* the next round reads every client, not
				 * only sl_changed's */
	__u64 sent_until_ms;	/* the previous service's last round */
};

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
static int sl_sync_refresh_rules(struct sl_sync *s)
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

static const struct rule_ref *rule_by_hash(const struct sl_sync *s,
					   __u32 hash)
{
	unsigned i;

	for (i = 0; i < s->nr_rules; i++)
		if (s->rules[i].hash == hash)
			return &s->rules[i];
	return NULL;
}

struct sl_sync *sl_sync_new(const struct sl_maps *m,
			    const struct sl_sync_opts *o)
{
	struct sl_sync *s;
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

void sl_sync_free(struct sl_sync *s)
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

int sl_sync_admit_only(struct sl_sync *s, const struct sl_sync_member *m,
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

/* How many sl_peer_view entries one node's reports may make: the map's
 * capacity over the nodes that write it (each configured peer, and this
 * node under bounded, whose own reports go in too). An even share,
 * because a receiver cannot tell a peer with many real clients from one
 * reporting junk: a flooding peer fills its own share and no more, and
 * every other peer's reports still find room. A client is one entry
 * however many peers report it (it counts for the first), so clients
 * spread over the fleet take less than the shares; a fleet whose
 * clients crowd on one node needs a view sized for that node's clients
 * times the nodes. A peer past its share has its new clients refused
 * and counted (view_capped, its view_refused): an undercount of those
 * clients, never an eviction of another peer's.
 */
static __u64 view_share(struct sl_sync *s)
{
	__u64 writers = s->admit_set ? s->nr_members : s->o.peers_configured;

	if (s->view_share)
		return s->view_share;
	if (s->o.layout == SL_LAYOUT_BOUNDED)
		writers++;
	s->view_share = sl_map_capacity(s->maps.peer_view) /
			(writers ? writers : 1);
	if (!s->view_share)
		s->view_share = 1;
	return s->view_share;
}

struct sl_sync_status *sl_sync_status(struct sl_sync *s)
{
	return &s->st;
}

int sl_sync_publish(struct sl_sync *s, uint64_t now_ms)
{
	__u32 zero = 0;

	s->st.updated_ms = now_ms;
	return bpf_map_update_elem(s->maps.sync_status, &zero, &s->st,
				   BPF_ANY) ? -errno : 0;
}

/* ---- sending ---- */

static struct sent_client *table_slot(const struct sl_client_hash *h,
				      struct sent_client *t, size_t cap,
				      const struct sl_client_key *k)
{
	size_t i = sl_client_hash(h, k) & (cap - 1);

	while (t[i].in_use && memcmp(&t[i].key, k, sizeof(*k)))
		i = (i + 1) & (cap - 1);
	return &t[i];
}

/* Keep only clients changed within `keep_ms`, in a table with room to
 * grow: rebuilt when three quarters full.
 */
static int table_rebuild(struct sl_sync *s, __u64 now_ms, __u64 keep_ms)
{
	size_t cap = s->cap, i, used = 0;
	struct sent_client *t;

	if (s->used * 2 >= s->cap && cap < s->max_cap)
		cap *= 2;
	t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (i = 0; i < s->cap; i++) {
		const struct sent_client *c = &s->table[i];

		if (!c->in_use || now_ms - c->changed_ms > keep_ms)
			continue;
		*table_slot(&s->hash, t, cap, &c->key) = *c;
		used++;
	}
	free(s->table);
	s->table = t;
	s->cap = cap;
	s->used = used;
	return 0;
}

/* One entry of the round, unless adopting (nothing is sent then). */
static void out_add(struct sl_sync *s, const struct sl_wire_entry *e)
{
	struct sl_sync_entries *l = s->out;

	if (!l)
		return;
	s->st.sent_entries++;
	if (l->nr == l->max ||
	    sl_grow((void **)&l->e, &l->cap, l->nr + 1, sizeof(*l->e))) {
		s->out_full = true;
		return;
	}
	l->e[l->nr++] = *e;
}

/* A client's units per peer slice, with the earliest first accept among
 * them. While adopting, only what a previous service
 * can have sent: slices that began by its last round.
 */
struct bin {
	__u32 slice;
	__u32 count;
	__u64 first_ms;
};

struct bins {
	__u64 ps;
	__u64 sent_until_ms;	/* adopting: later pieces are not sent yet */
	bool adopting;
	bool held_back;		/* adopting: some pieces were not sent yet */
	bool bounded;		/* the sums under bounded: sl_bounded_start */
	__u64 prev_ms;		/* the round before */
	__u64 last_ms;		/* the client's last accept */
	struct bin slot[SL_PEER_SLOTS];
};

static void bin_piece(void *ctx, __u64 start_ms, __u32 units)
{
	struct bins *b = ctx;
	__u32 slice = start_ms / b->ps;
	struct bin *s = &b->slot[slice % SL_PEER_SLOTS];

	if (b->adopting && start_ms > b->sent_until_ms) {
		b->held_back = true;
		return;
	}
	if (s->slice != slice || !s->count) {
		s->slice = slice;
		s->count = 0;
		s->first_ms = start_ms;
	}
	if (start_ms < s->first_ms)
		s->first_ms = start_ms;
	s->count += units;
}

/* The client's entry in the table of what was sent (made if new), or
 * NULL when it is not to be looked at: nothing accepted since the last
 * round, or no room to remember it.
 */
static struct sent_client *changed_client(struct sl_sync *s,
					  const struct sl_client_key *key,
					  __u32 accepted)
{
	struct sent_client *c = table_slot(&s->hash, s->table, s->cap, key);

	if (c->in_use && c->accepted == accepted)
		return NULL;
	/* a live state's accept counter only grows: one that went back is a
	 * new state (the client was reset or evicted, then came again), whose
	 * slices start from zero; what was sent of the old one says nothing
	 * of it
	 */
	if (c->in_use && (__s32)(accepted - c->accepted) < 0)
		memset(c->sent, 0, sizeof(c->sent));
	if (!c->in_use) {
		/* room is kept free (see table_rebuild); without it, not
		 * tracking the client is safe: its units are not sent
		 * (undercount), where sending them every round would not be
		 */
		if ((s->used + 1) * 8 > s->cap * 7) {
			s->st.untracked++;
			return NULL;
		}
		memset(c, 0, sizeof(*c));
		c->key = *key;
		c->in_use = true;
		s->used++;
	}
	c->accepted = accepted;
	c->changed_ms = s->now_ms;
	s->st.collect_changed++;
	return c;
}

/* What each of the client's slices gained since it was last sent: the
 * round's entries.
 */
static void add_gains(struct sl_sync *s, const struct sl_client_key *key,
		      const struct rule_ref *r, struct sent_client *c,
		      const struct bins *b)
{
	int i;

	for (i = 0; i < SL_PEER_SLOTS; i++) {
		const struct bin *now = &b->slot[i];
		struct sl_slot *was = &c->sent[i];
		struct sl_wire_entry e = {
			.addr = key->addr,
			.rule_hash = r->hash,
			.dport = key->dport,
		};

		if (!now->count)
			continue;
		if (was->slice != now->slice) {
			was->slice = now->slice;
			was->count = 0;
		}
		if (now->count <= was->count)
			continue;	/* slices only grow until they leave */
		e.start_ms = s->to == SL_SYNC_TO_STORE ?
			     now->first_ms / b->ps * b->ps : now->first_ms;
		if (b->bounded)
			e.start_ms = sl_bounded_start(now->first_ms,
						      b->prev_ms, b->last_ms,
						      b->ps);
		e.units = now->count - was->count;
		was->count = now->count;
		out_add(s, &e);
	}
}

static int collect_client(void *ctx, const struct sl_client_key *key,
			  const void *state, __u32 value_size)
{
	struct sl_sync *s = ctx;
	const struct sl_client_hdr *h = state;
	const struct rule_ref *r;
	struct sent_client *c;
	struct sl_params p;
	struct bins b = { 0 };
	__u32 accepted = h->accepted;
	__u64 last_ms = h->last_ms, now_ms;

	s->st.collect_clients++;
	r = key->rule_id < SL_MAX_RULES ? s->by_id[key->rule_id] : NULL;
	if (!r || sl_state_size(r->algorithm) != value_size)
		return 0;
	/* no accept since the last round began: unchanged, known without
	 * touching the (large, cache-cold) table of what was sent
	 */
	if (s->st.rounds && last_ms < s->prev_ms)
		return 0;
	/* the walk takes a while: a slice opened after the round read the
	 * clock must be binned by its own start, or the next round would
	 * find it in another slice and send it again
	 */
	now_ms = last_ms > s->now_ms ? last_ms : s->now_ms;
	c = changed_client(s, key, accepted);
	if (!c)
		return 0;
	sl_params_from_rule(&p, &r->rule);
	b.ps = sl_peer_slice_of(&p);
	b.adopting = !s->out;
	b.sent_until_ms = s->sent_until_ms;
	b.bounded = s->o.layout == SL_LAYOUT_BOUNDED &&
		    s->to == SL_SYNC_TO_PEERS && sl_peer_sums(&p);
	b.prev_ms = s->prev_ms;
	b.last_ms = last_ms;
	sl_state_pieces(state, &p, now_ms, bin_piece, &b);
	add_gains(s, key, r, c, &b);
	/* units accepted while no service ran: the next round must look */
	if (b.held_back)
		c->accepted = accepted - 1;
	if (s->used * 4 >= s->cap * 3 && s->cap < s->max_cap)
		return table_rebuild(s, s->now_ms, ~0ull);
	return 0;
}

/* Does anything of a peer view entry still count at now? (Its rule gone:
 * nothing.) The same test as sl_peer_tally's, on a zero tally; under
 * bounded, for the sums, the room's too: the node's own units and the
 * slots whose first left the window but whose last merge did not still
 * take room (sl_fleet_slot).
 */
static bool view_counts(const struct sl_sync *s,
			const struct sl_client_key *key,
			const struct sl_peer_view *v, __u64 now_ms)
{
	const struct rule_ref *r = key->rule_id < SL_MAX_RULES ?
				   s->by_id[key->rule_id] : NULL;
	struct sl_sync_conf sc = {
		.layout = SL_LAYOUT_PREDICTIVE,
		.interval_ms = s->o.interval_ms,
	};
	struct sl_params p;
	struct sl_tally t;
	__u64 projected;

	if (!r)
		return false;
	sl_params_from_rule(&p, &r->rule);
	if (s->o.layout == SL_LAYOUT_BOUNDED && sl_peer_sums(&p)) {
		struct sl_fleet_walk w;
		__u32 i;

		if (sl_fleet_start(&w, v, &p, now_ms))
			for (i = 0; i < SL_PEER_SLOTS; i++)
				sl_fleet_slot(&w, i);
		if (w.base || w.hidden)
			return true;
	}
	sl_tally_init(&t);
	/* no own state: what the peers' part alone counts */
	projected = sl_peer_tally_algo(&t, v, NULL, &p, &sc, now_ms);
	return t.used || projected || t.next_expiry_ms != SL_NEVER;
}

/* Delete the peer view entries that no longer count, in batches, so that
 * the map holds the clients peers counted within a window, not every
 * client ever heard of; and count again, per node, the entries its
 * reports made (view_share), from what is left.
 */
static int sweep_peer_view(struct sl_sync *s, __u64 now_ms)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	enum { BATCH = 4096 };
	struct sl_client_key *keys, *stale;
	struct sl_peer_view *vals;
	__u32 count, out, i, n, nr_stale, *made;
	void *in = NULL;
	int ret, err = 0;

	keys = calloc(BATCH, sizeof(*keys));
	stale = calloc(BATCH, sizeof(*stale));
	vals = calloc(BATCH, sizeof(*vals));
	made = calloc(0x10000, sizeof(*made));
	if (!keys || !stale || !vals || !made) {
		err = -ENOMEM;
		goto out;
	}
	do {
		count = BATCH;
		ret = bpf_map_lookup_batch(s->maps.peer_view, in, &out, keys,
					   vals, &count, &opts);
		if (ret && errno != ENOENT) {
			err = -errno;
			break;
		}
		for (i = 0, nr_stale = 0; i < count; i++)
			if (!view_counts(s, &keys[i], &vals[i], now_ms))
				stale[nr_stale++] = keys[i];
			else if (vals[i].pad <= 0xffff)
				made[vals[i].pad]++;
		n = nr_stale;
		/* deleting behind the cursor keeps the walk valid: the
		 * cursor is a bucket, and these keys are in earlier ones
		 */
		if (n && bpf_map_delete_batch(s->maps.peer_view, stale, &n,
					      &opts) && errno != ENOENT) {
			err = -errno;
			break;
		}
		in = &out;
	} while (!ret);
	/* a walk cut short keeps the counts it had: they only grow until
	 * the next sweep, an overcount that refuses early, never late
	 */
	if (!err) {
		free(s->view_entries);
		s->view_entries = made;
		made = NULL;
	}
out:
	free(made);
	free(vals);
	free(stale);
	free(keys);
	return err;
}

static __u64 longest_window(const struct sl_sync *s)
{
	__u64 w = 0;
	unsigned i;

	/* how long a slice sent can count: a bucket's horizon may be longer
	 * than its window, and what is forgotten here would be sent again
	 */
	for (i = 0; i < s->nr_rules; i++) {
		struct sl_params p;
		__u64 keep;

		sl_params_from_rule(&p, &s->rules[i].rule);
		keep = sl_peer_keep_ms(&p);
		if (keep < s->rules[i].window_ms)
			keep = s->rules[i].window_ms;
		if (keep > w)
			w = keep;
	}
	return w;
}

/* The table of a changed client's key, for sl_for_each_changed_client. */
static int syncing_table_of(void *ctx, const struct sl_client_key *key,
			    __u32 *value_size)
{
	const struct sl_sync *s = ctx;
	const struct rule_ref *r = key->rule_id < SL_MAX_RULES ?
				   s->by_id[key->rule_id] : NULL;

	if (!r)
		return -1;
	*value_size = sl_state_size(r->algorithm);
	return sl_state_fd(&s->maps, r->algorithm);
}

/* The round's clients: those the kernel reported accepted since the last
 * round (sl_changed), so a round costs what changed, not what exists. The
 * first round after a start or an adoption, one after a failed round, and
 * one after the kernel lost keys for want of room walk every client, as
 * every round did before sl_changed.
 */
/* bounded: the nodes that hear each other, this one included. A peer is
 * live while its messages arrive: heard since the round before the last,
 * so one late message does not count it out. Until two rounds have run
 * nothing can be known, and the fleet is taken to be up; a store of
 * totals (Redis) is all the peers at once.
 */
static __u32 live_nodes(const struct sl_sync *s)
{
	__u32 n = 1, i;

	if (s->to == SL_SYNC_TO_STORE)
		return s->o.nodes;
	if (s->st.rounds < 2)
		return s->o.nodes;
	for (i = 0; i < s->st.nr_peers; i++)
		if (s->st.peer[i].messages &&
		    s->st.peer[i].last_heard_ms >= s->before_prev_ms)
			n++;
	return n;
}

static int collect_clients(struct sl_sync *s)
{
	__u32 zero = 0;
	int err;

	/* accepts from now on mark their client for the next round; one
	 * made before this write is in the ring already
	 */
	s->conf.round = s->conf.round + 1 ? s->conf.round + 1 : 1;
	s->conf.live_nodes = live_nodes(s);
	s->st.live_nodes = s->conf.live_nodes;
	if (bpf_map_update_elem(s->maps.sync, &zero, &s->conf, BPF_ANY))
		return -errno;
	err = sl_for_each_changed_client(s->changed, &s->maps,
					 syncing_table_of,
					 s->walk_all ? NULL : collect_client, s);
	if (err == -ENOBUFS) {
		s->walk_all = true;
		err = 0;
	}
	if (!err && s->walk_all) {
		err = sl_for_each_client_in(&s->maps, s->maps.clients,
					    sizeof(struct sl_client),
					    collect_client, s);
		if (!err)
			err = sl_for_each_client_in(&s->maps,
						    s->maps.clients_plain,
						    sizeof(struct sl_client_plain),
						    collect_client, s);
		if (!err)
			err = sl_for_each_client_in(&s->maps,
						    s->maps.clients_log,
						    sizeof(struct sl_client_log),
						    collect_client, s);
	}
	/* the keys read are gone from the ring: a round cut short leaves
	 * the next one to walk every client
	 */
	s->walk_all = err != 0;
	return err;
}

/* The round, the rules read: collected into `out` (NULL: nothing is
 * sent, only recorded as sent), then the housekeeping of every round.
 */
static int collect(struct sl_sync *s, uint64_t now_ms,
		   enum sl_sync_carrier to, struct sl_sync_entries *out)
{
	__u64 t0 = sl_now_mono_ns();
	int err = 0;

	s->now_ms = now_ms;
	s->to = to;
	s->out = out;
	s->out_full = false;
	s->st.collect_clients = 0;
	s->st.collect_changed = 0;
	/* split-quota needs no peers' counts: heartbeats only. */
	if (s->o.layout != SL_LAYOUT_SPLIT_QUOTA)
		err = collect_clients(s);
	if (s->out_full)
		s->st.send_errors++;
	s->out = NULL;
	/* a walk cut short: the clients it did not reach are looked at in
	 * full next time
	 */
	if (!err) {
		s->before_prev_ms = s->prev_ms;
		s->prev_ms = now_ms;
	}
	/* forget clients whose slices have all left the window, here and
	 * in the peer view
	 */
	if (!err && s->st.rounds % 64 == 63)
		err = table_rebuild(s, now_ms, longest_window(s));
	if (!err && s->st.rounds % 64 == 31)
		err = sweep_peer_view(s, now_ms);
	s->st.rounds++;
	s->st.collect_us = (sl_now_mono_ns() - t0) / 1000;
	return err;
}

static void merge_own(struct sl_sync *s, const struct sl_sync_entries *l,
		      size_t from, __u64 now_ms);

int sl_sync_collect_entries(struct sl_sync *s, uint64_t now_ms,
			    enum sl_sync_carrier to,
			    struct sl_sync_entries *out)
{
	/* rules that cannot be read: no round at all */
	int err = sl_sync_refresh_rules(s);
	size_t from = out->nr;

	if (err)
		return err;
	err = collect(s, now_ms, to, out);
	merge_own(s, out, from, now_ms);
	return err;
}

int sl_sync_collect(struct sl_sync *s, uint64_t now_ms, sl_wire_emit_fn emit,
		    void *ctx)
{
	struct sl_wire_sent sent = { 0 };
	int err = sl_sync_refresh_rules(s);

	if (err)
		return err;
	s->datagrams.nr = 0;
	err = collect(s, now_ms, SL_SYNC_TO_PEERS, &s->datagrams);
	merge_own(s, &s->datagrams, 0, now_ms);
	sl_wire_send(&s->sender, now_ms, s->datagrams.e, s->datagrams.nr,
		     emit, ctx, &sent);
	s->st.sent_messages += sent.messages;
	s->st.sent_bytes += sent.bytes;
	s->st.send_errors += sent.errors;
	return err;
}

int sl_sync_settle(struct sl_sync *s, uint64_t now_ms)
{
	__u32 zero = 0;

	s->conf.share_round = s->conf.share_round + 1 ?
			      s->conf.share_round + 1 : 1;
	s->conf.round_ms = now_ms;
	return bpf_map_update_elem(s->maps.sync, &zero, &s->conf, BPF_ANY) ?
	       -errno : 0;
}

/* ---- the replay state on disk ---- */

static void replay_state_fill(const struct sl_sync *s,
			      struct sl_replay_state *rs)
{
	unsigned i, j, n;

	memset(rs, 0, sizeof(*rs));
	rs->node = s->o.node;
	rs->accepted_until_ms = s->accepted_until_ms;
	for (n = 0; n < s->st.nr_peers; n++) {
		rs->peer[n].node = s->st.peer[n].node;
		rs->peer[n].incarnation = s->seen[n].incarnation;
		rs->peer[n].max_seq = s->seen[n].max_seq;
		rs->peer[n].window = s->seen[n].window;
	}
	/* and the previous run's, of peers not heard since */
	for (i = 0; i < s->restored.nr_peers && n < SL_MAX_PEERS; i++) {
		for (j = 0; j < s->st.nr_peers; j++)
			if (s->st.peer[j].node == s->restored.peer[i].node)
				break;
		if (j == s->st.nr_peers)
			rs->peer[n++] = s->restored.peer[i];
	}
	rs->nr_peers = n;
}

/* Move the bound on the dates of accepted datagrams past `sent_ms`, on
 * disk before that datagram is taken: the next run refuses everything
 * dated up to the bound on file (sl_sync_adopt), so nothing this run
 * accepted, even after its last write, is accepted again; the peers'
 * windows go with it. The bound is set an interval ahead of now, so
 * that datagrams dated now move it (and write the file) at most once a
 * round; the next run then loses at most that interval of its peers'
 * datagrams, dated before the bound, unless one dated ahead (within the
 * skew) pushed it further: exactly the datagram that must not count twice.
 * A failed write is logged once and the datagram still taken: the
 * protection is then what it was without a file.
 */
static void replay_state_lease(struct sl_sync *s, __u64 sent_ms,
			       __u64 now_ms)
{
	struct sl_replay_state rs;
	__u64 until = now_ms + s->o.interval_ms;
	int err;

	if (!s->state_path)
		return;
	s->accepted_until_ms = sent_ms > until ? sent_ms : until;
	replay_state_fill(s, &rs);
	err = sl_replay_state_save(s->state_path, &rs);
	if (err && !s->state_warned)
		pr_warn("sync: cannot write the replay state %s: %s",
			s->state_path, strerror(-err));
	else if (!err && s->state_warned)
		pr_notice("sync: the replay state %s is written again",
			  s->state_path);
	s->state_warned = err != 0;
}

/* The start of a run: the previous run's replay state, and from when
 * datagrams are taken. With its file, after the bound it wrote (nothing
 * this run accepts was taken before). With none, from now: nothing was
 * accepted under a file (a first start, or a node that had no state
 * directory). With a file that cannot be read (torn, altered), from
 * now + the skew and an interval: the previous run took nothing dated
 * later than its clock plus the skew (and the lease), and its clock was
 * behind ours; the peers are refused that long, as if down (fail open).
 */
static __u64 replay_state_start(struct sl_sync *s, __u64 now_ms)
{
	__u64 from = now_ms;
	int err;

	if (!s->state_path)
		return now_ms;
	err = sl_replay_state_load(s->state_path, s->o.node, &s->restored);
	if (!err) {
		if (s->restored.accepted_until_ms >= from)
			from = s->restored.accepted_until_ms + 1;
	} else if (err != -ENOENT) {
		pr_warn("sync: the replay state %s cannot be used (%s): refusing peers' datagrams dated before %llu ms from now",
			s->state_path, strerror(-err),
			(unsigned long long)(SL_SYNC_MAX_SKEW_MS +
					     s->o.interval_ms));
		memset(&s->restored, 0, sizeof(s->restored));
		from = now_ms + SL_SYNC_MAX_SKEW_MS + s->o.interval_ms;
	}
	s->accepted_until_ms = from - 1;
	return from;
}

int sl_sync_adopt(struct sl_sync *s, uint64_t now_ms)
{
	struct sl_sync_status prev;
	__u32 zero = 0;
	int err;

	s->started_ms = replay_state_start(s, now_ms);
	/* what the previous service sent: slices begun by its last round
	 * (what they gained after it is lost: an undercount). Without one,
	 * nothing was sent.
	 */
	if (bpf_map_lookup_elem(s->maps.sync_status, &zero, &prev) ||
	    !prev.node)
		prev.updated_ms = 0;
	s->sent_until_ms = prev.updated_ms < now_ms ? prev.updated_ms : now_ms;
	err = sl_sync_refresh_rules(s);
	if (!err)
		err = collect(s, now_ms, SL_SYNC_TO_PEERS, NULL);
	/* the entries each node made, for their shares (view_share) */
	if (!err)
		err = sweep_peer_view(s, now_ms);
	s->st.rounds = 0;
	/* pieces held back are in no ring: the next round must look */
	s->walk_all = true;
	return err;
}

/* ---- receiving ---- */

/* The host part of "ADDR:PORT" or "[ADDR]:PORT" into buf; an IPv4
 * peer seen by a wildcard IPv6 socket ("[::ffff:10.0.0.2]:7400") as the
 * IPv4 address the config names it by.
 */
static void host_of(const char *from, char *buf, size_t len)
{
	const char *end = strrchr(from, ':');
	size_t n = end ? (size_t)(end - from) : strlen(from);

	if (n >= 2 && from[0] == '[' && from[n - 1] == ']') {
		from++;
		n -= 2;
	}
	if (n > 7 && !strncasecmp(from, "::ffff:", 7) &&
	    strchr(from + 7, '.') && strchr(from + 7, '.') < from + n) {
		from += 7;
		n -= 7;
	}
	snprintf(buf, len, "%.*s", (int)n, from);
}

/* Does member m admit node `node` from `host`? */
static bool member_admits(const struct sl_sync_member *m, __u32 node,
			  const char *host)
{
	return (!m->node || m->node == node) &&
	       (!m->host[0] || !strcmp(m->host, host));
}

/* The member a new slot for `node` from `host` goes to: index + 1, or 0
 * when none is free (every member it matches holds a slot already).
 */
static unsigned free_member(const struct sl_sync *s, __u32 node,
			    const char *host)
{
	unsigned i, j;

	for (i = 0; i < s->nr_members; i++) {
		if (!member_admits(&s->members[i], node, host))
			continue;
		for (j = 0; j < s->st.nr_peers; j++)
			if (s->member_of[j] == i + 1)
				break;
		if (j == s->st.nr_peers)
			return i + 1;
	}
	return 0;
}

/* The slot of a sender, made if new and admitted (sl_sync_admit_only),
 * with what the previous run had seen of it; NULL if refused.
 */
static struct sl_sync_peer *peer_of(struct sl_sync *s, __u32 node,
				    const char *from, struct peer_seen **seen)
{
	unsigned i, j, member = 0;
	char host[48] = "";

	if (s->admit_set)
		host_of(from ? from : "", host, sizeof(host));
	for (i = 0; i < s->st.nr_peers; i++)
		if (s->st.peer[i].node == node)
			break;
	if (i < s->st.nr_peers) {
		/* a slot stays with the address it was given to (one made
		 * before the members were named has none: refused)
		 */
		if (s->admit_set &&
		    (!s->member_of[i] ||
		     !member_admits(&s->members[s->member_of[i] - 1], node,
				    host)))
			return NULL;
	} else {
		if (i == SL_MAX_PEERS)
			return NULL;
		if (s->admit_set && !(member = free_member(s, node, host)))
			return NULL;
		memset(&s->st.peer[i], 0, sizeof(s->st.peer[i]));
		memset(&s->seen[i], 0, sizeof(s->seen[i]));
		for (j = 0; j < s->restored.nr_peers; j++)
			if (s->restored.peer[j].node == node) {
				s->seen[i].incarnation =
					s->restored.peer[j].incarnation;
				s->seen[i].max_seq = s->restored.peer[j].max_seq;
				s->seen[i].window = s->restored.peer[j].window;
			}
		s->member_of[i] = member;
		s->st.peer[i].node = node;
		s->st.nr_peers++;
	}
	*seen = &s->seen[i];
	return &s->st.peer[i];
}

/* True (and recorded) if this sequence of this incarnation is new. */
static bool first_time(struct peer_seen *p, __u64 incarnation, __u64 seq)
{
	__u64 back;

	if (incarnation < p->incarnation)
		return false;	/* a message from before the sender restarted */
	if (incarnation > p->incarnation) {
		p->incarnation = incarnation;
		p->max_seq = 0;
		p->window = 0;
	}
	if (seq > p->max_seq) {
		back = seq - p->max_seq;
		p->window = back >= 64 ? 0 : p->window << back;
		p->window |= 1;
		p->max_seq = seq;
		return true;
	}
	back = p->max_seq - seq;
	if (back >= 64 || (p->window >> back) & 1)
		return false;
	p->window |= 1ull << back;
	return true;
}

/* The period one peer's entries of a client are capped over together,
 * in which a real node accepts at most entry_cap: a window for the sums
 * and the counter (no verdict passes more than the limit in one; units
 * are dated by their earliest accept, so the units a peer dates within a
 * window were accepted within it); for a bucket, the ring of slices the
 * view counts its units over (the cap grows by the refill since each of
 * those slices began: peer_units_room).
 * A peer's units count against it while the view's slot of their slice
 * is dated within it (peer_units_counted), so the next period starts
 * fresh.
 */
static __u64 peer_period_ms(const struct sl_params *p)
{
	if (p->algorithm == SL_ALGO_TOKEN_BUCKET)
		return sl_peer_keep_ms(p);
	return p->window_ms ? p->window_ms : 1;
}

/* The most units one entry of a peer's round can carry: what a node can
 * accept of a client in a round. Under bounded, the sender's share as
 * far as this node can bound it, from the peers' units of the client in
 * its view (sl_bounded_sender_cap); elsewhere, what any verdict passes
 * in a window (a bucket: its capacity, and the refill since a peer's units
 * began, peer_units_room).
 * A report claiming more is a forgery or a fault: it is cut to this, less
 * what the same peer already has counted in the period, and counted, so
 * that no peer's datagrams take a client further than a real node could.
 */
static __u64 entry_cap(const struct sl_sync *s, const struct sl_params *p,
		       const struct sl_peer_view *v, __u64 now_ms)
{
	__u64 keep = sl_peer_keep_ms(p), peers = 0;
	__u64 cap = p->limit + p->limit / SL_PREDICT_MARGIN;
	unsigned i;

	/* a bucket takes its capacity at once, and its refill on top over
	 * the time since a peer's units began (peer_units_room)
	 */
	if (p->algorithm == SL_ALGO_TOKEN_BUCKET && p->token_ns)
		cap++;
	/* the shares bound the sums only (sl_bounded_room) */
	if (s->o.layout != SL_LAYOUT_BOUNDED || !sl_peer_sums(p))
		return cap;
	for (i = 0; i < SL_PEER_SLOTS; i++)
		if (v->slot[i].count > v->slot[i].own &&
		    sl_u32_since(v->slot[i].first_ms, (__u32)now_ms) < keep)
			peers += v->slot[i].count - v->slot[i].own;
	return sl_bounded_sender_cap(p, peers);
}

/* Add (or with `set`, make) the peers' units of one client slice in the
 * peer view, `how` as sl_peer_merge_piece takes it; the predictive
 * layout's round counts what was added. `from` is the peer whose
 * datagram carried it (NULL: this node's own report, or a store's
 * totals): its units are cut to entry_cap, and a client new to the view
 * is added only within its share of the map (view_share).
 */
static void merge_entry(struct sl_sync *s, const struct sl_wire_entry *e,
			bool set, __u64 now_ms, int how,
			struct sl_sync_peer *from)
{
	const struct rule_ref *r = rule_by_hash(s, e->rule_hash);
	struct sl_peer_view v, was;
	struct peer_units *pu = NULL;
	struct sl_client_key key;
	struct sl_params p;
	__u32 before = 0, added, interval = s->o.interval_ms;
	__u32 units = e->units, maker = 0;
	bool fresh = false;
	__u64 ps, cap;

	if (!r) {
		s->st.unknown_rule++;
		return;
	}
	memset(&key, 0, sizeof(key));
	key.addr = e->addr;
	key.rule_id = r->id;
	key.dport = e->dport;
	if (bpf_map_lookup_elem(s->maps.peer_view, &key, &v)) {
		memset(&v, 0, sizeof(v));
		fresh = true;
	}
	sl_params_from_rule(&p, &r->rule);
	if (from) {
		maker = from->node;
		if (fresh && s->view_entries[maker] >= view_share(s)) {
			from->view_refused++;
			s->st.view_capped++;
			return;
		}
		/* the cap is over what the view still counts of this peer's
		 * reports of the client, not per entry: else as many
		 * datagrams, as many caps. No record left for it: refused,
		 * as a full view would
		 */
		pu = peer_units_of(&s->peer_units, maker, &key,
				   sl_peer_slice_of(&p), now_ms);
		if (!pu) {
			s->st.view_full++;
			return;
		}
		cap = peer_units_room(pu, &v, sl_peer_slice_of(&p),
				      peer_period_ms(&p), e->start_ms,
				      entry_cap(s, &p, &v, now_ms),
				      p.algorithm == SL_ALGO_TOKEN_BUCKET ?
				      p.token_ns : 0, now_ms);
		if (units > cap) {
			units = cap;
			s->st.clamped_entries++;
		}
		/* nothing to add (a sender reports only what grew): merged,
		 * it would still take over the view's slot of an older slice
		 * and drop the units the slot held, which the slice could
		 * then take back, its peers' records no longer true of it
		 */
		if (!units)
			return;
	} else if (!set) {
		maker = s->o.node;	/* bounded: the own report */
	}
	if (fresh)
		v.pad = maker;
	was = v;	/* a new entry is written only with units */
	if (set) {
		struct sl_peer_slot *slot;

		ps = sl_peer_slice_of(&p);
		slot = &v.slot[(e->start_ms / ps) % SL_PEER_SLOTS];
		/* the store's totals are the other nodes': the own part
		 * (bounded) stays
		 */
		if (slot->slice == (__u32)(e->start_ms / ps)) {
			before = slot->count - slot->own;
			slot->count = slot->own;
		}
	}
	added = sl_peer_merge_piece(&v, sl_peer_slice_of(&p),
				    sl_peer_keep_ms(&p), e->start_ms, units,
				    now_ms, how);
	if (added <= before && set)
		added = 0;
	else if (set)
		added -= before;
	if (pu)
		peer_units_add(pu, e->start_ms, sl_peer_slice_of(&p), added);
	if (added) {
		if (sl_u32_since(v.round_ms, (__u32)now_ms) >= interval ||
		    !v.round_units) {
			v.round_ms = (__u32)now_ms;
			v.round_units = 0;
		}
		v.round_units += added < ~(__u32)0 - v.round_units ?
				 added : ~(__u32)0 - v.round_units;
	}
	/* nothing to write for a slice already out of the window: no empty
	 * entries for stale messages
	 */
	if (!memcmp(&v, &was, sizeof(v)))
		return;
	if (bpf_map_update_elem(s->maps.peer_view, &key, &v, BPF_ANY))
		s->st.view_full++;
	else if (fresh)
		s->view_entries[maker & 0xffff]++;
}

/* bounded: what the round sent goes into the node's own view too, merged
 * by the rule its peers merge it by, so that every node's view holds the
 * same units with the same times, and every node computes the same base
 * (include/sl_peer.h).
 */
static void merge_own(struct sl_sync *s, const struct sl_sync_entries *l,
		      size_t from, __u64 now_ms)
{
	size_t i;

	if (s->o.layout != SL_LAYOUT_BOUNDED)
		return;
	for (i = from; i < l->nr; i++)
		merge_entry(s, &l->e[i], false, now_ms, SL_MERGE_OWN, NULL);
}

int sl_sync_receive(struct sl_sync *s, const uint8_t *msg, size_t len,
		    const char *from, uint64_t now_ms)
{
	struct sl_wire_entry *e = s->in;
	struct sl_wire_header h;
	struct sl_sync_peer *peer;
	struct peer_seen *seen;
	enum sl_wire_error err;
	unsigned i;

	err = sl_wire_decode(msg, len, &s->o.keys, from, &h, e);
	if (err == SL_WIRE_FORGED || err == SL_WIRE_UNKNOWN_PEER ||
	    err == SL_WIRE_WRONG_ADDRESS) {
		s->st.rejected_forged += err == SL_WIRE_FORGED;
		s->st.rejected_unknown_peer += err == SL_WIRE_UNKNOWN_PEER;
		s->st.rejected_wrong_address += err == SL_WIRE_WRONG_ADDRESS;
		return err;
	}
	if (err) {
		s->st.rejected_malformed++;
		return err;
	}
	if (h.node == s->o.node) {
		s->st.rejected_own++;
		return SL_SYNC_OWN;
	}
	if (h.sent_ms > now_ms + SL_SYNC_MAX_SKEW_MS) {
		s->st.rejected_future++;
		return SL_SYNC_FUTURE;
	}
	if (h.sent_ms + SL_SYNC_MAX_SKEW_MS < now_ms ||
	    h.sent_ms < s->started_ms) {
		s->st.rejected_stale++;
		return SL_SYNC_STALE;
	}
	/* the incarnation is the sender's start: not after it sent this
	 * (so not ahead of our clock by more than the skew either). One
	 * further ahead, once taken, would make every datagram of the
	 * real sender's incarnation look older, and refused, until it
	 * restarted past it
	 */
	if (h.incarnation / 1000000 > h.sent_ms) {
		s->st.rejected_future++;
		return SL_SYNC_FUTURE;
	}
	peer = peer_of(s, h.node, from, &seen);
	if (!peer) {
		s->st.rejected_unknown_peer++;
		return s->admit_set ? SL_SYNC_UNKNOWN : SL_SYNC_TOO_MANY_PEERS;
	}
	if (!first_time(seen, h.incarnation, h.seq)) {
		peer->rejected++;
		s->st.rejected_replayed++;
		return SL_SYNC_REPLAYED;
	}
	if (h.sent_ms > s->accepted_until_ms)
		replay_state_lease(s, h.sent_ms, now_ms);
	for (i = 0; i < h.count; i++)
		merge_entry(s, &e[i], false, now_ms, 0, peer);
	peer->last_heard_ms = now_ms;
	peer->lag_ms = now_ms > h.sent_ms ? now_ms - h.sent_ms : 0;
	peer->messages++;
	peer->entries += h.count;
	peer->bytes += len;
	snprintf(peer->addr, sizeof(peer->addr), "%s", from ? from : "");
	return SL_SYNC_MERGED;
}

void sl_sync_merge_totals(struct sl_sync *s, const struct sl_wire_entry *e,
			  unsigned n, uint64_t now_ms)
{
	unsigned i;

	for (i = 0; i < n; i++)
		merge_entry(s, &e[i], true, now_ms, 0, NULL);
}

void sl_sync_store_report(struct sl_sync *s, const struct sl_sync_store *st)
{
	if (s->store_reported && s->st.backend_up != st->up)
		s->st.store_transitions++;
	s->store_reported = true;
	s->st.backend_up = st->up;
	s->st.backend_errors = st->errors;
	s->st.backend_reconnects = st->reconnects;
}
