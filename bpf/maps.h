/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Map definitions, and the lookups that more than one place makes. Every map
 * is pinned by name under SL_PIN_DIR, so a second `attach` (another device,
 * XDP or TC) shares the same counters: a client is counted per host, not per
 * interface.
 */
#ifndef SL_BPF_MAPS_H
#define SL_BPF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "slicelimit.h"
#include "sl_front.h"

/* The live generation: one u32, switched by `rules apply` after it has
 * filled the other generation's tables.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_active SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_GENS);
	__type(key, __u32);
	__type(value, struct sl_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_GENS * SL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct sl_rule);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_rules SEC(".maps");

/* gen * SL_PORT_SLOTS + slot -> port class (0: no rule) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_GENS * SL_PORT_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_port_classes SEC(".maps");

/* gen * SL_MAX_CLASSES + class -> rules whose protocol and ports match */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_GENS * SL_MAX_CLASSES);
	__type(key, __u32);
	__type(value, struct sl_bitmap);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_class_rules SEC(".maps");

/* Longest source prefix -> rules whose source prefix contains it. Userspace
 * ORs the bitmaps of all shorter covering prefixes into each entry, so the
 * longest match alone is the full answer.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SL_GENS * (SL_MAX_RULES + 1));
	__type(key, struct sl_lpm_key);
	__type(value, struct sl_bitmap);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_src_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SL_GENS * (SL_MAX_RULES + 1));
	__type(key, struct sl_lpm_key);
	__type(value, struct sl_bitmap);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_dst_rules SEC(".maps");

/* Longest source prefix -> rules that exempt it. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SL_GENS * 16384);
	__type(key, struct sl_lpm_key);
	__type(value, struct sl_bitmap);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_exempt_rules SEC(".maps");

/* The block and allow lists (bpf/lists.h): source prefix -> entry.
 * Written only by userspace (user/instance/lists.c), outside the rules'
 * generations, so that `rules apply` leaves them as they are.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SL_LIST_MAX);
	__type(key, struct sl_list_key);
	__type(value, struct sl_list_entry);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_allow_list SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SL_LIST_MAX);
	__type(key, struct sl_list_key);
	__type(value, struct sl_list_entry);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_block_list SEC(".maps");

/* An entry's reason and when it was added: never read by the data path,
 * kept beside the pins so that they live as long as the entry does.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * SL_LIST_MAX);
	__type(key, struct sl_list_note_key);
	__type(value, struct sl_list_note);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_list_notes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_list_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_list_stats SEC(".maps");

/* One state per client, shared by every CPU and written only on accept
 * (see include/algo/common.h). Sized by the loader to hold --clients
 * (default SL_DEFAULT_CLIENTS) with room for the free entries each CPU
 * keeps (sl_client_table_entries()).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SL_DEFAULT_CLIENTS);
	__type(key, struct sl_client_key);
	__type(value, struct sl_client);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_clients SEC(".maps");

/* sliding-plain/-counter and sliding-log state: larger values, so tables
 * of their own, so that only their rules' clients pay for them. LRU and
 * preallocated like sl_clients (allocating on demand can fail under load
 * in the packet path); the loader sizes them to a memory budget
 * (see sl_size_state_maps()).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sl_client_key);
	__type(value, struct sl_client_plain);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_clients_plain SEC(".maps");

/* Sized like sl_clients_plain, to the loader's budget (the default
 * asks for more than it holds, so the budget decides): an LRU hash hands
 * each CPU free entries in batches of up to 128, so a table of a few
 * thousand is what keeps a new client from evicting a known one while
 * most of the table sits unused in other CPUs' free lists.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct sl_client_key);
	__type(value, struct sl_client_log);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_clients_log SEC(".maps");

/* Keys on probation (include/sl_newcomer.h): a key the client tables do
 * not hold is written here at its first packet and gets a state only
 * when it comes back, so one-packet sources never evict known clients.
 * A plain array, every CPU's: an entry is a write under the bucket's
 * lock, no allocation and no LRU list. Sized by the loader, four ways
 * per client of sl_clients (sl_newcomer_buckets()); sl_newcomer_conf
 * says how many buckets (0: no probation).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SL_DEFAULT_CLIENTS / SL_NEWCOMER_WAYS);
	__type(key, __u32);
	__type(value, struct sl_newcomer_bucket);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_newcomers SEC(".maps");

/* Written by userspace only, once: the probation hash's seed and size. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_newcomer_conf);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_newcomer_conf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct sl_rule_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_rule_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_global_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_global_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_events SEC(".maps");

/* The keys of clients accepted since the service's last sync round, once
 * per client per round (sl_sync_conf.round), so a round reads what
 * changed instead of every client. Sized by the loader for an eighth of
 * the client table (1 MiB, 32,768 keys, by default); past that,
 * changed_lost counts and the round walks every client.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_changed SEC(".maps");

/* Bumped by userspace after it deletes client states (reset): a front
 * entry (bpf/front.h) written before holds no more.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_forgotten SEC(".maps");

/* The front cache of blocked flows (include/sl_front.h), one per CPU, in
 * the one entry: not pinned, each slot holds only under the block tag
 * it names (bpf/block.h).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_front_cache);
} sl_front SEC(".maps");

/* Written by the service only: the sync layout (include/peer/view.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_sync_conf);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_sync SEC(".maps");

/* Written by the service only: the peers' counts per client. Sized like
 * sl_clients by the loader; not preallocated, so a node without peers
 * pays nothing for it. A full map refuses new entries: those clients are
 * then counted by the node alone (fail open).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SL_DEFAULT_CLIENTS);
	__type(key, struct sl_client_key);
	__type(value, struct sl_peer_view);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_peer_view SEC(".maps");

/* Written by the service only: sync health, for status and stats. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_sync_status);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_sync_status SEC(".maps");

/* A datagram's first fragment's verdict and ports, for its later
 * fragments (bpf/datapath.h). LRU: a datagram whose entry is evicted
 * before its last fragment arrives has orphans, which are counted, not
 * passed (sl_orphan_rules()); the stack holds an incomplete datagram
 * only until its reassembly timeout, in a bounded memory.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sl_frag_key);
	__type(value, struct sl_frag);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_frags SEC(".maps");

/* Each CPU's own copy of the rules by protocol, any port (see struct
 * sl_proto_rules): per CPU, so it is rebuilt without a lock.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sl_proto_rules);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_proto_rules SEC(".maps");

/* Written by userspace only: which devices run the program, and how. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct sl_device);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sl_devices SEC(".maps");

/* This CPU's global counters. NULL only if the map is missing an entry,
 * which an array of one never is; the verifier still wants the check.
 */
static __always_inline struct sl_global_stats *sl_cpu_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&sl_global_stats, &zero);
}

/* The service's sync conf (an array of one: NULL only to the verifier). */
static __always_inline const struct sl_sync_conf *sl_sync_conf(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&sl_sync, &zero);
}

/* The live generation's config, or NULL. */
static __always_inline struct sl_config *sl_live_config(void)
{
	__u32 zero = 0, *gen;

	gen = bpf_map_lookup_elem(&sl_active, &zero);
	if (!gen)
		return NULL;
	return bpf_map_lookup_elem(&sl_config, gen);
}

/* The rule at priority position `pos` of cfg's generation, or NULL
 * (pos < SL_MAX_RULES).
 */
static __always_inline const struct sl_rule *
sl_rule_at(const struct sl_config *cfg, __u32 pos)
{
	__u32 idx = (cfg->gen & 1) * SL_MAX_RULES + pos;

	return bpf_map_lookup_elem(&sl_rules, &idx);
}

#endif /* SL_BPF_MAPS_H */
