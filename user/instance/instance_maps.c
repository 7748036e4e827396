// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stddef.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "util/log.h"
#include "instance/instance_maps.h"
#include "sl_algo.h"

#define SL_MAP_FIELDS(X) \
	X(active) X(config) X(rules) X(port_classes) X(class_rules) \
	X(src_rules) X(dst_rules) X(exempt_rules) X(clients) X(clients_plain) \
	X(clients_log) X(rule_stats) \
	X(global_stats) X(devices) X(sync) X(peer_view) \
	X(sync_status) X(changed) X(newcomers) X(newcomer_conf) X(forgotten) \
	X(allow_list) X(block_list) X(list_notes) X(list_stats)

int sl_require_bpffs(void)
{
	struct statfs st;

	if (statfs("/sys/fs/bpf", &st) || st.f_type != BPF_FS_MAGIC) {
		pr_error("bpffs not mounted at /sys/fs/bpf: run mount -t bpf -o mode=0700 bpf /sys/fs/bpf%s",
			 getenv("NETNS") || access("/run/netns", F_OK) == 0 ?
			 " (if this runs under 'ip netns exec', which remounts /sys, use 'nsenter --net=/run/netns/NAME slicelimit ...' instead)" : "");
		return -ENODEV;
	}
	return 0;
}

/* Every map fd of struct sl_maps with the name of its map, in the order
 * of SL_MAP_FIELDS: the loops below are the one place that lists them.
 */
static const struct {
	const char *name;
	size_t off;
} map_fields[] = {
#define X(f) { "sl_" #f, offsetof(struct sl_maps, f) },
	SL_MAP_FIELDS(X)
#undef X
};
#define NR_MAP_FIELDS	(sizeof(map_fields) / sizeof(map_fields[0]))

static int *map_fd(struct sl_maps *m, size_t i)
{
	return (int *)((char *)m + map_fields[i].off);
}

int sl_maps_open_pinned(struct sl_maps *m)
{
	char path[256];
	size_t i;
	int err;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < NR_MAP_FIELDS; i++)
		*map_fd(m, i) = -1;
	m->nr_cpus = libbpf_num_possible_cpus();
	if (m->nr_cpus < 0)
		return m->nr_cpus;
	for (i = 0; i < NR_MAP_FIELDS; i++) {
		snprintf(path, sizeof(path), SL_PIN_DIR "/%s",
			 map_fields[i].name);
		*map_fd(m, i) = bpf_obj_get(path);
		if (*map_fd(m, i) < 0) {
			err = -errno;
			goto err_close;
		}
	}
	m->owned = true;
	return 0;

err_close:
	while (i--) {
		close(*map_fd(m, i));
		*map_fd(m, i) = -1;
	}
	return err;
}

void sl_maps_from_object(struct sl_maps *m, struct bpf_object *obj)
{
	size_t i;

	memset(m, 0, sizeof(*m));
	m->nr_cpus = libbpf_num_possible_cpus();
	for (i = 0; i < NR_MAP_FIELDS; i++)
		*map_fd(m, i) = bpf_map__fd(bpf_object__find_map_by_name(obj,
							map_fields[i].name));
}

int sl_states_forgotten(const struct sl_maps *m)
{
	__u32 zero = 0, n = 0;

	if (bpf_map_lookup_elem(m->forgotten, &zero, &n))
		return -errno;
	n++;
	return bpf_map_update_elem(m->forgotten, &zero, &n, BPF_ANY) ? -errno : 0;
}

void sl_maps_close(struct sl_maps *m)
{
	size_t i;

	if (!m->owned)
		return;
	for (i = NR_MAP_FIELDS; i--;) {
		if (*map_fd(m, i) >= 0)
			close(*map_fd(m, i));
		*map_fd(m, i) = -1;
	}
	m->owned = false;
}

static void size_to_budget(struct bpf_map *map, unsigned clients)
{
	__u64 fits = SL_WIDE_STATE_BUDGET / bpf_map__value_size(map);

	if (clients && fits > clients)
		fits = clients;
	if (fits < 64)
		fits = 64;
	if (fits < bpf_map__max_entries(map))
		bpf_map__set_max_entries(map, fits);
}

/* sl_changed: room for an eighth of the table's clients changing between
 * two sync rounds (32 bytes a key), a power of two of pages; a round with
 * more walks every client, which then costs about the same.
 */
static void size_changed_ring(struct bpf_map *map, unsigned clients)
{
	__u64 want = (__u64)clients / 8 * 32, bytes = 4096;

	while (bytes < want && bytes < (1u << 30))
		bytes *= 2;
	bpf_map__set_max_entries(map, bytes);
}

