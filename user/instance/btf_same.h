/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Do two BTF types describe the same bytes? What an upgrade asks of a
 * pinned map's value before it keeps the map: a layout changed within the
 * same size (a field renamed, moved or retyped) would otherwise be read
 * with the old bytes.
 */
#ifndef SL_INSTANCE_BTF_SAME_H
#define SL_INSTANCE_BTF_SAME_H

#include <stdbool.h>
#include <bpf/btf.h>

/* Same kind, size, names of structs, unions, enums and members, member
 * offsets and the members' types, through typedefs and qualifiers.
 */
bool sl_btf_same_type(const struct btf *a, __u32 ida, const struct btf *b,
		      __u32 idb);

#endif /* SL_INSTANCE_BTF_SAME_H */
