// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Receive: a peer's datagram admitted (a configured peer, from its
 * address, sealed with the pair's key), checked (clock skew, the
 * sender's incarnation and sequence: each is applied at most once), and
 * each of its entries merged (sync/merge.c).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "sync/engine_internal.h"

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
static unsigned free_member(const struct sl_sync_engine *s, __u32 node,
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
static struct sl_sync_peer *peer_of(struct sl_sync_engine *s, __u32 node,
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

int sl_sync_receive(struct sl_sync_engine *s, const uint8_t *msg, size_t len,
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
		sl_sync_replay_state_lease(s, h.sent_ms, now_ms);
	for (i = 0; i < h.count; i++)
		sl_sync_merge_entry(s, &e[i], false, now_ms, 0, peer);
	peer->last_heard_ms = now_ms;
	peer->lag_ms = now_ms > h.sent_ms ? now_ms - h.sent_ms : 0;
	peer->messages++;
	peer->entries += h.count;
	peer->bytes += len;
	snprintf(peer->addr, sizeof(peer->addr), "%s", from ? from : "");
	return SL_SYNC_MERGED;
}