/* The LRU hash refills a CPU's free list from the common one a batch of
 * up to SL_LRU_LOCAL_FREE entries at a time, and when fewer are free it
 * evicts the rest; the other CPUs' batches stay theirs. A table of M
 * entries therefore starts evicting at M - SL_LRU_LOCAL_FREE x CPUs live
 * clients (docs/MEASUREMENTS.md, "A table sized for N holds N").
 */
__u32 sl_client_table_entries(unsigned clients, int nr_cpus)
{
	__u64 n = clients ? clients : SL_DEFAULT_CLIENTS;

	if (nr_cpus < 1)
		nr_cpus = 1;
	return n + (__u64)SL_LRU_LOCAL_FREE * nr_cpus;
}

unsigned sl_clients_of_table(__u32 entries, int nr_cpus)
{
	__u64 spare = (__u64)SL_LRU_LOCAL_FREE * (nr_cpus < 1 ? 1 : nr_cpus);

	return entries > spare ? entries - spare : 1;
}

void sl_size_state_maps(struct bpf_object *obj, unsigned clients)
{
	int nr_cpus = libbpf_num_possible_cpus();

	bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "sl_clients"),
				 sl_client_table_entries(clients, nr_cpus));
	bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "sl_peer_view"),
				 clients ? clients : SL_DEFAULT_CLIENTS);
	size_changed_ring(bpf_object__find_map_by_name(obj, "sl_changed"),
			  clients ? clients : SL_DEFAULT_CLIENTS);
	bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "sl_newcomers"),
				 sl_newcomer_buckets(clients));
	size_to_budget(bpf_object__find_map_by_name(obj, "sl_clients_plain"),
		       clients);
	size_to_budget(bpf_object__find_map_by_name(obj, "sl_clients_log"),
		       clients);
}

__u32 sl_newcomer_buckets(unsigned clients)
{
	__u64 ways = (__u64)(clients ? clients : SL_DEFAULT_CLIENTS) *
		     SL_NEWCOMER_WAYS_PER_CLIENT;

	/* a small table's few keys must not crowd one bucket either */
	if (ways < SL_NEWCOMER_MIN_WAYS)
		ways = SL_NEWCOMER_MIN_WAYS;
	return ways / SL_NEWCOMER_WAYS;
}

/* A fresh seed: the probation hash finds none of the keys it held. */
static int newcomers_seed(const struct sl_maps *m, __u32 buckets)
{
	struct sl_newcomer_conf conf;
	__u32 zero = 0;

	memset(&conf, 0, sizeof(conf));
	if (getrandom(&conf.seed, sizeof(conf.seed), 0) != sizeof(conf.seed))
		return -errno;
	conf.buckets = buckets;
	if (bpf_map_update_elem(m->newcomer_conf, &zero, &conf, BPF_ANY))
		return -errno;
	return 0;
}

int sl_newcomers_forget(const struct sl_maps *m)
{
	struct sl_newcomer_conf conf;
	__u32 zero = 0;

	if (m->newcomer_conf < 0)
		return 0;
	if (bpf_map_lookup_elem(m->newcomer_conf, &zero, &conf))
		return -errno;
	return conf.buckets ? newcomers_seed(m, conf.buckets) : 0;
}

int sl_newcomers_init(const struct sl_maps *m)
{
	struct sl_newcomer_conf conf;
	__u32 zero = 0, buckets;

	if (bpf_map_lookup_elem(m->newcomer_conf, &zero, &conf))
		return -errno;
	if (conf.buckets)
		return 0;	/* made by an earlier load: keep its hash */
	buckets = sl_map_capacity(m->newcomers);
	if (!buckets)
		return -ENOENT;
	return newcomers_seed(m, buckets);
}

int sl_state_fd(const struct sl_maps *m, unsigned algorithm)
{
	if (sl_uses_slots(algorithm))
		return m->clients_plain;
	if (algorithm == SL_ALGO_SLIDING_LOG)
		return m->clients_log;
	return m->clients;
}

int sl_percpu_sum_u64(const struct sl_maps *m, int fd, __u32 key, void *out,
		      size_t size)
{
	size_t words = size / sizeof(__u64), cpu, i;
	__u64 *vals, *sum = out;

	vals = calloc(m->nr_cpus, size);
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, vals)) {
		free(vals);
		return -errno;
	}
	memset(out, 0, size);
	for (cpu = 0; cpu < (size_t)m->nr_cpus; cpu++)
		for (i = 0; i < words; i++)
			sum[i] += vals[cpu * words + i];
	free(vals);
	return 0;
}

__u32 sl_map_capacity(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.max_entries;
}

__u32 sl_map_count_keys(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), n = 0;
	void *key, *next, *prev = NULL;

	if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.key_size)
		return 0;
	key = malloc(2 * info.key_size);
	if (!key)
		return 0;
	next = (char *)key + info.key_size;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, info.key_size);
		prev = key;
		n++;
	}
	free(key);
	return n;
}
