/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Counting a client across nodes, for a caller that wants all of it: the
 * peer view's tally (include/peer/view.h; each algorithm's own in its
 * include/algo/ header), bounded's room and shares (peer/bounded.h), the
 * merge of peers' slices (peer/merge.h) and the Retry-After walk
 * (peer/accept_at.h).
 */
#ifndef SL_PEER_H
#define SL_PEER_H

#include "sl_algo.h"
#include "peer/view.h"
#include "peer/bounded.h"
#include "peer/merge.h"
#include "peer/accept_at.h"

#endif /* SL_PEER_H */
