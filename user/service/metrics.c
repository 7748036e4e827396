// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "state/aggregate.h"
#include "util/clock.h"
#include "util/grow.h"
#include "instance/lists.h"
#include "service/metrics.h"
#include "rules/rules.h"
#include "service/state.h"
#include "sync/health.h"

/* Upper bounds of the check latency buckets, in seconds. */
static const double latency_le[SL_LATENCY_BUCKETS] = {
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
	0.005, 0.01,
};

static const char *const status_label[6] = {
	"200", "401_403", "429", "4xx", "5xx", "other",
};

void sl_http_stats_count(struct sl_http_stats *s, unsigned status)
{
	int i = status == 200 ? 0 : status == 401 || status == 403 ? 1 :
		status == 429 ? 2 : status / 100 == 4 ? 3 :
		status / 100 == 5 ? 4 : 5;

	atomic_fetch_add(&s->by_status[i], 1);
}

void sl_http_stats_latency(struct sl_http_stats *s, long long ns)
{
	int i;

	for (i = 0; i < SL_LATENCY_BUCKETS; i++)
		if (ns <= latency_le[i] * 1e9)
			break;
	atomic_fetch_add(&s->latency[i], 1);
	atomic_fetch_add(&s->latency_sum_ns, ns);
	atomic_fetch_add(&s->checks, 1);
}

void sl_http_stats_check(struct sl_http_stats *s, unsigned rule_id,
			 bool allowed)
{
	atomic_fetch_add(&s->by_rule[rule_id % SL_MAX_RULES][allowed], 1);
}

void sl_http_stats_decision(struct sl_http_stats *s,
			    enum sl_check_decision d)
{
	atomic_fetch_add(&s->by_decision[d % SL_DECIDED__COUNT], 1);
}

void sl_http_stats_central(struct sl_http_stats *s,
			   const struct sl_central_stats *cs)
{
	atomic_store(&s->central_up, cs->up);
	atomic_store(&s->central_errors, cs->errors);
	atomic_store(&s->central_reconnects, cs->reconnects);
	atomic_store(&s->central, 1);
}

void sl_http_stats_rls_call(struct sl_http_stats *s, unsigned grpc_status)
{
	atomic_store(&s->rls, true);
	atomic_fetch_add(&s->rls_calls[grpc_status % 17], 1);
}

void sl_http_stats_rls_descriptor(struct sl_http_stats *s,
				  enum sl_rls_descriptor_result r)
{
	atomic_fetch_add(&s->rls_descriptors[r % SL_RLS_DESCRIPTOR__COUNT], 1);
}

struct text {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void put(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if (t->len + n < t->cap) {
			t->len += n;
			return;
		}
		if (sl_grow((void **)&t->buf, &t->cap, t->len + n + 1, 1)) {
			t->failed = true;
			return;
		}
	}
}

/* A metric family of __u64 counters read from one stats struct: its
 * name, type and help, then each sample's labels ("" for none) and the
 * offset of its field; the table ends at the first sample without labels.
 */
struct family {
	const char *name, *type, *help;
	struct {
		const char *labels;
		size_t off;
	} s[8];
};

#define FIELD(type, field) offsetof(type, field)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void put_families(struct text *t, const struct family *f, size_t n,
			 const void *stats)
{
	const __u64 *v;
	size_t i, j;

	for (i = 0; i < n; i++) {
		put(t, "# HELP %s %s\n# TYPE %s %s\n", f[i].name, f[i].help,
		    f[i].name, f[i].type);
		for (j = 0; j < ARRAY_SIZE(f[i].s) && f[i].s[j].labels; j++) {
			v = (const __u64 *)((const char *)stats + f[i].s[j].off);
			put(t, "%s%s %llu\n", f[i].name, f[i].s[j].labels,
			    (unsigned long long)*v);
		}
	}
}

