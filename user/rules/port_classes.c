// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Port classes (rules/port_classes.h): the class table of every port
 * slot and the rules bitmap of every class, built from the rules.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rules/bitmap.h"
#include "rules/port_classes.h"

bool sl_rule_has_ports(const struct sl_rule *r)
{
	return r->port_min != 0 || r->port_max != 65535;
}

bool sl_rule_in_port_space(const struct sl_rule *r, enum sl_port_space space)
{
	switch (space) {
	case SL_PORT_SPACE_TCP:
		return r->protocol == SL_PROTO_TCP || r->protocol == SL_PROTO_ANY;
	case SL_PORT_SPACE_UDP:
		return r->protocol == SL_PROTO_UDP || r->protocol == SL_PROTO_ANY;
	case SL_PORT_SPACE_ICMP:
		return (r->protocol == SL_PROTO_ICMP ||
			r->protocol == SL_PROTO_ANY) && !sl_rule_has_ports(r);
	default:
		return r->protocol == SL_PROTO_ANY && !sl_rule_has_ports(r);
	}
}

/* Split each port space at every rule's range ends; each piece is a class.
 * At most 2 * nr + 1 pieces per space, so SL_MAX_CLASSES always suffices.
 */
int sl_port_tables_build(const struct sl_rule *rules, unsigned nr,
			 struct sl_port_tables *t)
{
	static const unsigned base[4] = { SL_SLOT_TCP, SL_SLOT_UDP,
					  SL_SLOT_ICMP, SL_SLOT_OTHER };
	static const unsigned size[4] = { 65536, 65536, 1, 1 };
	char *cut = calloc(65537, 1);
	int space;

	if (!cut)
		return -ENOMEM;
	t->nr_classes = 1;
	for (space = 0; space < 4; space++) {
		unsigned lo, hi, i;

		memset(cut, 0, 65537);
		cut[0] = cut[size[space]] = 1;
		for (i = 0; i < nr; i++) {
			if (!sl_rule_in_port_space(&rules[i], space) ||
			    size[space] == 1)
				continue;
			cut[rules[i].port_min] = 1;
			cut[rules[i].port_max + 1] = 1;
		}
		for (lo = 0; lo < size[space]; lo = hi) {
			struct sl_bitmap bm = {};
			unsigned cls = 0, p;

			for (hi = lo + 1; !cut[hi]; hi++)
				;
			for (i = 0; i < nr; i++)
				if (sl_rule_in_port_space(&rules[i], space) &&
				    (size[space] == 1 ||
				     (rules[i].port_min <= lo &&
				      lo <= rules[i].port_max)))
					sl_bitmap_set(&bm, i);
			if (!sl_bitmap_empty(&bm)) {
				if (t->nr_classes >= SL_MAX_CLASSES) {
					free(cut);
					return -E2BIG;
				}
				cls = t->nr_classes++;
				t->classes[cls] = bm;
			}
			for (p = lo; p < hi; p++)
				t->slot_class[base[space] + p] = cls;
		}
	}
	free(cut);
	return 0;
}
