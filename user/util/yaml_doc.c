// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libyaml's event stream built into a small tree whose every node keeps
 * its line and column, and the typed reads the rule and config readers
 * share. libcyaml was used before: it stops at the first problem, says it
 * in its own words and keeps no positions, so the lines had to be guessed
 * from its log text. Here each problem is found where it is.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "util/grow.h"
#include "util/parse.h"
#include "util/yaml_doc.h"

/* deeper than any rule or config file; bounds the stack and the walks */
#define SL_YAML_MAX_DEPTH	32

/* ---- the tree ---- */

void sl_yaml_free(struct sl_ynode *n)
{
	unsigned i, kids;

	if (!n)
		return;
	kids = n->type == SL_YNODE_MAP ? 2 * n->nr + n->pending : n->nr;
	for (i = 0; i < kids; i++)
		sl_yaml_free(n->kids[i]);
	free(n->kids);
	free(n->text);
	free(n);
}

static struct sl_ynode *new_node(enum sl_ynode_type type, const yaml_mark_t *m)
{
	struct sl_ynode *n = calloc(1, sizeof(*n));

	if (n) {
		n->type = type;
		n->line = m->line + 1;
		n->column = m->column + 1;
	}
	return n;
}

static int add_kid(struct sl_ynode *parent, struct sl_ynode *kid)
{
	unsigned used = parent->type == SL_YNODE_MAP ?
			2 * parent->nr + parent->pending : parent->nr;

	if (sl_grow((void **)&parent->kids, &parent->cap, used + 1,
		    sizeof(*parent->kids)))
		return -ENOMEM;
	parent->kids[used] = kid;
	/* a map's pair is complete when its value arrives */
	if (parent->type == SL_YNODE_MAP && !parent->pending) {
		parent->pending = true;
	} else {
		parent->pending = false;
		parent->nr++;
	}
	return 0;
}

/* The last line of BUF that holds text, counted as libyaml counts: \n,
 * \r\n and \r each end a line.
 */
static unsigned last_line(const char *buf, size_t len)
{
	unsigned line = 1;
	size_t i;

	for (i = 0; i + 1 < len; i++)
		if (buf[i] == '\n' || (buf[i] == '\r' && buf[i + 1] != '\n'))
			line++;
	return line;
}

/* Where libyaml found the syntax error. A construct left open at the end
 * of the input (a file cut in the middle of a key) is marked past the
 * last line; where that construct began is the line to fix.
 */
static void syntax_problem(const yaml_parser_t *p, const char *buf, size_t len,
			   struct sl_problems *pb)
{
	const yaml_mark_t *m = &p->problem_mark;

	if (p->context && m->line + 1 > last_line(buf, len))
		m = &p->context_mark;
	if (p->error == YAML_MEMORY_ERROR)
		pb->oom = true;
	/* libyaml's problem is a fixed phrase naming what it expected */
	sl_problem_add(pb, m->line + 1, m->column + 1, NULL, NULL,
		       "not valid YAML: %s (check the indentation, the ':' after each field, brackets and quotes)",
		       p->problem ? p->problem : "unreadable");
}

/* The tree as it is built from the parser's events: the root, and the
 * collections open around the next node.
 */
struct tree_build {
	struct sl_ynode *stack[SL_YAML_MAX_DEPTH];
	struct sl_ynode *doc;
	int top;		/* the innermost open collection, -1: none */
	int docs;
};

static struct sl_ynode *scalar_node(const yaml_event_t *ev,
				    struct sl_problems *pb)
{
	struct sl_ynode *n = new_node(SL_YNODE_SCALAR, &ev->start_mark);

	if (!n)
		return NULL;
	n->text = malloc(ev->data.scalar.length + 1);
	if (!n->text) {
		free(n);
		return NULL;
	}
	memcpy(n->text, ev->data.scalar.value, ev->data.scalar.length);
	n->text[ev->data.scalar.length] = '\0';
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	if (strlen(n->text) != ev->data.scalar.length)
		sl_problem_add(pb, n->line, n->column, NULL, NULL,
			       "a NUL character inside a value");
	return n;
}

/* N (NULL: out of memory) into the tree: the root, or the next kid of the
 * innermost open collection; a collection is then the innermost.
 */
static int add_node(struct tree_build *t, struct sl_ynode *n)
{
	if (!n)
		return -ENOMEM;
	if (t->top < 0) {
		t->doc = n;
	} else if (add_kid(t->stack[t->top], n)) {
		sl_yaml_free(n);
		return -ENOMEM;
	}
	if (n->type != SL_YNODE_SCALAR)
		t->stack[++t->top] = n;
	return 0;
}

/* One parser event into the tree: 0 to go on, 1 at the end of the input,
 * or -errno (a problem of the file is in *pb).
 */
