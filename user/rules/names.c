// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The names a rule file spells a rule's protocol, unit, action and
 * algorithm with, and `rules list` prints.
 */
#include "util/parse.h"
#include "rules/rules.h"

static const char *const protocol_names[] = { "any", "tcp", "udp", "icmp" };
static const char *const unit_names[] = { "packets", "syn", "bytes" };
static const char *const action_names[] = { "drop", "shadow" };
static const char *const algorithm_names[] = {
	"sliding", "sliding-plain", "fixed", "token-bucket", "sliding-log",
	"sliding-counter",
};

#define NAME_OF(table, v) \
	sl_name_of(table, sizeof(table) / sizeof(table[0]), v)

const char *sl_protocol_name(unsigned v) { return NAME_OF(protocol_names, v); }
const char *sl_unit_name(unsigned v) { return NAME_OF(unit_names, v); }
const char *sl_action_name(unsigned v) { return NAME_OF(action_names, v); }
const char *sl_algorithm_name(unsigned v) { return NAME_OF(algorithm_names, v); }
