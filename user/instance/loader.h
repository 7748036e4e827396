/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pinned instance's life, as the commands and the service ask for it:
 * load and pin (instance/load.c), attach (attach.c), detach and unpin
 * (detach.c), upgrade to this build's programs (upgrade.c), and the
 * attach modes' names (hook.c, which holds what each does to a device).
 */
#ifndef SL_INSTANCE_LOADER_H
#define SL_INSTANCE_LOADER_H

#include <stdbool.h>
#include "slicelimit.h"

struct sl_load_opts {
	unsigned clients;	/* sl_clients capacity, 0: default */
};

/* Load and pin the programs and maps once; later calls reuse the pins.
 * *loaded: whether this call loaded them (a caller failing later removes
 * what it made, sl_unpin_if_unused). A failure leaves no pin of its own.
 */
int sl_load_pinned(const struct sl_load_opts *opts, int *xdp_fd, int *tc_fd,
		   bool *loaded);

int sl_attach(const char *dev, enum sl_attach_mode mode,
	      const struct sl_load_opts *opts);
int sl_detach(const char *dev);
int sl_detach_all(void);
/* Remove the pins if no device uses them (a service with no devices). */
int sl_unpin_if_unused(void);
/* Is DEV recorded as attached (by any earlier run)? */
bool sl_is_attached(const char *dev);
/* The same, in maps already open (a service that can no longer open
 * the pins by path once it dropped root).
 */
struct sl_maps;
bool sl_maps_has_device(const struct sl_maps *m, const char *dev);

/* The pinned programs are another build's (the build id recorded in
 * sl_build differs from this binary's, or none is): load this build's,
 * reusing every pinned map whose layout (type, key and value size,
 * max_entries, flags) is unchanged and recreating the others, swap the
 * programs on every recorded device, pin them, record this build. *rec
 * tells what happened (rec->upgraded_ms 0: nothing to do, nothing loaded
 * or this build's already). The client table keeps its size unless
 * opts->clients names one. 0 or -errno; on failure the pins are as they
 * were, unless a device swap failed (reported).
 */
struct sl_build_rec;
int sl_upgrade_pinned(const struct sl_load_opts *opts, struct sl_build_rec *rec);

/* The pinned sl_check program (the HTTP check API), or -errno. */
int sl_open_check_prog(void);

/* Remove everything under SL_PIN_DIR (after the last detach). */
int sl_unpin_all(void);

const char *sl_mode_name(unsigned mode);
int sl_parse_mode(const char *s, enum sl_attach_mode *mode);

#endif /* SL_INSTANCE_LOADER_H */
