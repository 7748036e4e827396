// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_sync: arbitrary bytes as a sync datagram, decoded by sl_wire_decode()
 * as node 7 would decode a peer's (user/sync/wire.h), its peers node 2
 * and node 3. A random tag never opens, so every input of at least a
 * header and a tag is also taken as a message in clear (the header, then
 * the entries as the table lays them out, then 16 bytes in the tag's
 * place), sealed here with the pair key of the node its header names (or
 * node 2's, for any other id), and decoded once more: that reaches every
 * check behind the seal.
 *
 * Invariants:
 *  - the result is one of the SL_WIRE_* codes; nothing is read outside
 *    the input (ASan);
 *  - as received, the input decodes only if it opens: OK means it
 *    re-encodes to the very same bytes;
 *  - sealed here, it is never FORGED, and decodes to what a reference
 *    checker written from the layout table in sync/wire.h says: bad magic
 *    MALFORMED, else a version other than 2 BAD_VERSION, else a sender
 *    other than node 2 or 3 UNKNOWN_PEER, else a type above 1, a
 *    heartbeat with entries, sequence 0, more than SL_WIRE_MAX_ENTRIES
 *    entries, a count other than the length gives, non-zero reserved
 *    bytes or an entry of 0 units MALFORMED, else OK with every field as
 *    the table places it; an OK message re-encodes to the same bytes;
 *  - sealed here by the other peer (a node speaking as another), it is
 *    FORGED whenever its sender is a peer.
 */
#include "fuzz_common.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>
#include "sync/wire.h"

/* node 7, and its peers 2 and 3, from fixed secret keys */
static struct sl_wire_keys rk;
static uint8_t key2[SL_WIRE_KEY], key3[SL_WIRE_KEY];	/* 2 -> 7, 3 -> 7 */

static void fail(const char *what, size_t len, int got, int want)
{
	fprintf(report ? report : stderr,
		"fuzz_sync: %zu bytes: %s\n  expected %d\n  got %d\n", len,
		what, want, got);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint8_t sk7[SL_WIRE_KEY], sk2[SL_WIRE_KEY], sk3[SL_WIRE_KEY];
	uint8_t pk2[SL_WIRE_KEY], pk3[SL_WIRE_KEY];
	unsigned i;

	fuzz_report_open();
	if (sodium_init() < 0)
		abort();
	for (i = 0; i < SL_WIRE_KEY; i++) {
		sk7[i] = (uint8_t)(i * 11 + 7);
		sk2[i] = (uint8_t)(i * 11 + 2);
		sk3[i] = (uint8_t)(i * 11 + 3);
	}
	if (sl_wire_public_key(pk2, sk2) || sl_wire_public_key(pk3, sk3) ||
	    sl_wire_keys_init(&rk, 7, sk7) ||
	    sl_wire_keys_add(&rk, sk7, 2, pk2, NULL) ||
	    sl_wire_keys_add(&rk, sk7, 3, pk3, NULL))
		abort();
	memcpy(key2, rk.peer[0].from, SL_WIRE_KEY);
	memcpy(key3, rk.peer[1].from, SL_WIRE_KEY);
	return 0;
}

static uint64_t be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

/* What the layout table says of a correctly sealed message, in clear. */
static int reference(const uint8_t *b, size_t len)
{
	uint64_t type, count, node, i;
	const uint8_t *e;

	if (len < SL_WIRE_HEADER + SL_WIRE_TAG || len > SL_WIRE_MAX)
		return SL_WIRE_MALFORMED;
	if (memcmp(b, "SLS1", 4))
		return SL_WIRE_MALFORMED;
	if (b[4] != 2)
		return SL_WIRE_BAD_VERSION;
	type = b[5];
	count = be(b + 6, 2);
	node = be(b + 8, 4);
	if (node != 2 && node != 3)
		return SL_WIRE_UNKNOWN_PEER;
	if (type > 1 || (type == 1 && count) || be(b + 20, 8) == 0 || count > SL_WIRE_MAX_ENTRIES ||
	    len != SL_WIRE_HEADER + count * SL_WIRE_ENTRY + SL_WIRE_TAG)
		return SL_WIRE_MALFORMED;
	for (i = 0, e = b + SL_WIRE_HEADER; i < count; i++, e += SL_WIRE_ENTRY)
		if (be(e + 22, 2) || be(e + 32, 4) == 0)
			return SL_WIRE_MALFORMED;
	return SL_WIRE_OK;
}

/* The key node 7 opens a sender's datagrams with (node 2's for any id
 * that is no peer).
 */
static const uint8_t *key_of(uint64_t node)
{
	return node == 3 ? key3 : key2;
}

/* The message in clear b (as the table lays it out) sealed with `key`
 * into out: its length.
 */
static size_t seal(const uint8_t *b, size_t len, const uint8_t *key,
		   uint8_t *out)
{
	unsigned long long n;

	memmove(out, b, SL_WIRE_HEADER);
	crypto_aead_xchacha20poly1305_ietf_encrypt(
		out + SL_WIRE_HEADER, &n, b + SL_WIRE_HEADER,
		len - SL_WIRE_HEADER - SL_WIRE_TAG, out, SL_WIRE_HEADER, NULL,
		out + 36, key);
	return SL_WIRE_HEADER + n;
}

/* A decoded message holds the fields the table places in its clear form
 * b, and encodes back to the same bytes as `sealed`.
 */
static void check_decoded(const uint8_t *b, const uint8_t *sealed, size_t len,
			  const struct sl_wire_header *h,
			  const struct sl_wire_entry *e)
{
	static uint8_t again[SL_WIRE_MAX];
	const uint8_t *p = b + SL_WIRE_HEADER;
	unsigned i;

	if (h->type != b[5] || h->count != be(b + 6, 2) ||
	    h->node != be(b + 8, 4) || h->incarnation != be(b + 12, 8) ||
	    h->seq != be(b + 20, 8) || h->sent_ms != be(b + 28, 8) ||
	    memcmp(h->nonce, b + 36, SL_WIRE_NONCE))
		fail("a header field is not what the table places", len, 0, 0);
	for (i = 0; i < h->count; i++, p += SL_WIRE_ENTRY)
		if (memcmp(e[i].addr.byte, p, 16) ||
		    e[i].rule_hash != be(p + 16, 4) ||
		    memcmp(&e[i].dport, p + 20, 2) ||
		    e[i].start_ms != be(p + 24, 8) ||
		    e[i].units != be(p + 32, 4))
			fail("an entry field is not what the table places", len,
			     (int)i, 0);
	if (sl_wire_encode(again, h, e, key_of(h->node)) != len ||
	    memcmp(again, sealed, len))
		fail("a decoded message does not encode to the same bytes", len,
		     0, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[SL_WIRE_MAX], clear[SL_WIRE_MAX];
	static struct sl_wire_entry e[SL_WIRE_MAX_ENTRIES];
	struct sl_wire_header h;
	uint64_t node;
	int got, want;

	/* as received */
	got = sl_wire_decode(data, size, &rk, "", &h, e);
	if (got != SL_WIRE_OK && got != SL_WIRE_MALFORMED &&
	    got != SL_WIRE_BAD_VERSION && got != SL_WIRE_FORGED &&
	    got != SL_WIRE_UNKNOWN_PEER)
		fail("not an SL_WIRE_* code", size, got, SL_WIRE_OK);
	if (got == SL_WIRE_OK) {
		/* in clear, it is what re-encoding it gives */
		if (sl_wire_encode(buf, &h, e, key_of(h.node)) != size ||
		    memcmp(buf, data, size))
			fail("accepted as received, does not encode back",
			     size, got, 0);
	}
	if (size < SL_WIRE_HEADER + SL_WIRE_TAG || size > SL_WIRE_MAX)
		return 0;

	/* in clear, sealed here: past the seal */
	memcpy(clear, data, size);
	node = be(clear + 8, 4);
	seal(clear, size, key_of(node), buf);
	got = sl_wire_decode(buf, size, &rk, "", &h, e);
	want = reference(clear, size);
	if (got != want)
		fail("sealed with the pair key: not what the layout table says",
		     size, got, want);
	if (got == SL_WIRE_OK)
		check_decoded(clear, buf, size, &h, e);
	/* sealed by the other peer, claiming this one */
	seal(clear, size, node == 3 ? key2 : key3, buf);
	got = sl_wire_decode(buf, size, &rk, "", &h, e);
	if ((node == 2 || node == 3) && !memcmp(clear, "SLS1\2", 5) &&
	    got != SL_WIRE_FORGED)
		fail("sealed by another peer: not forged", size, got,
		     SL_WIRE_FORGED);
	return 0;
}
