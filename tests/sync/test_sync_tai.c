// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: sync_fixture instance_fixture */
/*
 * At today's TAI time a 1 s window syncs too (its peer slice numbers are
 * past 2^32).
 *
 * Peer sync end to end through the real BPF object (tests/lib/sync_fixture.h).
 * Expected counts are worked out here from the rule (limit 100 per 10 s)
 * and the layouts' documented arithmetic (include/sl_peer.h), never read
 * back from the code under test. Every test uses clients never seen
 * before and a model time a minute past the previous test's, so nothing
 * carries over.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "slicelimit.h"
#include "state/client_view.h"
#include "util/parse.h"
#include "instance/instance.h"
#include "instance_fixture.h"
#include "instance/instance_maps.h"
#include "replay/request_packet.h"
#include "rules/rules.h"
#include "sl_key.h"
#include "sl_peer.h"
#include "sync/engine.h"
#include "sync/wire.h"
#include "sync_fixture.h"

/* ---- real clocks ------------------------------------------------------------- */

/* TAI ms in mid-2025. A 1 s window has peer slices of 67 ms, so slice
 * numbers are past 2^32 (the slots keep them wrapped, by design); the
 * first-accept time a sender puts on the wire must still be the real one,
 * or a receiver finds it long out of its window and drops the units.
 * Shorter than about 6 s, every window is in this case today.
 */
#define TAI_2025_MS	1750000000000ULL

static void test_one_second_window_at_real_tai_time_synced(void **st)
{
	struct fixture *f = *st;
	struct sl_wire_entry e[SL_WIRE_MAX_ENTRIES];
	struct sl_wire_header h;
	struct sl_rule ra, rb;
	struct sl_addr who = new_client(f);
	struct sl_peer_view v;
	struct dgrams d;
	__u64 t = TAI_2025_MS + (__u64)f->tests * 60000;
	__u64 ps = sl_peer_slice_ms(1000);
	unsigned i, j, entries = 0, first_reject;

	assert_int_equal(ps, 67);
	assert_true(t / ps > UINT32_MAX);
	assert_int_equal(live_rule(&f->a, "sync-1s", &ra), 0);
	assert_int_equal(live_rule(&f->b, "sync-1s", &rb), 0);
	assert_int_equal(send_port(&f->a, &who, 10, t, 20, NULL), 20);
	collect(f->sa, t + 10, &d);
	/* on the wire: the real first accept, t (not a 1970 time from a
	 * wrapped slice number)
	 */
	for (i = 0; i < d.n; i++) {
		assert_int_equal(fx_open(d.msg[i], d.len[i], &h, e), SL_WIRE_OK);
		for (j = 0; j < h.count; j++) {
			if (memcmp(&e[j].addr, &who, sizeof(who)))
				continue;
			entries++;
			if (e[j].start_ms != t)
				fail_msg("entry starts at %llu ms, the first "
					 "accept was at %llu", ULL(e[j].start_ms),
					 ULL(t));
			assert_int_equal(e[j].units, 20);
		}
	}
	assert_int_equal(entries, 1);
	for (i = 0; i < d.n; i++)
		assert_int_equal(receive(f, d.msg[i], d.len[i], t + 20),
				 SL_SYNC_MERGED);
	assert_int_equal(view_under(f, &rb, &who, &v), 0);
	assert_int_equal(view_sum(&v), 20);
	assert_int_equal(send_port(&f->b, &who, 10, t + 30, LIMIT,
				   &first_reject), LIMIT - 20);
	assert_int_equal(first_reject, LIMIT - 20);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, begin, end)
	const struct CMUnitTest tests[] = {
		T(test_one_second_window_at_real_tai_time_synced),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
