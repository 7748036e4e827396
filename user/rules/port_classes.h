/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Port classes: each port space cut at every rule's range ends, each piece
 * a class holding the rules that match it. The kernel looks a packet's
 * port up in the class table, then the class's rules.
 */
#ifndef SL_RULES_PORT_CLASSES_H
#define SL_RULES_PORT_CLASSES_H

#include <stdbool.h>
#include "slicelimit.h"

/* The port spaces: TCP and UDP have ports; ICMP and every other protocol
 * are one slot each.
 */
enum sl_port_space {
	SL_PORT_SPACE_TCP,
	SL_PORT_SPACE_UDP,
	SL_PORT_SPACE_ICMP,
	SL_PORT_SPACE_OTHER,
	SL_PORT_SPACES,
};

/* Does rule R restrict ports (anything but 0-65535)? */
bool sl_rule_has_ports(const struct sl_rule *r);
/* Does rule R apply to port space SPACE? A rule of protocol any with
 * ports matches TCP and UDP only.
 */
bool sl_rule_in_port_space(const struct sl_rule *r, enum sl_port_space space);

struct sl_port_tables {
	__u32 *slot_class;		/* SL_PORT_SLOTS */
	struct sl_bitmap *classes;	/* SL_MAX_CLASSES; 0 stays empty */
	unsigned nr_classes;
};

/* The class of every port slot and the rules of every class, for the NR
 * RULES in priority order. 0, -ENOMEM or -E2BIG.
 */
int sl_port_tables_build(const struct sl_rule *rules, unsigned nr,
			 struct sl_port_tables *t);

#endif /* SL_RULES_PORT_CLASSES_H */