#define SYNC(f) FIELD(struct sl_sync_status, f)
static const struct family sync_counters[] = {
	{ "slicelimit_sync_rejected_total", "counter",
	  "Sync messages refused, by reason.",
	  { { "{reason=\"forged\"}", SYNC(rejected_forged) },
	    { "{reason=\"malformed\"}", SYNC(rejected_malformed) },
	    { "{reason=\"replayed\"}", SYNC(rejected_replayed) },
	    { "{reason=\"stale\"}", SYNC(rejected_stale) },
	    { "{reason=\"future\"}", SYNC(rejected_future) },
	    { "{reason=\"own\"}", SYNC(rejected_own) },
	    { "{reason=\"unknown_peer\"}", SYNC(rejected_unknown_peer) },
	    { "{reason=\"wrong_address\"}", SYNC(rejected_wrong_address) } } },
	{ "slicelimit_sync_sent_bytes_total", "counter",
	  "Sync bytes sent (each peer's copy counted).",
	  { { "", SYNC(sent_bytes) } } },
	{ "slicelimit_sync_rounds_total", "counter", "Sync rounds run.",
	  { { "", SYNC(rounds) } } },
};
static const struct family sync_backend_errors = {
	"slicelimit_sync_backend_errors_total", "counter",
	"Redis: failed round trips.", { { "", SYNC(backend_errors) } },
};

/* Peer health and sync traffic, when this instance syncs. */
static void sync_metrics(struct text *t, const struct sl_maps *m)
{
	struct sl_sync_status st;
	__u64 now = sl_now_tai_ms();
	__u32 zero = 0, i;

	if (m->sync_status < 0 ||
	    bpf_map_lookup_elem(m->sync_status, &zero, &st) || !st.node)
		return;
	put(t, "# HELP slicelimit_sync_peer_up 1 while the peer was heard within %d intervals.\n"
	       "# TYPE slicelimit_sync_peer_up gauge\n", SL_PEER_UP_INTERVALS);
	for (i = 0; i < st.nr_peers && i < SL_MAX_PEERS; i++)
		put(t, "slicelimit_sync_peer_up{node=\"%u\"} %d\n", st.peer[i].node,
		    sl_peer_up(&st.peer[i], &st, now));
	put(t, "# HELP slicelimit_sync_peer_lag_seconds Arrival minus sending time of the peer's last message.\n"
	       "# TYPE slicelimit_sync_peer_lag_seconds gauge\n");
	for (i = 0; i < st.nr_peers && i < SL_MAX_PEERS; i++)
		put(t, "slicelimit_sync_peer_lag_seconds{node=\"%u\"} %.3f\n",
		    st.peer[i].node, st.peer[i].lag_ms / 1e3);
	put(t, "# HELP slicelimit_sync_peer_last_heard_seconds Since the peer's last accepted message.\n"
	       "# TYPE slicelimit_sync_peer_last_heard_seconds gauge\n");
	for (i = 0; i < st.nr_peers && i < SL_MAX_PEERS; i++)
		put(t, "slicelimit_sync_peer_last_heard_seconds{node=\"%u\"} %.3f\n",
		    st.peer[i].node, sl_peer_heard_ago(&st.peer[i], now) / 1e3);
	put(t, "# HELP slicelimit_sync_peer_messages_total Messages accepted from the peer.\n"
	       "# TYPE slicelimit_sync_peer_messages_total counter\n");
	for (i = 0; i < st.nr_peers && i < SL_MAX_PEERS; i++)
		put(t, "slicelimit_sync_peer_messages_total{node=\"%u\"} %llu\n",
		    st.peer[i].node, (unsigned long long)st.peer[i].messages);
	put_families(t, sync_counters, ARRAY_SIZE(sync_counters), &st);
	put(t, "# HELP slicelimit_sync_aggregation_seconds The last round's aggregation pass.\n"
	       "# TYPE slicelimit_sync_aggregation_seconds gauge\n"
	       "slicelimit_sync_aggregation_seconds %.6f\n"
	       "# HELP slicelimit_sync_peers_configured Peers the config names (a peer never heard has no slicelimit_sync_peer_up).\n"
	       "# TYPE slicelimit_sync_peers_configured gauge\n"
	       "slicelimit_sync_peers_configured %u\n"
	       "# HELP slicelimit_sync_live_nodes Nodes sharing a client's room under the bounded layout, this one included (1: deciding alone).\n"
	       "# TYPE slicelimit_sync_live_nodes gauge\n"
	       "slicelimit_sync_live_nodes %u\n"
	       "# HELP slicelimit_sync_backend_up Redis: 1 while connected.\n"
	       "# TYPE slicelimit_sync_backend_up gauge\n"
	       "slicelimit_sync_backend_up %u\n",
	    st.collect_us / 1e6, st.peers_configured, st.live_nodes, st.backend_up);
	put_families(t, &sync_backend_errors, 1, &st);
}

