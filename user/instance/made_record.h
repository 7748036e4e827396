/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What an attach made that was not there before it, so that the detach
 * ending its use takes it away again and leaves the host as it found it:
 * the clsact qdisc of a TC device, libxdp's directory on the bpffs. Kept
 * in a pinned record beside the maps (SL_MADE_PIN), as the devices are.
 */
#ifndef SL_INSTANCE_MADE_RECORD_H
#define SL_INSTANCE_MADE_RECORD_H

#include <stdbool.h>
#include "slicelimit.h"

#define SL_MADE_PIN	SL_PIN_DIR "/sl_made"

/* Note that the clsact qdisc of IFINDEX is slicelimit's. */
void sl_made_clsact(int ifindex);
/* Was it? And forget it: the caller takes the qdisc away. */
bool sl_made_take_clsact(int ifindex);

/* libxdp's directory on the bpffs (LIBXDP_BPFFS, else /sys/fs/bpf/xdp). */
const char *sl_xdp_dir(void);
/* Note that slicelimit's attach made it (it was not there before). */
void sl_made_xdp_dir(void);
/* After an XDP detach: remove it if slicelimit made it and it is empty. */
void sl_made_tidy_xdp_dir(void);

#endif /* SL_INSTANCE_MADE_RECORD_H */
