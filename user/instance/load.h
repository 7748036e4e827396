/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the load shares with the upgrade, which loads the programs too:
 * where the programs are pinned, pinning them, and the setup of a loaded
 * object. The commands' interface is instance/loader.h.
 */
#ifndef SL_INSTANCE_LOAD_H
#define SL_INSTANCE_LOAD_H

#include "slicelimit.h"

#define SL_PROG_XDP_PIN		SL_PIN_DIR "/prog_xdp"
#define SL_PROG_TC_PIN		SL_PIN_DIR "/prog_tc"
#define SL_PROG_CHECK_PIN	SL_PIN_DIR "/prog_check"

struct slicelimit_bpf;

/* The id of the program behind FD, or -errno. */
int sl_prog_id(int fd);
/* Pin the three programs; `what` names them in the error. A failure
 * unpins the ones this call pinned, in reverse order.
 */
int sl_pin_programs(struct slicelimit_bpf *skel, const char *what);
/* The probation table's seed, once loaded; without it every new key
 * gets a state at once, as before probation (a warning, not a failure).
 */
void sl_init_newcomers(struct slicelimit_bpf *skel);

#endif /* SL_INSTANCE_LOAD_H */