/* The service's SIGHUP reloads, when a service has published its state. */
static void service_metrics(struct text *t)
{
	struct sl_service_state st;

	if (sl_service_state_read(&st) || !st.pid)
		return;
	put(t, "# HELP slicelimit_reloads_total SIGHUP reloads of the service, applied or refused (the running config and rules kept).\n"
	       "# TYPE slicelimit_reloads_total counter\n"
	       "slicelimit_reloads_total{result=\"applied\"} %llu\n"
	       "slicelimit_reloads_total{result=\"refused\"} %llu\n",
	    (unsigned long long)st.reloads_applied,
	    (unsigned long long)st.reloads_refused);
	if (st.sync_wanted)
		put(t, "# HELP slicelimit_sync_up 1 while the sync the config asks for runs; 0: this node decides on its own counts.\n"
		       "# TYPE slicelimit_sync_up gauge\n"
		       "slicelimit_sync_up %d\n", !st.sync_down[0]);
}

/* Each rule's packets by outcome, then its bytes. */
static void rule_metrics(struct text *t, const struct sl_maps *m,
			 const struct sl_rule *rules, unsigned nr)
{
	unsigned i;

	put(t, "# HELP slicelimit_rule_packets_total Packets matched by a rule, by outcome.\n"
		"# TYPE slicelimit_rule_packets_total counter\n");
	for (i = 0; i < nr; i++) {
		struct sl_rule_stats rs;

		if (sl_percpu_sum_u64(m, m->rule_stats, rules[i].id, &rs, sizeof(rs)))
			continue;
		put(t, "slicelimit_rule_packets_total{rule=\"%s\",outcome=\"passed\"} %llu\n"
			"slicelimit_rule_packets_total{rule=\"%s\",outcome=\"dropped\"} %llu\n"
			"slicelimit_rule_packets_total{rule=\"%s\",outcome=\"shadow_dropped\"} %llu\n"
			"slicelimit_rule_packets_total{rule=\"%s\",outcome=\"exempt\"} %llu\n",
		    rules[i].name, (unsigned long long)rs.passed,
		    rules[i].name, (unsigned long long)rs.dropped,
		    rules[i].name, (unsigned long long)rs.shadow_dropped,
		    rules[i].name, (unsigned long long)rs.exempt);
	}
	put(t, "# HELP slicelimit_rule_bytes_total Bytes matched by a rule, let through or dropped.\n"
		"# TYPE slicelimit_rule_bytes_total counter\n");
	for (i = 0; i < nr; i++) {
		struct sl_rule_stats rs;

		if (sl_percpu_sum_u64(m, m->rule_stats, rules[i].id, &rs, sizeof(rs)))
			continue;
		put(t, "slicelimit_rule_bytes_total{rule=\"%s\",outcome=\"passed\"} %llu\n"
			"slicelimit_rule_bytes_total{rule=\"%s\",outcome=\"dropped\"} %llu\n",
		    rules[i].name, (unsigned long long)rs.passed_bytes,
		    rules[i].name, (unsigned long long)rs.dropped_bytes);
	}
}

/* What became of the packets before any rule (none if unreadable). */
static void list_metrics(struct text *t, const struct sl_maps *m)
{
	struct sl_list_stats ls;

	if (sl_list_stats_read(m, &ls))
		return;
	put(t, "# HELP slicelimit_list_packets_total Packets the block and allow lists decided before any rule.\n"
		"# TYPE slicelimit_list_packets_total counter\n"
		"slicelimit_list_packets_total{list=\"allow\"} %llu\n"
		"slicelimit_list_packets_total{list=\"block\"} %llu\n"
		"# HELP slicelimit_list_bytes_total Bytes of those packets.\n"
		"# TYPE slicelimit_list_bytes_total counter\n"
		"slicelimit_list_bytes_total{list=\"allow\"} %llu\n"
		"slicelimit_list_bytes_total{list=\"block\"} %llu\n"
		"# HELP slicelimit_list_entries Entries each list holds (ended ones until swept).\n"
		"# TYPE slicelimit_list_entries gauge\n"
		"slicelimit_list_entries{list=\"allow\"} %u\n"
		"slicelimit_list_entries{list=\"block\"} %u\n",
	    (unsigned long long)ls.allowed, (unsigned long long)ls.blocked,
	    (unsigned long long)ls.allowed_bytes,
	    (unsigned long long)ls.blocked_bytes,
	    sl_map_count_keys(m->allow_list), sl_map_count_keys(m->block_list));
}

