// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdint.h>
#include "util/json_u64.h"

void sl_json_add_u64(json_object *o, const char *key, __u64 v)
{
	json_object_object_add(o, key, json_object_new_int64((int64_t)v));
}
