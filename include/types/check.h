/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SL_TYPES_CHECK_H
#define SL_TYPES_CHECK_H

#include "types/common.h"
#include "types/state.h"
#include "types/sync.h"

/* Input of the sl_check program (BPF_PROG_TEST_RUN only, never attached):
 * count one request for a key under a rule, with the kernel's own code.
 * It answers XDP_PASS (accepted), XDP_DROP (over the limit) or
 * XDP_ABORTED (no such rule: the rule set changed; read it again).
 */
#define SL_CHECK_MAGIC		0x534c4332	/* "SLC2": with units */
#define SL_CHECK_RAW_KEY	1	/* addr is the key itself: no mask */

struct sl_check_req {
	__u32 magic;
	__u32 position;		/* the rule's priority position */
	__u32 rules_epoch;	/* of the rule set the position is from */
	__u16 rule_id;
	__u16 flags;		/* SL_CHECK_* */
	struct sl_addr addr;	/* client address, or a hashed string key */
	__u32 units;		/* the request's cost, >= 1: it fits
				 * whole or is refused whole */
	__u32 pad;
};

/* What sl_check writes after its request when the test run's packet has
 * room (struct sl_check_msg): the client as the decision left it, so
 * that the service answers with one bpf() call, not a map lookup or more
 * after it. sliding-log's state is too large to copy: its view is read
 * from the map, as is a client without a state (on probation).
 */
#define SL_CHECK_HAS_STATE	1	/* state: the client's */
#define SL_CHECK_HAS_SYNC	2	/* sync: the layout (not local) */
#define SL_CHECK_HAS_PEERS	4	/* peers: the client's peer view
					 * (under a layout, none: no peer
					 * counted it) */
#define SL_CHECK_HAS_EXEMPT	8	/* the rule exempts the address:
					 * nothing counted, nothing copied */

struct sl_check_reply {
	__u64 now_ms;		/* the decision's clock (TAI, or the
				 * model's) */
	__u32 has;		/* SL_CHECK_HAS_* */
	__u32 pad;
	struct sl_sync_conf sync;
	struct sl_peer_view peers;
	union {
		/* sliding, fixed, token-bucket */
		struct sl_client client;
		/* sliding-plain, sliding-counter */
		struct sl_client_plain plain;
	} state;
};

/* The test run's packet: the request, and room for the reply. */
struct sl_check_msg {
	struct sl_check_req req;
	struct sl_check_reply reply;
};

#endif /* SL_TYPES_CHECK_H */