static int take_event(struct tree_build *t, const yaml_event_t *ev,
		      struct sl_problems *pb)
{
	unsigned line = ev->start_mark.line + 1, col = ev->start_mark.column + 1;

	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		return 1;
	case YAML_DOCUMENT_START_EVENT:
		if (++t->docs > 1) {
			sl_problem_add(pb, line, col, NULL, NULL,
				       "a second YAML document ('---'): a file holds one");
			return -EINVAL;
		}
		return 0;
	case YAML_ALIAS_EVENT:
		/* aliases would let a few bytes expand to a huge file */
		sl_problem_add(pb, line, col, NULL, NULL,
			       "aliases (*%s) are not supported: write the value out",
			       (char *)ev->data.alias.anchor);
		return -EINVAL;
	case YAML_SCALAR_EVENT:
		return add_node(t, scalar_node(ev, pb));
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (t->top + 1 >= SL_YAML_MAX_DEPTH) {
			sl_problem_add(pb, line, col, NULL, NULL,
				       "nested deeper than %d levels",
				       SL_YAML_MAX_DEPTH);
			return -EINVAL;
		}
		return add_node(t, new_node(ev->type == YAML_MAPPING_START_EVENT ?
					    SL_YNODE_MAP : SL_YNODE_SEQ,
					    &ev->start_mark));
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		t->top--;
		return 0;
	default:
		return 0;
	}
}

int sl_yaml_parse(const char *buf, size_t len, struct sl_problems *pb,
		  struct sl_ynode **root)
{
	struct tree_build t = { .top = -1 };
	yaml_parser_t parser;
	yaml_event_t ev;
	int err = 0;

	*root = NULL;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!err) {
		if (!yaml_parser_parse(&parser, &ev)) {
			syntax_problem(&parser, buf, len, pb);
			err = parser.error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;
			break;
		}
		err = take_event(&t, &ev, pb);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (err == 1) {
		*root = t.doc;
		return 0;
	}
	if (err == -ENOMEM)
		pb->oom = true;
	sl_yaml_free(t.doc);
	return err;
}

int sl_yaml_parse_document(const char *name, const char *buf, size_t len,
			   const char *if_empty, struct sl_problems *pb,
			   struct sl_ynode **root)
{
	int err;

	sl_problems_init(pb, name);
	err = sl_yaml_parse(buf, len, pb, root);
	if (err)
		return err;
	if (!*root) {
		sl_problem_add(pb, 1, 1, NULL, NULL, "%s", if_empty);
		return -EINVAL;
	}
	return 0;
}

int sl_yaml_read_file(const char *path, char **buf, size_t *len,
		      struct sl_problems *pb)
{
	FILE *f = fopen(path, "r");
	int err = 0;

	*buf = NULL;
	*len = 0;
	if (!f) {
		err = -errno;
		sl_problem_add(pb, 0, 0, NULL, NULL, "cannot read: %s",
			       strerror(errno));
		return err;
	}
	*buf = malloc(SL_YAML_MAX_FILE);
	if (!*buf) {
		pb->oom = true;
		err = -ENOMEM;
		goto out;
	}
	*len = fread(*buf, 1, SL_YAML_MAX_FILE, f);
	if (ferror(f)) {
		err = -EIO;
		sl_problem_add(pb, 0, 0, NULL, NULL, "cannot read: %s",
			       strerror(EIO));
	} else if (!feof(f) && fgetc(f) != EOF) {
		err = -EFBIG;
		sl_problem_add(pb, 0, 0, NULL, NULL, "larger than %u MiB",
			       SL_YAML_MAX_FILE >> 20);
	}
out:
	fclose(f);
	if (err) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return err;
}

/* ---- typed reads ---- */

void sl_yaml_bad(const struct sl_yctx *c, const struct sl_ynode *at,
		 const char *field, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sl_problem_add(c->pb, at ? at->line : 0, at ? at->column : 0, c->rule,
		       field, "%s", msg);
}

static bool is_null(const struct sl_ynode *n)
{
	return n->type == SL_YNODE_SCALAR && n->plain &&
	       (!n->text[0] || !strcmp(n->text, "~") || !strcmp(n->text, "null"));
}

static const char *kind(const struct sl_ynode *n)
{
	if (n->type == SL_YNODE_MAP)
		return "a mapping";
	if (n->type == SL_YNODE_SEQ)
		return "a list";
	return is_null(n) ? "nothing" : "text";
}

/* What was found, for a message: 'the text' (cut at 40) or its kind. */
static const char *shown(const struct sl_ynode *n, char *buf, size_t len)
{
	if (n->type != SL_YNODE_SCALAR || is_null(n))
		return kind(n);
	snprintf(buf, len, "'%.40s%s'", n->text, strlen(n->text) > 40 ? "..." : "");
	return buf;
}

/* BUF gets ", "-separated NAMES; cut short rather than overrun. */
static void append(char *buf, size_t size, const char *name)
{
	size_t used = strlen(buf);

	if (used + 1 < size)
		snprintf(buf + used, size - used, "%s%s", used ? ", " : "", name);
}

const struct sl_ynode *sl_yaml_get(const struct sl_ynode *map, const char *key)
{
	unsigned i;

	if (!map || map->type != SL_YNODE_MAP)
		return NULL;
	for (i = 0; i < map->nr; i++) {
		const struct sl_ynode *k = map->kids[2 * i];

		if (k->type == SL_YNODE_SCALAR && !strcmp(k->text, key))
			return map->kids[2 * i + 1];
	}
	return NULL;
}

