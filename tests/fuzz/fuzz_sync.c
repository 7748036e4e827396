// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_sync: arbitrary bytes as a sync datagram, decoded by sl_wire_decode()
 * with the fleet key as a peer's message would be (user/sync/wire.h). A
 * random tag never verifies, so every input of at least a header and a
 * tag is also decoded once more after signing it here with the same key:
 * that reaches every check behind the tag.
 *
 * Invariants:
 *  - the result is one of the SL_WIRE_* codes; nothing is read outside
 *    the input (ASan);
 *  - as received, the input decodes only if its tag is right: OK means it
 *    re-encodes to the very same bytes;
 *  - signed here, it is never FORGED, and decodes to what a reference
 *    checker written from the layout table in sync/wire.h says: bad magic
 *    MALFORMED, else a version other than 1 BAD_VERSION, else a type
 *    above 1, a heartbeat with entries, node 0 or above 65535, sequence
 *    0, more than SL_WIRE_MAX_ENTRIES entries, a count other than the
 *    length gives, non-zero reserved bytes or an entry of 0 units
 *    MALFORMED, else OK with every field as the table places it; an OK
 *    message re-encodes to the same bytes;
 *  - signed here, it is FORGED under any other key.
 */
#include "fuzz_common.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>
#include "sync/wire.h"

/* the key the seed corpus (corpus/fuzz_sync) is signed with */
static uint8_t key[SL_WIRE_KEY], other_key[SL_WIRE_KEY];

static void fail(const char *what, size_t len, int got, int want)
{
	fprintf(report ? report : stderr,
		"fuzz_sync: %zu bytes: %s\n  expected %d\n  got %d\n", len,
		what, want, got);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	unsigned i;

	fuzz_report_open();
	for (i = 0; i < SL_WIRE_KEY; i++) {
		key[i] = (uint8_t)(i * 11 + 7);
		other_key[i] = key[i] ^ (i == 5);
	}
	return 0;
}

static uint64_t be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

/* What the layout table says of a correctly tagged message. */
static int reference(const uint8_t *b, size_t len)
{
	uint64_t type, count, node, i;
	const uint8_t *e;

	if (len < SL_WIRE_HEADER + SL_WIRE_TAG || len > SL_WIRE_MAX)
		return SL_WIRE_MALFORMED;
	if (memcmp(b, "SLS1", 4))
		return SL_WIRE_MALFORMED;
	if (b[4] != 1)
		return SL_WIRE_BAD_VERSION;
	type = b[5];
	count = be(b + 6, 2);
	node = be(b + 8, 4);
	if (type > 1 || (type == 1 && count) || node == 0 || node > 65535 ||
	    be(b + 20, 8) == 0 || count > SL_WIRE_MAX_ENTRIES ||
	    len != SL_WIRE_HEADER + count * SL_WIRE_ENTRY + SL_WIRE_TAG)
		return SL_WIRE_MALFORMED;
	for (i = 0, e = b + SL_WIRE_HEADER; i < count; i++, e += SL_WIRE_ENTRY)
		if (be(e + 22, 2) || be(e + 32, 4) == 0)
			return SL_WIRE_MALFORMED;
	return SL_WIRE_OK;
}

/* A decoded message holds the table's fields, and encodes back to the
 * same bytes.
 */
static void check_decoded(const uint8_t *b, size_t len,
			  const struct sl_wire_header *h,
			  const struct sl_wire_entry *e)
{
	static uint8_t again[SL_WIRE_MAX];
	const uint8_t *p = b + SL_WIRE_HEADER;
	unsigned i;

	if (h->type != b[5] || h->count != be(b + 6, 2) ||
	    h->node != be(b + 8, 4) || h->incarnation != be(b + 12, 8) ||
	    h->seq != be(b + 20, 8) || h->sent_ms != be(b + 28, 8))
		fail("a header field is not what the table places", len, 0, 0);
	for (i = 0; i < h->count; i++, p += SL_WIRE_ENTRY)
		if (memcmp(e[i].addr.byte, p, 16) ||
		    e[i].rule_hash != be(p + 16, 4) ||
		    memcmp(&e[i].dport, p + 20, 2) ||
		    e[i].start_ms != be(p + 24, 8) ||
		    e[i].units != be(p + 32, 4))
			fail("an entry field is not what the table places", len,
			     (int)i, 0);
	if (sl_wire_encode(again, h, e, key) != len ||
	    memcmp(again, b, len))
		fail("a decoded message does not encode to the same bytes", len,
		     0, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[SL_WIRE_MAX];
	static struct sl_wire_entry e[SL_WIRE_MAX_ENTRIES];
	struct sl_wire_header h;
	int got, want;

	/* as received */
	got = sl_wire_decode(data, size, key, &h, e);
	if (got != SL_WIRE_OK && got != SL_WIRE_MALFORMED &&
	    got != SL_WIRE_BAD_VERSION && got != SL_WIRE_FORGED)
		fail("not an SL_WIRE_* code", size, got, SL_WIRE_OK);
	if (got == SL_WIRE_OK) {
		if (reference(data, size) != SL_WIRE_OK)
			fail("accepted as received, the reference refuses it",
			     size, got, reference(data, size));
		check_decoded(data, size, &h, e);
	}
	if (size < SL_WIRE_HEADER + SL_WIRE_TAG || size > SL_WIRE_MAX)
		return 0;

	/* signed here: past the tag */
	memcpy(buf, data, size);
	crypto_auth(buf + size - SL_WIRE_TAG, buf, size - SL_WIRE_TAG, key);
	got = sl_wire_decode(buf, size, key, &h, e);
	want = reference(buf, size);
	if (got != want)
		fail("signed with the key: not what the layout table says",
		     size, got, want);
	if (got == SL_WIRE_OK)
		check_decoded(buf, size, &h, e);
	got = sl_wire_decode(buf, size, other_key, &h, e);
	if (got != SL_WIRE_FORGED)
		fail("signed with another key: not forged", size, got,
		     SL_WIRE_FORGED);
	return 0;
}
