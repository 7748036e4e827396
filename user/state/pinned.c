// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "state/client_keys.h"
#include "util/log.h"
#include "util/parse.h"
#include "state/pinned.h"
#include "sl_key.h"

const struct sl_rule *sl_rule_by_name(const struct sl_rule *rules,
				      unsigned nr, const char *name)
{
	unsigned i;

	for (i = 0; i < nr; i++)
		if (!strcmp(rules[i].name, name))
			return &rules[i];
	return NULL;
}

const char *sl_format_client(const struct sl_client_key *key,
			     const struct sl_rule *rule, char *buf, size_t len)
{
	bool v4 = sl_addr_is_ipv4(&key->addr);
	unsigned plen = !rule ? 128 : v4 ? 96 + rule->key_ipv4_prefix :
			rule->key_ipv6_prefix;
	size_t n;

	/* a hashed API key is the whole address: what query and reset take */
	if (sl_client_addr_hashed(&key->addr))
		return sl_format_prefix(&key->addr, 128, buf, len);
	sl_format_prefix(&key->addr, plen, buf, len);
	n = strlen(buf);
	if ((rule ? rule->key_by_port : key->dport != 0) && n < len)
		snprintf(buf + n, len - n, " port %u", ntohs(key->dport));
	return buf;
}

void sl_client_view_to_json(json_object *o, const struct sl_rule *rule,
			    const struct sl_client_view *v)
{
	json_object_object_add(o, "rule", json_object_new_string(rule->name));
	json_object_object_add(o, "limit", json_object_new_int64(sl_rule_quota(rule)));
	json_object_object_add(o, "window_ms", json_object_new_int64(rule->window_ms));
	json_object_object_add(o, "used", json_object_new_int64(v->used));
	json_object_object_add(o, "remaining", json_object_new_int64(v->remaining));
	json_object_object_add(o, "retry_after_ms", json_object_new_int64(v->retry_after_ms));
	json_object_object_add(o, "retry_after_s",
			       json_object_new_int64(sl_retry_after_s(v)));
	json_object_object_add(o, "exempt", json_object_new_boolean(v->exempt));
}

json_object *sl_client_row_to_json(const char *client, bool api_key,
				   const struct sl_rule *rule,
				   const struct sl_client_view *v)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "client", json_object_new_string(client));
	json_object_object_add(o, "api_key", json_object_new_boolean(api_key));
	sl_client_view_to_json(o, rule, v);
	return o;
}

void sl_client_rows_header(FILE *f)
{
	fprintf(f, "%-32s %-20s %10s %10s %10s %12s\n", "CLIENT", "RULE",
		"LIMIT", "USED", "REMAINING", "RETRY_AFTER");
}

void sl_client_row_print(FILE *f, const char *client, bool api_key,
			 const struct sl_rule *rule,
			 const struct sl_client_view *v)
{
	char name[128];

	snprintf(name, sizeof(name), "%s%s", client, api_key ? " (api key)" : "");
	if (v->exempt)
		fprintf(f, "%-32s %-20s %10llu %10s %10s %12s\n", name,
			rule->name, (unsigned long long)sl_rule_quota(rule),
			"-", "exempt", "-");
	else
		fprintf(f, "%-32s %-20s %10llu %10llu %10llu %11llus\n", name,
			rule->name, (unsigned long long)sl_rule_quota(rule),
			(unsigned long long)v->used,
			(unsigned long long)v->remaining,
			(unsigned long long)sl_retry_after_s(v));
}

__u64 sl_retry_after_s(const struct sl_client_view *v)
{
	/* Retry-After is whole seconds, rounded up (RFC 9110) */
	return (v->retry_after_ms + 999) / 1000;
}

void sl_rule_stats_to_json(json_object *o, const struct sl_rule_stats *rs)
{
	sl_json_add_u64(o, "passed", rs->passed);
	sl_json_add_u64(o, "dropped", rs->dropped);
	sl_json_add_u64(o, "shadow_dropped", rs->shadow_dropped);
	sl_json_add_u64(o, "exempt", rs->exempt);
	sl_json_add_u64(o, "passed_bytes", rs->passed_bytes);
	sl_json_add_u64(o, "dropped_bytes", rs->dropped_bytes);
}

json_object *sl_global_stats_to_json(const struct sl_global_stats *gs)
{
	json_object *g = json_object_new_object();

	sl_json_add_u64(g, "packets", gs->packets);
	sl_json_add_u64(g, "non_ip", gs->non_ip);
	sl_json_add_u64(g, "malformed", gs->malformed);
	sl_json_add_u64(g, "fragments", gs->fragments);
	sl_json_add_u64(g, "no_rule", gs->no_rule);
	sl_json_add_u64(g, "fail_open", gs->fail_open);
	sl_json_add_u64(g, "new_clients", gs->new_clients);
	sl_json_add_u64(g, "events_lost", gs->events_lost);
	sl_json_add_u64(g, "frag_first", gs->frag_first);
	sl_json_add_u64(g, "frag_later", gs->frag_later);
	sl_json_add_u64(g, "frag_later_dropped", gs->frag_later_dropped);
	sl_json_add_u64(g, "frag_orphans", gs->frag_orphans);
	sl_json_add_u64(g, "long_chains", gs->long_chains);
	sl_json_add_u64(g, "long_chains_dropped", gs->long_chains_dropped);
	sl_json_add_u64(g, "icmp_control", gs->icmp_control);
	sl_json_add_u64(g, "mapped_v4", gs->mapped_v4);
	sl_json_add_u64(g, "vlan_deep", gs->vlan_deep);
	sl_json_add_u64(g, "vlan_deep_dropped", gs->vlan_deep_dropped);
	sl_json_add_u64(g, "newcomers", gs->newcomers);
	sl_json_add_u64(g, "promoted", gs->promoted);
	sl_json_add_u64(g, "newcomers_displaced", gs->newcomers_displaced);
	sl_json_add_u64(g, "front_skipped", gs->front_skipped);
	sl_json_add_u64(g, "front_probes", gs->front_probes);
	return g;
}

__u32 sl_map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

bool sl_still_pinned(const char *name, __u32 id)
{
	char path[256];
	bool same;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", SL_PIN_DIR, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	same = sl_map_id(fd) == id;
	close(fd);
	return same;
}
