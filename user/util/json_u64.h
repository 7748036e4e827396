/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A __u64 counter into a JSON object, the one way every command's output
 * and the lower layers (the build record, the lists) write one.
 */
#ifndef SL_UTIL_JSON_U64_H
#define SL_UTIL_JSON_U64_H

#include <json-c/json.h>
#include <linux/types.h>

void sl_json_add_u64(json_object *o, const char *key, __u64 v);

#endif /* SL_UTIL_JSON_U64_H */