#define GLOBAL(f) FIELD(struct sl_global_stats, f)
static const struct family packet_counters[] = {
	{ "slicelimit_packets_total", "counter",
	  "Packets seen, by what became of them before any rule.",
	  { { "{kind=\"all\"}", GLOBAL(packets) },
	    { "{kind=\"non_ip\"}", GLOBAL(non_ip) },
	    { "{kind=\"malformed\"}", GLOBAL(malformed) },
	    { "{kind=\"fragment\"}", GLOBAL(fragments) },
	    { "{kind=\"no_rule\"}", GLOBAL(no_rule) } } },
	{ "slicelimit_fail_open_total", "counter",
	  "Packets passed because no client state could be had.",
	  { { "", GLOBAL(fail_open) } } },
	{ "slicelimit_clients_created_total", "counter",
	  "Client states created; evicted = created - live.",
	  { { "", GLOBAL(new_clients) } } },
	{ "slicelimit_events_lost_total", "counter",
	  "Drop events a full ring buffer refused.",
	  { { "", GLOBAL(events_lost) } } },
	{ "slicelimit_newcomers_total", "counter",
	  "Keys without a client state, by what their packet did on probation: written (a first packet), promoted (came back: a state made), displaced (an entry overwritten before its key came back).",
	  { { "{outcome=\"written\"}", GLOBAL(newcomers) },
	    { "{outcome=\"promoted\"}", GLOBAL(promoted) },
	    { "{outcome=\"displaced\"}", GLOBAL(newcomers_displaced) } } },
	{ "slicelimit_fragments_total", "counter",
	  "IP fragments, by how they were decided.",
	  { { "{kind=\"first\"}", GLOBAL(frag_first) },
	    { "{kind=\"later\"}", GLOBAL(frag_later) },
	    { "{kind=\"later_dropped\"}", GLOBAL(frag_later_dropped) },
	    { "{kind=\"without_first\"}", GLOBAL(frag_orphans) } } },
	{ "slicelimit_long_chains_total", "counter",
	  "IPv6 extension chains longer than the walk, and those dropped.",
	  { { "{kind=\"all\"}", GLOBAL(long_chains) },
	    { "{kind=\"dropped\"}", GLOBAL(long_chains_dropped) } } },
	{ "slicelimit_icmp_control_total", "counter",
	  "ICMP errors and link control messages: never limited.",
	  { { "", GLOBAL(icmp_control) } } },
	{ "slicelimit_vlan_deep_total", "counter",
	  "Frames with more VLAN tags than the parser walks, and those dropped.",
	  { { "{kind=\"all\"}", GLOBAL(vlan_deep) },
	    { "{kind=\"dropped\"}", GLOBAL(vlan_deep_dropped) } } },
	{ "slicelimit_mapped_v4_total", "counter",
	  "IPv6 packets from an IPv4-mapped source (::ffff:0:0/96): dropped.",
	  { { "", GLOBAL(mapped_v4) } } },
	{ "slicelimit_front_quiet_total", "counter",
	  "Packets while the front cache of blocked flows was quiet: skipped it, or probed it.",
	  { { "{kind=\"skipped\"}", GLOBAL(front_skipped) },
	    { "{kind=\"probe\"}", GLOBAL(front_probes) } } },
};

static void packet_metrics(struct text *t, const struct sl_maps *m)
{
	struct sl_global_stats gs;

	if (!sl_percpu_sum_u64(m, m->global_stats, 0, &gs, sizeof(gs)))
		put_families(t, packet_counters, ARRAY_SIZE(packet_counters),
			     &gs);
}

static int count_client(void *ctx, const struct sl_client_key *key,
			const void *state, __u32 value_size)
{
	(void)key;
	(void)state;
	(void)value_size;
	++*(__u32 *)ctx;
	return 0;
}

