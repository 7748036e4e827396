/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Types shared by the BPF programs and userspace: map keys and values,
 * rules, configuration and counters. Plain fixed-size types only, explicit
 * padding, byte order stated per field, so the same bytes mean the same
 * thing on both sides and `bpftool map dump` prints named fields from BTF.
 */
#ifndef SL_SLICELIMIT_H
#define SL_SLICELIMIT_H

#include <linux/types.h>
#include <linux/bpf.h>	/* struct bpf_spin_lock */
#include "types/common.h"
#include "types/rules.h"
#include "types/state.h"
#include "types/lists.h"
#include "types/stats.h"
#include "types/sync.h"
#include "types/check.h"

/* Attached devices, hash sl_devices keyed by ifindex (userspace only). */
enum sl_attach_mode {
	SL_MODE_XDP = 0,	/* native XDP */
	SL_MODE_XDP_GENERIC = 1,
	SL_MODE_TC = 2,		/* TC ingress (clsact) */
};

struct sl_device {
	char name[16];
	__u32 mode;		/* enum sl_attach_mode */
	__u32 prog_id;
};

#endif /* SL_SLICELIMIT_H */
