/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A check decided by this node's kernel: the request runs through the
 * kernel's sl_check program (BPF_PROG_TEST_RUN), so it is decided by the
 * same code on the same client state as packets. service/check.c calls it
 * when no central store is attached, and when the store cannot answer.
 */
#ifndef SL_SERVICE_CHECK_LOCAL_H
#define SL_SERVICE_CHECK_LOCAL_H

#include "service/check.h"

/* sl_check's contract (service/check.h), decided in the kernel; out's
 * decision is left to the caller.
 */
int sl_check_kernel(struct sl_checker *c, const char *rule, const char *key,
		    __u32 cost, struct sl_check_result *out);

/* Read the rules (and the sync layout) again when the kernel's epoch moved
 * or the service wrote the layout. ASK: look at the epoch first. Under the
 * checker's rules_lock; 0 or -errno.
 */
int sl_checker_refresh_rules(struct sl_checker *c, bool ask);

#endif /* SL_SERVICE_CHECK_LOCAL_H */
