// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A restart: what the previous service sent (sl_sync_adopt), and the
 * replay state on disk, which keeps a datagram accepted before the
 * restart from counting twice after it (sync/replay_state.h).
 */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include "util/log.h"
#include "sync/engine_internal.h"

static void replay_state_fill(const struct sl_sync_engine *s,
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
void sl_sync_replay_state_lease(struct sl_sync_engine *s, __u64 sent_ms,
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
static __u64 replay_state_start(struct sl_sync_engine *s, __u64 now_ms)
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

int sl_sync_adopt(struct sl_sync_engine *s, uint64_t now_ms)
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
		err = sl_sync_collect_into(s, now_ms, SL_SYNC_TO_PEERS, NULL);
	/* the entries each node made, for their shares (view_share) */
	if (!err)
		err = sl_sync_sweep_peer_view(s, now_ms);
	s->st.rounds = 0;
	/* pieces held back are in no ring: the next round must look */
	s->walk_all = true;
	return err;
}