/* Edits (insert, delete, change a character) from A to B, capped at 3:
 * a typo of a field name is one or two.
 */
static unsigned edits(const char *a, const char *b)
{
	unsigned prev[33], cur[33], i, j, la = strlen(a), lb = strlen(b);

	if (la > 32 || lb > 32)
		return 3;
	for (j = 0; j <= lb; j++)
		prev[j] = j;
	for (i = 1; i <= la; i++) {
		cur[0] = i;
		for (j = 1; j <= lb; j++) {
			unsigned best = prev[j - 1] + (a[i - 1] != b[j - 1]);

			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			cur[j] = best;
		}
		memcpy(prev, cur, sizeof(prev));
	}
	return prev[lb] < 3 ? prev[lb] : 3;
}

bool sl_yaml_check_keys(const struct sl_yctx *c, const struct sl_ynode *map,
			const char *field, const char *const *known)
{
	char list[512] = "";
	unsigned i, j;

	if (map->type != SL_YNODE_MAP) {
		sl_yaml_bad(c, map, field, "expected a mapping (FIELD: VALUE lines), not %s",
			    kind(map));
		return false;
	}
	for (i = 0; known[i]; i++)
		append(list, sizeof(list), known[i]);
	for (i = 0; i < map->nr; i++) {
		const struct sl_ynode *k = map->kids[2 * i];
		char name[64];

		if (k->type != SL_YNODE_SCALAR) {
			sl_yaml_bad(c, k, field, "a key must be a plain name, not %s",
				    kind(k));
			continue;
		}
		snprintf(name, sizeof(name), "%s%s%.40s", field ? field : "",
			 field ? "." : "", k->text);
		for (j = 0; known[j] && strcmp(known[j], k->text); j++)
			;
		if (!known[j]) {
			const char *near = NULL;
			unsigned best = 3;

			for (j = 0; known[j]; j++)
				if (edits(k->text, known[j]) < best) {
					best = edits(k->text, known[j]);
					near = known[j];
				}
			if (near)
				sl_yaml_bad(c, k, name, "unknown field: did you mean '%s'?",
					    near);
			else
				sl_yaml_bad(c, k, name, "unknown field: the fields here are %s",
					    list);
			continue;
		}
		for (j = 0; j < i; j++) {
			const struct sl_ynode *prev = map->kids[2 * j];

			if (prev->type == SL_YNODE_SCALAR &&
			    !strcmp(prev->text, k->text)) {
				sl_yaml_bad(c, k, name, "given twice (first on line %u)",
					    prev->line);
				break;
			}
		}
	}
	return true;
}

bool sl_yaml_text(const struct sl_yctx *c, const struct sl_ynode *n,
		  const char *field, size_t max_len, const char **out)
{
	if (n->type != SL_YNODE_SCALAR || is_null(n)) {
		sl_yaml_bad(c, n, field, "expected text, not %s", kind(n));
		return false;
	}
	if (strlen(n->text) > max_len) {
		sl_yaml_bad(c, n, field, "longer than %zu characters", max_len);
		return false;
	}
	*out = n->text;
	return true;
}

bool sl_yaml_uint(const struct sl_yctx *c, const struct sl_ynode *n,
		  const char *field, uint64_t min, uint64_t max, uint64_t *out)
{
	char buf[64];

	if (n->type == SL_YNODE_SCALAR && !sl_parse_uint(n->text, min, max, out))
		return true;
	sl_yaml_bad(c, n, field, "expected a whole number from %llu to %llu, not %s",
		    (unsigned long long)min, (unsigned long long)max,
		    shown(n, buf, sizeof(buf)));
	return false;
}

bool sl_yaml_bool(const struct sl_yctx *c, const struct sl_ynode *n,
		  const char *field, bool *out)
{
	char buf[64];

	if (n->type == SL_YNODE_SCALAR &&
	    (!strcmp(n->text, "true") || !strcmp(n->text, "false"))) {
		*out = n->text[0] == 't';
		return true;
	}
	sl_yaml_bad(c, n, field, "expected true or false, not %s",
		    shown(n, buf, sizeof(buf)));
	return false;
}

bool sl_yaml_enum(const struct sl_yctx *c, const struct sl_ynode *n,
		  const char *field, const char *(*name)(unsigned),
		  unsigned count, unsigned *out)
{
	char list[256] = "", buf[64];
	unsigned i;

	if (n->type == SL_YNODE_SCALAR && !sl_parse_name(n->text, name, count, out))
		return true;
	for (i = 0; i < count; i++)
		append(list, sizeof(list), name(i));
	sl_yaml_bad(c, n, field, "expected one of %s, not %s", list,
		    shown(n, buf, sizeof(buf)));
	return false;
}

int sl_yaml_parse_file(const char *path, sl_yaml_buffer_fn parse, void *out,
		       struct sl_problems *pb)
{
	char *buf;
	size_t len;
	int err;

	sl_problems_init(pb, path);
	err = sl_yaml_read_file(path, &buf, &len, pb);
	if (err)
		return err;
	err = parse(path, buf, len, out, pb);
	free(buf);
	return err;
}
