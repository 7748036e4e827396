// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One node's sync round, its steps read top to bottom; at the end,
 * sl_sync_run_rounds calls each by name:
 *  1. timer: rounds fall on TAI multiples of the interval, so every
 *     node's round is at the same instant (their clocks agree to
 *     milliseconds);
 *  2. collect: the units each client the kernel marked changed accepted
 *     since the last round, per peer slice (sync/collect.c);
 *  3. send: the entries sealed for each peer (sync/wire.c), or a Redis
 *     round (sync/redis_round.c), then the health counters published;
 *  4. receive: between rounds, the peers' datagrams as they arrive,
 *     admitted (sync/receive.c) and merged into sl_peer_view
 *     (sync/merge.c);
 *  5. settle: a quarter interval after the round, once its datagrams
 *     have crossed, the bounded layout's shares start over: it counts a
 *     node's units as unknown to its peers until then.
 * Nothing here is on the data path: if the rounds stall, the kernel keeps
 * deciding with what it has (the node's own counts and the peers' as last
 * merged), and a peer's part ages out with its slices.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <bpf/bpf.h>
#include "util/clock.h"
#include "util/log.h"
#include "sync/engine_internal.h"
#include "sync/peer_addr.h"
#include "sync/redis.h"
#include "sync/round.h"

/* ---- 1. the timer ---- */

struct round_clock {
	uint64_t interval;
	uint64_t next;		/* the next round */
	uint64_t settle_at;	/* the last round's settling (0: settled) */
};

/* The next TAI multiple of the interval after `now`. */
static uint64_t next_round_ms(uint64_t now, uint64_t interval)
{
	return (now / interval + 1) * interval;
}

/* Wait until a round or a settling is due, or a datagram arrives
 * (*datagrams). False when the rounds are to end.
 */
static bool wait_for_due(struct sl_sync_round *r, struct round_clock *c,
			 bool *datagrams)
{
	struct pollfd pfd[2] = {
		{ .fd = r->stop_fd, .events = POLLIN },
		{ .fd = r->sock, .events = POLLIN },
	};
	uint64_t due = c->settle_at && c->settle_at < c->next ? c->settle_at :
								 c->next;
	uint64_t now = sl_now_tai_ms();
	int timeout;

	/* a clock stepped back: the schedule starts over from now */
	if (c->next > now + c->interval)
		c->next = next_round_ms(now, c->interval);
	timeout = due > now ? (int)(due - now) : 0;
	if (poll(pfd, r->sock >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR)
		return false;
	if (pfd[0].revents)
		return false;
	*datagrams = r->sock >= 0 && pfd[1].revents;
	return true;
}

/* ---- 2. collect ---- */

/* The round's entries for the peers, in the engine's list of datagrams'
 * entries; under bounded, merged into this node's own view too.
 */
static int collect(struct sl_sync_engine *s, uint64_t now_ms)
{
	int err;

	s->datagrams.nr = 0;
	err = sl_sync_collect_into(s, now_ms, SL_SYNC_TO_PEERS, &s->datagrams);
	sl_sync_merge_own(s, &s->datagrams, 0, now_ms);
	return err;
}

/* ---- 3. send ---- */

/* The entries as sealed datagrams, each passed to emit; a heartbeat when
 * nothing changed, so peers know this node is alive.
 */
static void send_datagrams(struct sl_sync_engine *s, uint64_t now_ms,
			   sl_wire_emit_fn emit, void *ctx)
{
	struct sl_wire_sent sent = { 0 };

	sl_wire_send(&s->sender, now_ms, s->datagrams.e, s->datagrams.nr,
		     emit, ctx, &sent);
	s->st.sent_messages += sent.messages;
	s->st.sent_bytes += sent.bytes;
	s->st.send_errors += sent.errors;
}

int sl_sync_collect(struct sl_sync_engine *s, uint64_t now_ms,
		    sl_wire_emit_fn emit, void *ctx)
{
	/* rules that cannot be read: no round at all */
	int err = sl_sync_refresh_rules(s);

	if (err)
		return err;
	err = collect(s, now_ms);
	/* a walk cut short sends what it collected: recorded as sent */
	send_datagrams(s, now_ms, emit, ctx);
	return err;
}

/* A datagram sealed for one peer; an unreachable peer does not stop the
 * rest.
 */
static int send_to_peer(void *ctx, unsigned peer, const uint8_t *msg,
			size_t len)
{
	struct sl_sync_round *r = ctx;

	if (sendto(r->sock, msg, len, MSG_DONTWAIT,
		   (const struct sockaddr *)&r->peers[peer],
		   sl_peer_addr_len(&r->peers[peer])) < 0)
		return -errno;
	return 0;
}

/* Collect and send over the round's transport, then publish the health
 * counters to sl_sync_status.
 */
static void run_round(struct sl_sync_round *r, uint64_t now)
{
	int err;

	if (r->redis) {
		/* collect, push to the store, and merge the other nodes'
		 * totals it returns
		 */
		sl_redis_round(r->redis, r->engine, now);
	} else {
		err = sl_sync_collect(r->engine, now, send_to_peer, r);
		if (err)
			pr_warn("sync: a round failed: %s", strerror(-err));
	}
	sl_sync_publish(r->engine, now);
}

/* ---- 4. receive ---- */

/* At most this many datagrams between two looks at the clock: a peer
 * flooding the port cannot hold back this node's own rounds.
 */
#define SL_RECEIVE_BURST	256

static void receive_datagrams(struct sl_sync_round *r)
{
	uint8_t buf[SL_WIRE_MAX + 1];
	struct sockaddr_storage from;
	char name[64];
	int i;

	for (i = 0; i < SL_RECEIVE_BURST; i++) {
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(r->sock, buf, sizeof(buf), MSG_DONTWAIT,
				     (struct sockaddr *)&from, &flen);

		if (n < 0)
			return;
		sl_peer_addr_format(&from, name, sizeof(name));
		/* a datagram longer than SL_WIRE_MAX arrives as SL_WIRE_MAX
		 * + 1 bytes and is refused as malformed
		 */
		sl_sync_receive(r->engine, buf, n, name, sl_now_tai_ms());
	}
}

/* ---- 5. settle ---- */

int sl_sync_settle(struct sl_sync_engine *s, uint64_t now_ms)
{
	__u32 zero = 0;

	s->conf.share_round = s->conf.share_round + 1 ?
			      s->conf.share_round + 1 : 1;
	s->conf.round_ms = now_ms;
	return bpf_map_update_elem(s->maps.sync, &zero, &s->conf, BPF_ANY) ?
	       -errno : 0;
}

/* ---- the rounds, step by step ---- */

void sl_sync_run_rounds(struct sl_sync_round *r)
{
	struct round_clock c = { .interval = r->interval_ms };
	uint64_t now = sl_now_tai_ms();
	bool datagrams = false;

	c.next = next_round_ms(now, c.interval);
	while (wait_for_due(r, &c, &datagrams)) {	/* 1. timer */
		if (datagrams)
			receive_datagrams(r);		/* 4. receive */
		now = sl_now_tai_ms();
		if (c.settle_at && now >= c.settle_at) {
			sl_sync_settle(r->engine, now);	/* 5. settle */
			c.settle_at = 0;
		}
		if (now >= c.next) {
			run_round(r, now);	/* 2. collect, 3. send */
			now = sl_now_tai_ms();
			c.settle_at = now + c.interval / 4;
			/* a late round does not bunch up the following ones */
			c.next = next_round_ms(now, c.interval);
		}
	}
}
