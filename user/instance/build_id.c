// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <sodium.h>
#include "instance/build_id.h"
#include "util/json_u64.h"
#include "instance/pinned_record.h"
#include "slicelimit.skel.h"

void sl_build_id(__u8 id[SL_BUILD_ID_LEN])
{
	size_t len;
	const void *elf = slicelimit_bpf__elf_bytes(&len);

	crypto_hash_sha256(id, elf, len);
}

const char *sl_build_id_hex(const __u8 id[SL_BUILD_ID_LEN], char *buf)
{
	return sodium_bin2hex(buf, 2 * SL_BUILD_ID_LEN + 1, id, SL_BUILD_ID_LEN);
}

int sl_build_write(const struct sl_build_rec *rec)
{
	return sl_pinned_record_write(SL_BUILD_PIN, "sl_build", rec, sizeof(*rec));
}

int sl_build_read(struct sl_build_rec *rec)
{
	return sl_pinned_record_read(SL_BUILD_PIN, rec, sizeof(*rec));
}

static bool all_zero(const __u8 *b, size_t n)
{
	while (n--)
		if (*b++)
			return false;
	return true;
}

void sl_build_status_read(__u64 now_ms, struct sl_build_status *bs)
{
	memset(bs, 0, sizeof(*bs));
	bs->known = !sl_build_read(&bs->rec);
	sl_build_id(bs->ours);
	bs->same_build = bs->known &&
			 !memcmp(bs->rec.id, bs->ours, sizeof(bs->ours));
	if (bs->known && bs->rec.upgraded_ms)
		bs->upgrade_ago_ms = now_ms > bs->rec.upgraded_ms ?
				     now_ms - bs->rec.upgraded_ms : 0;
}

/* The names in rec.reset_names ("sl_a,sl_b", not NUL-terminated when
 * full) as an array: the JSON field, and what the text prints.
 */
static json_object *maps_reset_json(const struct sl_build_rec *rec)
{
	json_object *reset = json_object_new_array();
	char *names, *tok, *save;

	names = strndup(rec->reset_names, sizeof(rec->reset_names));
	for (tok = names ? strtok_r(names, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save))
		json_object_array_add(reset, json_object_new_string(tok));
	free(names);
	return reset;
}

static json_object *upgrade_to_json(const struct sl_build_status *bs)
{
	const struct sl_build_rec *rec = &bs->rec;
	char hex[2 * SL_BUILD_ID_LEN + 1];
	json_object *up = json_object_new_object();

	json_object_object_add(up, "from_build_id",
		all_zero(rec->from, sizeof(rec->from)) ? NULL :
		json_object_new_string(sl_build_id_hex(rec->from, hex)));
	sl_json_add_u64(up, "ms_ago", bs->upgrade_ago_ms);
	sl_json_add_u64(up, "maps_kept", rec->maps_kept);
	json_object_object_add(up, "maps_reset", maps_reset_json(rec));
	return up;
}

json_object *sl_build_status_to_json(const struct sl_build_status *bs)
{
	char hex[2 * SL_BUILD_ID_LEN + 1];
	json_object *o = json_object_new_object();

	json_object_object_add(o, "build_id", bs->known ?
		json_object_new_string(sl_build_id_hex(bs->rec.id, hex)) : NULL);
	json_object_object_add(o, "this_build_id",
		json_object_new_string(sl_build_id_hex(bs->ours, hex)));
	json_object_object_add(o, "same_build",
			       json_object_new_boolean(bs->same_build));
	json_object_object_add(o, "last_upgrade",
		bs->known && bs->rec.upgraded_ms ? upgrade_to_json(bs) : NULL);
	return o;
}

static void upgrade_print(const struct sl_build_status *bs)
{
	const struct sl_build_rec *rec = &bs->rec;
	char hex[2 * SL_BUILD_ID_LEN + 1];
	json_object *reset = maps_reset_json(rec);
	size_t n = json_object_array_length(reset);

	printf("          upgraded %llu ms ago from build %.12s: %u maps kept, %zu reset%s%s\n",
	       (unsigned long long)bs->upgrade_ago_ms,
	       all_zero(rec->from, sizeof(rec->from)) ? "unknown" :
	       sl_build_id_hex(rec->from, hex),
	       rec->maps_kept, n, n ? ": " : "",
	       n ? json_object_to_json_string_ext(reset, JSON_C_TO_STRING_PLAIN) : "");
	json_object_put(reset);
}

void sl_build_status_print(const struct sl_build_status *bs)
{
	char hex[2 * SL_BUILD_ID_LEN + 1];

	printf("program:  build %.12s",
	       bs->known ? sl_build_id_hex(bs->rec.id, hex) : "unknown");
	if (bs->same_build)
		printf(" (this binary's)\n");
	else
		printf("; this binary is build %.12s\n"
		       "          the loaded program is from another build: restart the service or run 'slicelimit reload'\n",
		       sl_build_id_hex(bs->ours, hex));
	if (bs->known && bs->rec.upgraded_ms)
		upgrade_print(bs);
}
