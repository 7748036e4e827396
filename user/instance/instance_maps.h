/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The maps of one slicelimit instance, as file descriptors: either the
 * pinned instance under SL_PIN_DIR, or an unpinned one from a skeleton
 * (tests and replay). Every command works on this struct, so it cannot tell
 * the two apart.
 */
#ifndef SL_INSTANCE_INSTANCE_MAPS_H
#define SL_INSTANCE_INSTANCE_MAPS_H

#include <bpf/libbpf.h>

struct sl_maps {
	int active;
	int config;
	int rules;
	int port_classes;
	int class_rules;
	int src_rules;
	int dst_rules;
	int exempt_rules;
	int clients;
	int clients_plain;
	int clients_log;
	int rule_stats;
	int global_stats;
	int devices;
	int sync;		/* sl_sync: the layout */
	int peer_view;		/* sl_peer_view: peers' counts per client */
	int sync_status;	/* sl_sync_status: sync health */
	int changed;		/* sl_changed: keys of clients accepted since
				 * the last sync round */
	int newcomers;		/* sl_newcomers: keys on probation */
	int newcomer_conf;	/* sl_newcomer_conf: its hash seed and size */
	int forgotten;		/* sl_forgotten: deletions of client states */
	int allow_list;		/* sl_allow_list, sl_block_list: the lists */
	int block_list;
	int list_notes;		/* sl_list_notes: their reasons */
	int list_stats;		/* sl_list_stats: what they decided */
	int nr_cpus;		/* possible CPUs: values of a per-CPU array */
	bool owned;		/* fds were opened here and must be closed */
};

/* 0, or -ENOENT when nothing is pinned (nothing attached yet), or -errno. */
int sl_maps_open_pinned(struct sl_maps *m);
void sl_maps_from_object(struct sl_maps *m, struct bpf_object *obj);
void sl_maps_close(struct sl_maps *m);

/* -ENODEV with a message when bpffs is not mounted at /sys/fs/bpf. */
int sl_require_bpffs(void);

/* Size the client tables of an object before load: sl_clients to hold
 * `clients` (0: default) without evicting (sl_client_table_entries),
 * sl_peer_view to `clients`, sl_changed to an eighth of them,
 * sl_newcomers to SL_NEWCOMER_WAYS_PER_CLIENT ways per client (at least
 * SL_NEWCOMER_MIN_WAYS);
 * sl_clients_plain and
 * sl_clients_log to what fits in SL_WIDE_STATE_BUDGET bytes (at most
 * their default capacity, and at most `clients` when given).
 * Deterministic, so pinned maps are reused.
 */
#define SL_WIDE_STATE_BUDGET	(64u << 20)
void sl_size_state_maps(struct bpf_object *obj, unsigned clients);

/* Buckets of sl_newcomers for a client table of `clients` (0: default):
 * SL_NEWCOMER_WAYS_PER_CLIENT probation ways per client, and at least
 * SL_NEWCOMER_MIN_WAYS. As many clients arriving at once as the table
 * holds put a Poisson count of keys into each bucket, and a key that
 * finds its bucket full takes a waiting key's way: that key's next
 * packet is decided as a new one again (passed). Four ways per client
 * in buckets of SL_NEWCOMER_WAYS leave that to the Poisson tail past
 * four times the mean (docs/MEASUREMENTS.md, "A table sized for N
 * holds N").
 */
#define SL_NEWCOMER_MIN_WAYS	65536u
#define SL_NEWCOMER_WAYS_PER_CLIENT	4u
__u32 sl_newcomer_buckets(unsigned clients);

/* Entries of sl_clients for `clients` clients on nr_cpus possible CPUs,
 * and back: the LRU's per-CPU free lists hold up to SL_LRU_LOCAL_FREE
 * entries each that the table cannot give to a new client without
 * evicting another.
 */
#define SL_LRU_LOCAL_FREE	128u
__u32 sl_client_table_entries(unsigned clients, int nr_cpus);
unsigned sl_clients_of_table(__u32 entries, int nr_cpus);

/* After a load: give a new probation table its random hash seed and its
 * size (sl_newcomer_conf); a table made by an earlier load keeps its own.
 */
int sl_newcomers_init(const struct sl_maps *m);
/* Forget every key on probation (a new hash seed): a removed rule's id,
 * reused, must not inherit a first accept. Each such key then has its
 * next packet taken for a first one.
 */
int sl_newcomers_forget(const struct sl_maps *m);

/* After deleting client states: the data path's front cache (bpf/
 * front.h) holds no entry written before. Under the writer lock.
 */
int sl_states_forgotten(const struct sl_maps *m);

/* The client state map of an algorithm (see sl_state_size()). */
int sl_state_fd(const struct sl_maps *m, unsigned algorithm);

/* Sum of a per-CPU array entry, `size` bytes of __u64 counters. */
int sl_percpu_sum_u64(const struct sl_maps *m, int fd, __u32 key, void *out,
		      size_t size);

/* The map's max_entries, 0 if unknown. */
__u32 sl_map_capacity(int fd);
/* The keys the map holds now, one get_next_key walk (0 if unknown). */
__u32 sl_map_count_keys(int fd);

#endif /* SL_INSTANCE_INSTANCE_MAPS_H */
