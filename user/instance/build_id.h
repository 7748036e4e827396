/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which build loaded the pinned programs. The build id is the sha256 of
 * the BPF object compiled into the binary (what `version` prints): two
 * binaries with the same id load the same programs and maps. Whoever loads
 * and pins the programs records its id in a one-entry array map pinned as
 * SL_BUILD_PIN, created by user space like sl_service (the kernel never
 * reads it), so that `status` can say when the running programs are from
 * another build, and the service's start can swap them (sl_upgrade_pinned).
 */
#ifndef SL_INSTANCE_BUILD_ID_H
#define SL_INSTANCE_BUILD_ID_H

#include <json-c/json.h>
#include <stdbool.h>
#include <linux/types.h>
#include "slicelimit.h"

#define SL_BUILD_PIN	SL_PIN_DIR "/sl_build"
#define SL_BUILD_ID_LEN	32	/* sha256 */

struct sl_build_rec {
	__u8 id[SL_BUILD_ID_LEN];	/* the build that loaded the programs */
	/* the last upgrade, in place of the programs of another build */
	__u8 from[SL_BUILD_ID_LEN];	/* all zero: unknown (pins older than
					 * the build record) */
	__u64 upgraded_ms;		/* TAI; 0: loaded fresh, never upgraded */
	__u32 maps_kept;
	__u32 maps_reset;
	char reset_names[256];		/* "sl_a,sl_b": recreated, layout changed */
};

/* This binary's build id. */
void sl_build_id(__u8 id[SL_BUILD_ID_LEN]);
/* Lowercase hex, 2 * SL_BUILD_ID_LEN + 1 bytes. */
const char *sl_build_id_hex(const __u8 id[SL_BUILD_ID_LEN], char *buf);

/* Write rec to the pin, creating it (or replacing one of another layout). */
int sl_build_write(const struct sl_build_rec *rec);
/* 0, or -ENOENT when none is pinned (pins older than the record). */
int sl_build_read(struct sl_build_rec *rec);

/* Which build runs, as `status` shows it: the pinned record (if any), this
 * binary's id, and the age of the last upgrade at one instant.
 */
struct sl_build_status {
	struct sl_build_rec rec;	/* all zero when !known */
	__u8 ours[SL_BUILD_ID_LEN];	/* this binary's build id */
	bool known;			/* a record is pinned */
	bool same_build;		/* ... and it is ours */
	__u64 upgrade_ago_ms;		/* when rec.upgraded_ms */
};

void sl_build_status_read(__u64 now_ms, struct sl_build_status *bs);
/* The "program" object of `status --json`:
 * {"build_id": HEX or null, "this_build_id": HEX, "same_build": BOOL,
 *  "last_upgrade": null or {"from_build_id", "ms_ago", "maps_kept",
 *  "maps_reset": [NAME...]}}
 */
json_object *sl_build_status_to_json(const struct sl_build_status *bs);
/* The same, for people. */
void sl_build_status_print(const struct sl_build_status *bs);

#endif /* SL_INSTANCE_BUILD_ID_H */
