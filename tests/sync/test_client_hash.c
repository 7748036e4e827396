// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * Host unit tests of the sync engine's client table hash
 * (user/sync/client_hash.c): addresses chosen to share one bucket of an
 * unkeyed hash (FNV-1a, which the table used, computed here as an
 * attacker would) spread over the table under the keyed one, so a
 * linear-probing table as the engine's stays a probe or two per lookup.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "sync/client_hash.h"

#define CAP	4096	/* slots: a power of two, as the engine's */
#define NR	512	/* hostile keys */

/* The unkeyed hash an attacker can compute. */
static size_t fnv1a(const struct sl_client_key *k)
{
	const unsigned char *p = (const void *)k;
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h ^ (h >> 29);
}

/* NR IPv4 client keys of rule 0 whose FNV-1a bucket is 0. */
static void hostile_keys(struct sl_client_key *keys)
{
	struct sl_client_key k = {};
	uint32_t a = 0;
	size_t n = 0;

	k.addr.byte[10] = k.addr.byte[11] = 0xff;	/* ::ffff:a.b.c.d */
	while (n < NR) {
		a++;
		memcpy(&k.addr.byte[12], &a, 4);
		if (!(fnv1a(&k) & (CAP - 1)))
			keys[n++] = k;
	}
}

/* Insert every key into a linear-probing table (the engine's table_slot)
 * under HASH; the longest probe sequence any insert walked.
 */
static size_t longest_probe(const struct sl_client_key *keys,
			    size_t (*hash)(const void *ctx, const struct sl_client_key *),
			    const void *ctx)
{
	static bool used[CAP];
	size_t n, i, probes, longest = 0;

	memset(used, 0, sizeof(used));
	for (n = 0; n < NR; n++) {
		i = hash(ctx, &keys[n]) & (CAP - 1);
		for (probes = 1; used[i]; probes++)
			i = (i + 1) & (CAP - 1);
		used[i] = true;
		if (probes > longest)
			longest = probes;
	}
	return longest;
}

static size_t by_fnv(const void *ctx, const struct sl_client_key *k)
{
	(void)ctx;
	return fnv1a(k);
}

static size_t by_keyed(const void *ctx, const struct sl_client_key *k)
{
	return sl_client_hash(ctx, k);
}

static void test_colliding_keys_spread_under_the_keyed_hash(void **state)
{
	static struct sl_client_key keys[NR];
	struct sl_client_hash h;

	(void)state;
	hostile_keys(keys);
	/* the keys are hostile: unkeyed, each insert walks all before it */
	assert_int_equal(longest_probe(keys, by_fnv, NULL), NR);
	assert_int_equal(sl_client_hash_init(&h), 0);
	/* 512 keys in 4096 slots at random: a run of 16 has odds far
	 * below one in a million
	 */
	assert_true(longest_probe(keys, by_keyed, &h) <= 16);
}

static void test_each_table_draws_its_own_key(void **state)
{
	struct sl_client_hash a, b;
	struct sl_client_key k = { .rule_id = 3 };

	(void)state;
	assert_int_equal(sl_client_hash_init(&a), 0);
	assert_int_equal(sl_client_hash_init(&b), 0);
	assert_memory_not_equal(a.key, b.key, sizeof(a.key));
	assert_int_equal(sl_client_hash(&a, &k), sl_client_hash(&a, &k));
	assert_int_not_equal(sl_client_hash(&a, &k), sl_client_hash(&b, &k));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_colliding_keys_spread_under_the_keyed_hash),
		cmocka_unit_test(test_each_table_draws_its_own_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