/* The client tables: states held, and what each can hold. The states are
 * counted with batched lookups, as the aggregation pass reads them: one
 * syscall per batch, not one per key, so an unauthenticated scrape of a
 * full table costs little; and a bucket walk, where get_next_key would
 * start over from the first key whenever the key it stood on is evicted.
 */
static void table_metrics(struct text *t, const struct sl_maps *m)
{
	static const struct { const char *name; __u32 value_size; } tables[] = {
		{ "sl_clients", sizeof(struct sl_client) },
		{ "sl_clients_plain", sizeof(struct sl_client_plain) },
		{ "sl_clients_log", sizeof(struct sl_client_log) },
	};
	unsigned i;

	put(t, "# HELP slicelimit_clients Client states held, by table.\n"
		"# TYPE slicelimit_clients gauge\n");
	for (i = 0; i < 3; i++) {
		int fd = i == 0 ? m->clients : i == 1 ? m->clients_plain : m->clients_log;
		__u32 n = 0;

		/* an error leaves what was counted: a gauge, not a failure */
		sl_for_each_client_in(m, fd, tables[i].value_size,
				      count_client, &n);
		put(t, "slicelimit_clients{table=\"%s\"} %u\n", tables[i].name, n);
	}
	put(t, "# HELP slicelimit_clients_capacity Client states a table can hold.\n"
		"# TYPE slicelimit_clients_capacity gauge\n");
	for (i = 0; i < 3; i++) {
		int fd = i == 0 ? m->clients : i == 1 ? m->clients_plain : m->clients_log;

		__u32 cap = sl_map_capacity(fd);

		/* sl_clients: what it holds without evicting (clients:) */
		if (i == 0)
			cap = sl_clients_of_table(cap, m->nr_cpus);
		put(t, "slicelimit_clients_capacity{table=\"%s\"} %u\n",
		    tables[i].name, cap);
	}
}

/* The HTTP API: its answers, and its checks by rule and answer. */
static void http_metrics(struct text *t, struct sl_http_stats *s,
			 const struct sl_rule *rules, unsigned nr)
{
	unsigned i;

	put(t, "# HELP slicelimit_http_responses_total HTTP API responses by status.\n"
		"# TYPE slicelimit_http_responses_total counter\n");
	for (i = 0; i < 6; i++)
		put(t, "slicelimit_http_responses_total{code=\"%s\"} %llu\n",
		    status_label[i], (unsigned long long)atomic_load(&s->by_status[i]));
	put(t, "# HELP slicelimit_http_checks_total Checks of the HTTP API, by rule and answer.\n"
		"# TYPE slicelimit_http_checks_total counter\n");
	for (i = 0; i < nr; i++) {
		unsigned id = rules[i].id % SL_MAX_RULES;

		put(t, "slicelimit_http_checks_total{rule=\"%s\",result=\"allowed\"} %llu\n"
			"slicelimit_http_checks_total{rule=\"%s\",result=\"denied\"} %llu\n",
		    rules[i].name, (unsigned long long)atomic_load(&s->by_rule[id][1]),
		    rules[i].name, (unsigned long long)atomic_load(&s->by_rule[id][0]));
	}
}

/* How long checks took (a histogram), and who decided them. */
static void check_metrics(struct text *t, struct sl_http_stats *s)
{
	unsigned long long cum = 0;
	unsigned i;

	put(t, "# HELP slicelimit_http_check_duration_seconds Time to decide a check.\n"
		"# TYPE slicelimit_http_check_duration_seconds histogram\n");
	for (i = 0; i < SL_LATENCY_BUCKETS; i++) {
		cum += atomic_load(&s->latency[i]);
		put(t, "slicelimit_http_check_duration_seconds_bucket{le=\"%g\"} %llu\n",
		    latency_le[i], cum);
	}
	cum += atomic_load(&s->latency[SL_LATENCY_BUCKETS]);
	put(t, "slicelimit_http_check_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
		"slicelimit_http_check_duration_seconds_sum %.9f\n"
		"slicelimit_http_check_duration_seconds_count %llu\n",
	    cum, atomic_load(&s->latency_sum_ns) / 1e9,
	    (unsigned long long)atomic_load(&s->checks));
	put(t, "# HELP slicelimit_http_check_decisions_total Counted checks by who decided: kernel (no central store), central (the store), local (the store could not answer: this node alone, fail open), exempt.\n"
		"# TYPE slicelimit_http_check_decisions_total counter\n");
	for (i = 0; i < SL_DECIDED__COUNT; i++)
		put(t, "slicelimit_http_check_decisions_total{decision=\"%s\"} %llu\n",
		    sl_check_decision_name(i),
		    (unsigned long long)atomic_load(&s->by_decision[i]));
}

