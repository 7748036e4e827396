// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "instance/btf_same.h"

/* Deeper than any value of the object: a cycle (through a pointer) or a
 * malformed BTF stops here as "different".
 */
#define SL_BTF_MAX_DEPTH	16

static const struct btf_type *skip_mods(const struct btf *btf, __u32 *id)
{
	const struct btf_type *t = btf__type_by_id(btf, *id);

	while (t && (btf_is_typedef(t) || btf_is_mod(t))) {
		*id = t->type;
		t = btf__type_by_id(btf, *id);
	}
	return t;
}

static bool same_name(const struct btf *a, __u32 oa, const struct btf *b,
		      __u32 ob)
{
	const char *na = btf__name_by_offset(a, oa);
	const char *nb = btf__name_by_offset(b, ob);

	return na && nb && !strcmp(na, nb);
}

static bool same(const struct btf *a, __u32 ida, const struct btf *b,
		 __u32 idb, int depth)
{
	const struct btf_type *ta, *tb;
	__u16 i, n;

	if (depth > SL_BTF_MAX_DEPTH)
		return false;
	ta = skip_mods(a, &ida);
	tb = skip_mods(b, &idb);
	if (!ta || !tb)
		return false;
	if (!ida || !idb)	/* void */
		return !ida && !idb;
	if (btf_kind(ta) != btf_kind(tb) || btf_vlen(ta) != btf_vlen(tb))
		return false;
	n = btf_vlen(ta);
	switch (btf_kind(ta)) {
	case BTF_KIND_INT:
		return ta->size == tb->size &&
		       btf_int_encoding(ta) == btf_int_encoding(tb) &&
		       btf_int_offset(ta) == btf_int_offset(tb) &&
		       btf_int_bits(ta) == btf_int_bits(tb);
	case BTF_KIND_PTR:
		return true;	/* a pointer's bytes are an address either way */
	case BTF_KIND_ARRAY:
		return btf_array(ta)->nelems == btf_array(tb)->nelems &&
		       same(a, btf_array(ta)->type, b, btf_array(tb)->type,
			    depth + 1);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		if (ta->size != tb->size || !same_name(a, ta->name_off, b, tb->name_off))
			return false;
		for (i = 0; i < n; i++) {
			const struct btf_member *ma = btf_members(ta) + i;
			const struct btf_member *mb = btf_members(tb) + i;

			if (ma->offset != mb->offset ||
			    !same_name(a, ma->name_off, b, mb->name_off) ||
			    !same(a, ma->type, b, mb->type, depth + 1))
				return false;
		}
		return true;
	case BTF_KIND_ENUM:
		if (ta->size != tb->size)
			return false;
		for (i = 0; i < n; i++) {
			const struct btf_enum *ea = btf_enum(ta) + i;
			const struct btf_enum *eb = btf_enum(tb) + i;

			if (ea->val != eb->val ||
			    !same_name(a, ea->name_off, b, eb->name_off))
				return false;
		}
		return true;
	default:
		/* nothing a map value of ours holds: compare what is sure */
		return ta->size == tb->size;
	}
}

bool sl_btf_same_type(const struct btf *a, __u32 ida, const struct btf *b,
		      __u32 idb)
{
	return same(a, ida, b, idb, 0);
}
