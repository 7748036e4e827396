/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A record userspace keeps beside the pinned maps: one value in a
 * one-entry array pinned at PATH (the build that loaded the programs,
 * instance/build_id.c; the running service's state, service/state.c). The
 * kernel program never reads it. A pinned record of another size (an
 * older build's layout) is taken as absent and replaced at the next
 * write.
 */
#ifndef SL_INSTANCE_PINNED_RECORD_H
#define SL_INSTANCE_PINNED_RECORD_H

#include <stddef.h>

/* Write VAL (SIZE bytes) to the record at PATH, creating and pinning it
 * as map NAME first if there is none of this size. 0 or -errno.
 */
int sl_pinned_record_write(const char *path, const char *name,
			   const void *val, size_t size);
/* Read the record at PATH into VAL (zeroed first). 0, -ENOENT when there
 * is none of this size, or -errno.
 */
int sl_pinned_record_read(const char *path, void *val, size_t size);
/* The record's map at PATH, open (a process that writes it after it can
 * no longer open the pin): a descriptor, -ESTALE when its values are not
 * SIZE bytes, or -errno.
 */
int sl_pinned_record_open(const char *path, size_t size);

#endif /* SL_INSTANCE_PINNED_RECORD_H */