/* The central store of the checks, once a check has asked it. */
static void central_metrics(struct text *t, struct sl_http_stats *s)
{
	if (atomic_load(&s->central))
		put(t, "# HELP slicelimit_check_central_up Whether the central store answered the last check.\n"
			"# TYPE slicelimit_check_central_up gauge\n"
			"slicelimit_check_central_up %llu\n"
			"# HELP slicelimit_check_central_errors_total Central checks that failed: unreachable, timed out, or a reply that is not the script's.\n"
			"# TYPE slicelimit_check_central_errors_total counter\n"
			"slicelimit_check_central_errors_total %llu\n"
			"# HELP slicelimit_check_central_reconnects_total Connections to the central store after the first.\n"
			"# TYPE slicelimit_check_central_reconnects_total counter\n"
			"slicelimit_check_central_reconnects_total %llu\n",
		    (unsigned long long)atomic_load(&s->central_up),
		    (unsigned long long)atomic_load(&s->central_errors),
		    (unsigned long long)atomic_load(&s->central_reconnects));
}

/* Envoy's rate limit service, once it has answered a call */
static void rls_metrics(struct text *t, struct sl_http_stats *s)
{
	static const char *const result[SL_RLS_DESCRIPTOR__COUNT] = {
		"ok", "over_limit", "unmatched",
	};
	unsigned i;

	if (!atomic_load(&s->rls))
		return;
	put(t, "# HELP slicelimit_rls_calls_total Calls of the rate limit service (ShouldRateLimit) by gRPC status.\n"
		"# TYPE slicelimit_rls_calls_total counter\n");
	for (i = 0; i < 17; i++)
		if (atomic_load(&s->rls_calls[i]) || !i)
			put(t, "slicelimit_rls_calls_total{grpc_status=\"%u\"} %llu\n",
			    i, (unsigned long long)atomic_load(&s->rls_calls[i]));
	put(t, "# HELP slicelimit_rls_descriptors_total Descriptors the rate limit service answered: ok, over_limit, or unmatched (no rule answers it: OK, nothing counted).\n"
		"# TYPE slicelimit_rls_descriptors_total counter\n");
	for (i = 0; i < SL_RLS_DESCRIPTOR__COUNT; i++)
		put(t, "slicelimit_rls_descriptors_total{result=\"%s\"} %llu\n",
		    result[i],
		    (unsigned long long)atomic_load(&s->rls_descriptors[i]));
}

char *sl_metrics_render(const struct sl_maps *m, struct sl_http_stats *s)
{
	struct text t = { .cap = 8192 };
	struct sl_rule *rules = NULL;
	struct sl_config cfg;
	unsigned nr = 0;

	t.buf = malloc(t.cap);
	if (!t.buf || sl_rules_read_live(m, &rules, &nr, &cfg)) {
		free(t.buf);
		return NULL;
	}
	rule_metrics(&t, m, rules, nr);
	packet_metrics(&t, m);
	list_metrics(&t, m);
	table_metrics(&t, m);
	put(&t, "# HELP slicelimit_rules Rules running.\n# TYPE slicelimit_rules gauge\n"
		"slicelimit_rules %u\n"
		"# HELP slicelimit_rules_epoch Rule set applies so far.\n# TYPE slicelimit_rules_epoch gauge\n"
		"slicelimit_rules_epoch %u\n", nr, cfg.rules_epoch);
	http_metrics(&t, s, rules, nr);
	check_metrics(&t, s);
	central_metrics(&t, s);
	rls_metrics(&t, s);
	sync_metrics(&t, m);
	service_metrics(&t);
	free(rules);
	if (t.failed) {
		free(t.buf);
		return NULL;
	}
	return t.buf;
}
