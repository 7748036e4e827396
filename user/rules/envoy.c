// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rules/envoy.h"

static const char *const envoy_keys[] = {
	"domain", "descriptor", "client_key", NULL,
};
static const char *const entry_keys[] = { "key", "value", NULL };

static void read_entry(const struct sl_yctx *c, const struct sl_ynode *n,
		       struct sl_envoy_entry *e)
{
	const struct sl_ynode *v;
	const char *text;

	if (!sl_yaml_check_keys(c, n, "envoy.descriptor", entry_keys))
		return;
	if (!(v = sl_yaml_get(n, "key")))
		sl_yaml_bad(c, n, "envoy.descriptor", "each entry needs 'key': the descriptor_key Envoy's action sends (remote_address, generic_key, a header's)");
	else if (sl_yaml_text(c, v, "envoy.descriptor.key", SL_ENVOY_KEY_MAX,
			      &text)) {
		if (!*text)
			sl_yaml_bad(c, v, "envoy.descriptor.key", "empty");
		snprintf(e->key, sizeof(e->key), "%s", text);
	}
	if ((v = sl_yaml_get(n, "value")) &&
	    sl_yaml_text(c, v, "envoy.descriptor.value", SL_ENVOY_VALUE_MAX,
			 &text)) {
		snprintf(e->value, sizeof(e->value), "%s", text);
		e->has_value = true;
	}
}

/* client_key: the entry named, else the only entry; an entry with a
 * fixed value makes every call one client (one count for all)
 */
static void read_client_key(const struct sl_yctx *c, const struct sl_ynode *n,
			    struct sl_envoy_match *m)
{
	const struct sl_ynode *v = sl_yaml_get(n, "client_key");
	const char *text;
	unsigned i;

	if (!v) {
		if (m->nr_entries > 1)
			sl_yaml_bad(c, n, "envoy.client_key", "required with more than one entry: the key of the entry whose value is the client");
		return;
	}
	if (!sl_yaml_text(c, v, "envoy.client_key", SL_ENVOY_KEY_MAX, &text))
		return;
	for (i = 0; i < m->nr_entries; i++)
		if (!strcmp(m->entries[i].key, text)) {
			m->client_entry = i;
			return;
		}
	sl_yaml_bad(c, v, "envoy.client_key", "'%s' is not the key of an entry of envoy.descriptor",
		    text);
}

int sl_envoy_read(const struct sl_yctx *c, const struct sl_ynode *n,
		  struct sl_envoy_match **out)
{
	unsigned before = c->pb->total, i, j;
	const struct sl_ynode *v, *list;
	struct sl_envoy_match *m;
	const char *text;

	*out = NULL;
	if (!sl_yaml_check_keys(c, n, "envoy", envoy_keys))
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (!(v = sl_yaml_get(n, "domain")))
		sl_yaml_bad(c, n, "envoy.domain", "required: the domain of Envoy's rate limit filter");
	else if (sl_yaml_text(c, v, "envoy.domain", SL_ENVOY_DOMAIN_MAX, &text)) {
		if (!*text)
			sl_yaml_bad(c, v, "envoy.domain", "empty");
		snprintf(m->domain, sizeof(m->domain), "%s", text);
	}
	list = sl_yaml_get(n, "descriptor");
	if (!list || list->type != SL_YNODE_SEQ || !list->nr ||
	    list->nr > SL_ENVOY_MAX_ENTRIES) {
		sl_yaml_bad(c, list ? list : n, "envoy.descriptor", "expected a list of 1 to %u entries ([{key: remote_address}, {key: path, value: /login}])",
			    SL_ENVOY_MAX_ENTRIES);
	} else {
		for (i = 0; i < list->nr; i++)
			read_entry(c, list->kids[i], &m->entries[i]);
		m->nr_entries = list->nr;
		for (i = 0; i < m->nr_entries; i++)
			for (j = 0; j < i; j++)
				if (m->entries[i].key[0] &&
				    !strcmp(m->entries[i].key, m->entries[j].key))
					sl_yaml_bad(c, list->kids[i], "envoy.descriptor.key", "'%s' twice: each entry's key once",
						    m->entries[i].key);
		read_client_key(c, n, m);
	}
	if (c->pb->total != before) {
		free(m);
		return 0;
	}
	*out = m;
	return 0;
}

bool sl_envoy_matches(const struct sl_envoy_match *m, const char *domain,
		      const char *const *keys, const char *const *values,
		      size_t nr)
{
	size_t i;

	if (nr != m->nr_entries || strcmp(domain, m->domain))
		return false;
	for (i = 0; i < nr; i++) {
		const struct sl_envoy_entry *e = &m->entries[i];

		if (strcmp(keys[i], e->key) ||
		    (e->has_value && strcmp(values[i], e->value)))
			return false;
	}
	return true;
}
