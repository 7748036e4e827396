/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The counting and decision algorithms, for a caller that wants them all:
 * each algorithm is one header under include/algo/ (its tally, charge, peer
 * tally and sync pieces), what they share is include/algo/common.h, and
 * include/algo/dispatch.h picks one by the rule's algorithm.
 */
#ifndef SL_ALGO_H
#define SL_ALGO_H

#include "algo/dispatch.h"

#endif /* SL_ALGO_H */
