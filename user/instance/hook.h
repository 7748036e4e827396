/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A program onto a device's hook and off it: XDP through libxdp (its
 * dispatcher where it loads), TC as our filter at clsact ingress. What
 * the attach, the detach and the upgrade do to a device, each written
 * once. Errors are reported here, naming DEV; 0 or -errno.
 */
#ifndef SL_INSTANCE_HOOK_H
#define SL_INSTANCE_HOOK_H

#include <stdbool.h>
#include <linux/types.h>
#include "slicelimit.h"

int sl_hook_attach_xdp(int ifindex, const char *dev, int prog_fd,
		       enum sl_attach_mode mode);
/* Quiet: a detach checks the device after (sl_hook_xdp_prog_on). */
int sl_hook_detach_xdp(int ifindex, const char *dev, int prog_fd,
		       enum sl_attach_mode mode);
/* The XDP program on a device, in the mode we attached it in (0: none),
 * or -errno when the device cannot be asked (out of file descriptors...).
 */
long long sl_hook_xdp_prog_on(__u32 ifindex, unsigned mode);
/* The single XDP program OLD_FD swapped for NEW_FD in one step. */
int sl_hook_replace_xdp(__u32 ifindex, const char *dev, unsigned mode,
			int old_fd, int new_fd);

int sl_hook_attach_tc(int ifindex, const char *dev, int prog_fd);
/* Quiet: -ENOENT when our filter is not there. */
int sl_hook_detach_tc(int ifindex);
/* Our TC filter's program swapped for NEW_FD in one step. */
int sl_hook_replace_tc(__u32 ifindex, const char *dev, int new_fd);
bool sl_hook_has_clsact(int ifindex);

#endif /* SL_INSTANCE_HOOK_H */
