/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The commands that change the pinned instance (attach, detach, rules
 * apply, reset) take the writers' lock, and leave alone what a running
 * service manages: it would go on believing its config while its rules or
 * devices were someone else's. --force writes anyway; the service notices
 * and says so (its log, status).
 */
#ifndef SL_CLI_WRITE_GUARD_H
#define SL_CLI_WRITE_GUARD_H

#include <stdbool.h>

/* Take the writers' lock; with a service running, refuse (the error names
 * its config and 'slicelimit reload') unless FORCE. 0, or -errno with the
 * lock not held (reported).
 */
int sl_write_begin(const char *what, bool force);
/* The same for a write of the rules: the error names the rule file the
 * service applies, the one to change.
 */
int sl_write_begin_rules(const char *what, bool force);
void sl_write_end(void);

#endif /* SL_CLI_WRITE_GUARD_H */
