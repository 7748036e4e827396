/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A config field that names a secret file (the Redis password, the API
 * token): the config names the file, never the secret, so the config can
 * be shown, versioned and world-readable while the secret is not.
 */
#ifndef SL_UTIL_YAML_SECRET_H
#define SL_UTIL_YAML_SECRET_H

#include <stddef.h>
#include "util/yaml_doc.h"

/* The one line of a secret file (the Redis password, the API token) into
 * OUT (SIZE bytes with its NUL), the file checked as sl_secret_open()
 * does (util/secret_file.h). The length, or 0 (reported at FIELD).
 */
size_t sl_yaml_secret_line(const struct sl_yctx *c, const struct sl_ynode *v,
			   const char *field, const char *path, char *out,
			   size_t size);

#endif /* SL_UTIL_YAML_SECRET_H */
