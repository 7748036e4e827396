// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "util/grow.h"
#include "instance/lists.h"
#include "util/parse.h"
#include "util/json_u64.h"
#include "sl_key.h"

const char *sl_list_name(unsigned kind)
{
	return kind == SL_LISTS_ALLOW ? "allow" :
	       kind == SL_LISTS_BLOCK ? "block" : NULL;
}

unsigned sl_list_kind(const char *name)
{
	if (!strcmp(name, "allow"))
		return SL_LISTS_ALLOW;
	if (!strcmp(name, "block"))
		return SL_LISTS_BLOCK;
	return 0;
}

static int list_fd(const struct sl_maps *m, unsigned kind)
{
	return kind == SL_LISTS_ALLOW ? m->allow_list :
	       kind == SL_LISTS_BLOCK ? m->block_list : -1;
}

static int list_key(struct sl_list_key *k, const struct sl_addr *addr,
		    unsigned len128)
{
	if (len128 > 128)
		return -EINVAL;
	memset(k, 0, sizeof(*k));
	k->prefixlen = len128;
	k->addr = *addr;
	/* the trie keeps what it is given: a key with host bits would
	 * never be found again by the prefix an operator names
	 */
	sl_addr_mask(&k->addr, len128);
	return 0;
}

static void note_key(struct sl_list_note_key *nk, unsigned kind,
		     const struct sl_list_key *k)
{
	memset(nk, 0, sizeof(*nk));
	nk->key = *k;
	nk->kind = kind;
}

static bool list_empty(int fd)
{
	struct sl_list_key k;

	return bpf_map_get_next_key(fd, NULL, &k) != 0;
}

__u8 sl_lists_in_use(const struct sl_maps *m)
{
	__u8 in_use = 0;

	if (m->allow_list >= 0 && !list_empty(m->allow_list))
		in_use |= SL_LISTS_ALLOW;
	if (m->block_list >= 0 && !list_empty(m->block_list))
		in_use |= SL_LISTS_BLOCK;
	return in_use;
}

/* Serialises, within one process, the writes of sl_config's lists bits
 * with a rules apply's config write: the service's HTTP threads and its
 * reload. Between processes the writers' lock does (pin_lock.h).
 */
static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;

void sl_lists_config_lock(void)
{
	pthread_mutex_lock(&config_lock);
}

void sl_lists_config_unlock(void)
{
	pthread_mutex_unlock(&config_lock);
}

/* Tries of a publish that an apply's switch keeps moving under it. */
#define SL_LISTS_PUBLISH_TRIES	8

int sl_lists_publish(const struct sl_maps *m)
{
	struct sl_config cfg;
	__u32 zero = 0, gen, again;
	int tries, err = -EAGAIN;
	__u8 in_use;

	/* The live generation only: an apply writes the idle one's bits
	 * from the maps itself (rules/tables.c). An apply of another
	 * process (rules apply --force beside the service's HTTP thread)
	 * can switch generations meanwhile: the live one is read again
	 * after the write, and the bits written again until it held still.
	 */
	sl_lists_config_lock();
	for (tries = 0; tries < SL_LISTS_PUBLISH_TRIES; tries++) {
		in_use = sl_lists_in_use(m);
		if (bpf_map_lookup_elem(m->active, &zero, &gen)) {
			err = -errno;
			break;
		}
		gen &= 1;
		if (bpf_map_lookup_elem(m->config, &gen, &cfg)) {
			err = -errno;
			break;
		}
		if (sl_config_lists(&cfg) != in_use) {
			sl_config_lists(&cfg) = in_use;
			if (bpf_map_update_elem(m->config, &gen, &cfg, BPF_EXIST)) {
				err = -errno;
				break;
			}
		}
		if (bpf_map_lookup_elem(m->active, &zero, &again)) {
			err = -errno;
			break;
		}
		/* another writer of the lists publishes after its own
		 * change: what it wrote is checked by it the same way
		 */
		if ((again & 1) == gen && sl_lists_in_use(m) == in_use) {
			err = 0;
			break;
		}
	}
	sl_lists_config_unlock();
	return err;
}

int sl_list_add(const struct sl_maps *m, unsigned kind,
		const struct sl_addr *addr, unsigned len128, __u64 for_ms,
		const char *reason, __u64 now_ms)
{
	struct sl_list_entry e = {}, old;
	struct sl_list_note_key nk;
	struct sl_list_note note = {};
	struct sl_list_key k;
	int fd = list_fd(m, kind), err;

	if (fd < 0 || list_key(&k, addr, len128))
		return -EINVAL;
	if (reason && strlen(reason) >= sizeof(note.reason))
		return -ENAMETOOLONG;
	if (reason)
		strcpy(note.reason, reason);
	note.added_ms = now_ms;
	e.expires_ms = for_ms ? now_ms + for_ms : 0;
	if (!bpf_map_lookup_elem(fd, &k, &old))
		e.hits = old.hits;
	/* the note first: an entry the data path can see has its reason */
	note_key(&nk, kind, &k);
	if (bpf_map_update_elem(m->list_notes, &nk, &note, BPF_ANY))
		return errno == E2BIG ? -ENOSPC : -errno;
	if (bpf_map_update_elem(fd, &k, &e, BPF_ANY)) {
		err = errno == E2BIG ? -ENOSPC : -errno;
		bpf_map_delete_elem(m->list_notes, &nk);
		return err;
	}
	return sl_lists_publish(m);
}

