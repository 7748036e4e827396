/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The YAML files (rules, service config) as a tree of nodes that keep their
 * line and column (libyaml's event marks), each problem found in one
 * collected with its position (util/problems.h).
 */
#ifndef SL_UTIL_YAML_DOC_H
#define SL_UTIL_YAML_DOC_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "util/problems.h"

/* A file read into memory is capped: 16 MiB is far past SL_MAX_RULES. */
#define SL_YAML_MAX_FILE	(16u << 20)
enum sl_ynode_type { SL_YNODE_SCALAR, SL_YNODE_SEQ, SL_YNODE_MAP };

struct sl_ynode {
	enum sl_ynode_type type;
	unsigned line, column;	/* 1-based */
	char *text;		/* scalars: NUL-terminated, no NUL inside */
	bool plain;		/* scalars: unquoted (an empty plain one is null) */
	unsigned nr;		/* items (seq) or key/value pairs (map) */
	struct sl_ynode **kids;	/* seq: nr items; map: key, value, key, ... */
	size_t cap;
	bool pending;		/* maps: a key waits for its value */
};

/* Parse BUF (need not be NUL-terminated) into one document. On a YAML
 * syntax error, an alias, a second document or nesting deeper than 32 the
 * problem is added and -EINVAL returned (a NUL inside a value is added as
 * a problem too, the tree still returned); a file with no document (empty,
 * white space or comments) gives 0 and *root NULL. -ENOMEM when memory
 * runs out.
 */
int sl_yaml_parse(const char *buf, size_t len, struct sl_problems *pb,
		  struct sl_ynode **root);
void sl_yaml_free(struct sl_ynode *n);
/* A whole file's document, as its loader starts: the problems reset for
 * NAME, BUF parsed, and a file with no document (empty, white space or
 * comments) a problem of its own at 1:1 saying IF_EMPTY (what the file
 * should hold). 0 with *root set, or -EINVAL / -ENOMEM.
 */
int sl_yaml_parse_document(const char *name, const char *buf, size_t len,
			   const char *if_empty, struct sl_problems *pb,
			   struct sl_ynode **root);

/* Read PATH (at most SL_YAML_MAX_FILE); a problem and -errno if not. */
int sl_yaml_read_file(const char *path, char **buf, size_t *len,
		      struct sl_problems *pb);

/* A loader's parser of a whole buffer into OUT (the config, a rule set). */
typedef int (*sl_yaml_buffer_fn)(const char *name, const char *buf,
				 size_t len, void *out,
				 struct sl_problems *pb);

/* Read PATH and hand it to PARSE; a file that cannot be read is a problem
 * of PATH too.
 */
int sl_yaml_parse_file(const char *path, sl_yaml_buffer_fn parse, void *out,
		       struct sl_problems *pb);


/* What a reader needs: where problems go, and under which rule (or NULL). */
struct sl_yctx {
	struct sl_problems *pb;
	const char *rule;
};

void sl_yaml_bad(const struct sl_yctx *c, const struct sl_ynode *at,
		 const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Every key of MAP must be one of KNOWN (NULL-terminated) and appear once:
 * each unknown and repeated key is a problem at its own position. Returns
 * false when MAP is not a mapping (reported as FIELD).
 */
bool sl_yaml_check_keys(const struct sl_yctx *c, const struct sl_ynode *map,
			const char *field, const char *const *known);
/* The value of KEY in MAP (its first), or NULL. */
const struct sl_ynode *sl_yaml_get(const struct sl_ynode *map, const char *key);

/* Typed reads of a value; each reports its own problem (naming FIELD and
 * what it accepts) and returns false on a wrong value.
 */
bool sl_yaml_text(const struct sl_yctx *c, const struct sl_ynode *n,
		  const char *field, size_t max_len, const char **out);
bool sl_yaml_uint(const struct sl_yctx *c, const struct sl_ynode *n,
		  const char *field, uint64_t min, uint64_t max, uint64_t *out);
bool sl_yaml_bool(const struct sl_yctx *c, const struct sl_ynode *n,
		  const char *field, bool *out);
/* One of NAME(0) .. NAME(COUNT - 1) (sl_protocol_name, ...): *out is
 * the index of the match.
 */
bool sl_yaml_enum(const struct sl_yctx *c, const struct sl_ynode *n,
		  const char *field, const char *(*name)(unsigned),
		  unsigned count, unsigned *out);

#endif /* SL_UTIL_YAML_DOC_H */
