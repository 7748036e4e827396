// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The store's keys: a client's hash, its id in the index, and the Cluster
 * slot both are in.
 *
 * Layout in the store
 *   sl:{RRRRRRRR:AAAA...AAAA:PORT}   one hash per client: rule name hash
 *       (8 hex), address (32 hex, IPv4-mapped for IPv4), destination port
 *       (decimal, host order; 0 when the rule does not key by port).
 *       Field "START:NODE" holds the units NODE accepted in the peer slice
 *       that began at START (TAI ms). The whole id is the hash tag, so a
 *       client's fields sit in one Cluster slot and one script may touch
 *       them atomically.
 *   sl:{index}   sorted set of the client ids pushed lately, scored by the
 *       store's own clock (µs, made strictly increasing by
 *       sl:{index}:clock, the same slot), so every node reads "what changed
 *       since I last looked" against one clock, whatever the nodes' clocks
 *       say.
 */
#include <arpa/inet.h>
#include <sodium.h>
#include "sync/redis_internal.h"

/* Redis Cluster's key slot: CRC16-CCITT (XMODEM) of the hash tag. */
static uint16_t cluster_slot(const char *tag, size_t len)
{
	uint16_t crc = 0;
	size_t i;
	int b;

	for (i = 0; i < len; i++) {
		crc ^= (uint16_t)(uint8_t)tag[i] << 8;
		for (b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
	}
	return crc & 16383;
}

void redis_client_init(struct client *c, const struct sl_wire_entry *who)
{
	char *p = c->key;
	int n;

	memset(c, 0, sizeof(*c));
	c->who.addr = who->addr;
	c->who.rule_hash = who->rule_hash;
	c->who.dport = who->dport;
	n = snprintf(p, sizeof(c->key), "sl:{%08x:", who->rule_hash);
	sodium_bin2hex(p + n, sizeof(c->key) - n, who->addr.byte, 16);
	n += 32;
	n += snprintf(p + n, sizeof(c->key) - n, ":%u}", ntohs(who->dport));
	c->key_len = n;
	c->slot = cluster_slot(c->key + 4, n - 5);
}

/* An id read from the index, as redis_client_init would have written it; a
 * member in any other form (not ours, or damaged) is refused: the hex
 * reader takes capitals too, but only the lowercase spelling matches
 * what redis_client_init writes back.
 */
int redis_client_parse(struct client *c, const char *id, size_t len)
{
	struct sl_wire_entry who;
	uint32_t hash_be;
	size_t i;
	unsigned port = 0;

	if (len < 8 + 1 + 32 + 1 + 1 || len > 8 + 1 + 32 + 1 + 5 ||
	    id[8] != ':' || id[41] != ':')
		return -EINVAL;
	memset(&who, 0, sizeof(who));
	if (sodium_hex2bin((uint8_t *)&hash_be, 4, id, 8, NULL, NULL, NULL) ||
	    sodium_hex2bin(who.addr.byte, 16, id + 9, 32, NULL, NULL, NULL))
		return -EINVAL;
	who.rule_hash = ntohl(hash_be);
	for (i = 42; i < len; i++) {
		if (id[i] < '0' || id[i] > '9')
			return -EINVAL;
		port = port * 10 + (id[i] - '0');
	}
	if (port > 65535 || (id[42] == '0' && len > 43))
		return -EINVAL;
	who.dport = htons(port);
	redis_client_init(c, &who);
	/* the canonical form only: one client, one hash */
	if ((size_t)c->key_len - 5 != len || memcmp(c->key + 4, id, len))
		return -EINVAL;
	return 0;
}

int redis_client_cmp(const void *a, const void *b)
{
	const struct client *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	if (x->key_len != y->key_len)
		return x->key_len < y->key_len ? -1 : 1;
	return memcmp(x->key, y->key, x->key_len);
}

int redis_entry_cmp(const void *a, const void *b)
{
	const struct sl_wire_entry *x = a, *y = b;
	int d;

	if (x->rule_hash != y->rule_hash)
		return x->rule_hash < y->rule_hash ? -1 : 1;
	d = memcmp(&x->addr, &y->addr, sizeof(x->addr));
	if (d)
		return d;
	if (x->dport != y->dport)
		return x->dport < y->dport ? -1 : 1;
	if (x->start_ms != y->start_ms)
		return x->start_ms < y->start_ms ? -1 : 1;
	return 0;
}

bool redis_same_client(const struct sl_wire_entry *x,
		       const struct sl_wire_entry *y)
{
	return x->rule_hash == y->rule_hash && x->dport == y->dport &&
	       !memcmp(&x->addr, &y->addr, sizeof(x->addr));
}

uint16_t redis_index_slot(void)
{
	return cluster_slot(INDEX_TAG, strlen(INDEX_TAG));
}