int sl_list_remove(const struct sl_maps *m, unsigned kind,
		   const struct sl_addr *addr, unsigned len128)
{
	struct sl_list_note_key nk;
	struct sl_list_key k;
	int fd = list_fd(m, kind), err = 0;

	if (fd < 0 || list_key(&k, addr, len128))
		return -EINVAL;
	if (bpf_map_delete_elem(fd, &k))
		err = -errno;
	note_key(&nk, kind, &k);
	bpf_map_delete_elem(m->list_notes, &nk);
	if (err)
		return err;
	return sl_lists_publish(m);
}

/* Every entry of one list, ended ones too. */
static int read_list(const struct sl_maps *m, unsigned kind,
		     struct sl_list_item **items, size_t *nr, size_t *cap)
{
	struct sl_list_key k, next, *prev = NULL;
	int fd = list_fd(m, kind);

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		struct sl_list_item *it;
		struct sl_list_note_key nk;

		k = next;
		prev = &k;
		if (sl_grow((void **)items, cap, *nr + 1, sizeof(**items)))
			return -ENOMEM;
		it = &(*items)[*nr];
		memset(it, 0, sizeof(*it));
		it->kind = kind;
		it->key = k;
		/* removed between the walk's steps: skipped */
		if (bpf_map_lookup_elem(fd, &k, &it->entry))
			continue;
		note_key(&nk, kind, &k);
		bpf_map_lookup_elem(m->list_notes, &nk, &it->note);
		(*nr)++;
	}
	return errno == ENOENT ? 0 : -errno;
}

static bool ended(const struct sl_list_entry *e, __u64 now_ms)
{
	return e->expires_ms && e->expires_ms <= now_ms;
}

int sl_list_read(const struct sl_maps *m, __u64 now_ms,
		 struct sl_list_item **items, size_t *nr)
{
	size_t cap = 0, i, kept = 0;
	int err;

	*items = NULL;
	*nr = 0;
	err = read_list(m, SL_LISTS_ALLOW, items, nr, &cap);
	if (!err)
		err = read_list(m, SL_LISTS_BLOCK, items, nr, &cap);
	if (err) {
		free(*items);
		*items = NULL;
		*nr = 0;
		return err;
	}
	for (i = 0; i < *nr; i++)
		if (!ended(&(*items)[i].entry, now_ms))
			(*items)[kept++] = (*items)[i];
	*nr = kept;
	return 0;
}

int sl_list_sweep(const struct sl_maps *m, __u64 now_ms, unsigned *removed)
{
	static const unsigned kinds[] = { SL_LISTS_ALLOW, SL_LISTS_BLOCK };
	struct sl_list_item *items = NULL;
	size_t nr = 0, cap = 0, i, j;
	int err = 0;

	*removed = 0;
	for (j = 0; j < 2 && !err; j++)
		err = read_list(m, kinds[j], &items, &nr, &cap);
	for (i = 0; i < nr && !err; i++) {
		struct sl_list_note_key nk;
		struct sl_list_entry now;
		int fd = list_fd(m, items[i].kind);

		if (!ended(&items[i].entry, now_ms))
			continue;
		/* an entry given a new end since the walk read it stays */
		if (bpf_map_lookup_elem(fd, &items[i].key, &now) ||
		    !ended(&now, now_ms))
			continue;
		if (bpf_map_delete_elem(fd, &items[i].key) && errno != ENOENT) {
			err = -errno;
			break;
		}
		note_key(&nk, items[i].kind, &items[i].key);
		bpf_map_delete_elem(m->list_notes, &nk);
		(*removed)++;
	}
	free(items);
	if (err)
		return err;
	return sl_lists_publish(m);
}

int sl_list_stats_read(const struct sl_maps *m, struct sl_list_stats *out)
{
	return sl_percpu_sum_u64(m, m->list_stats, 0, out, sizeof(*out));
}

json_object *sl_list_item_to_json(const struct sl_list_item *it,
				  __u64 now_tai, __u64 tai_offset)
{
	json_object *o = json_object_new_object();
	char pfx[64];

	sl_format_prefix(&it->key.addr, it->key.prefixlen, pfx, sizeof(pfx));
	json_object_object_add(o, "kind",
			       json_object_new_string(sl_list_name(it->kind)));
	json_object_object_add(o, "prefix", json_object_new_string(pfx));
	if (it->entry.expires_ms) {
		sl_json_add_u64(o, "expires_ms", it->entry.expires_ms - tai_offset);
		sl_json_add_u64(o, "remaining_ms", it->entry.expires_ms > now_tai ?
				it->entry.expires_ms - now_tai : 0);
	} else {
		json_object_object_add(o, "expires_ms", NULL);
		json_object_object_add(o, "remaining_ms", NULL);
	}
	if (it->note.added_ms)
		sl_json_add_u64(o, "added_ms", it->note.added_ms - tai_offset);
	else
		json_object_object_add(o, "added_ms", NULL);
	json_object_object_add(o, "reason", json_object_new_string(it->note.reason));
	sl_json_add_u64(o, "hits", it->entry.hits);
	return o;
}

json_object *sl_list_stats_to_json(const struct sl_maps *m)
{
	struct sl_list_stats ls = {};
	json_object *o = json_object_new_object();

	sl_list_stats_read(m, &ls);
	sl_json_add_u64(o, "allowed", ls.allowed);
	sl_json_add_u64(o, "allowed_bytes", ls.allowed_bytes);
	sl_json_add_u64(o, "blocked", ls.blocked);
	sl_json_add_u64(o, "blocked_bytes", ls.blocked_bytes);
	sl_json_add_u64(o, "allow_entries", sl_map_count_keys(m->allow_list));
	sl_json_add_u64(o, "block_entries", sl_map_count_keys(m->block_list));
	return o;
}
