// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Host unit tests of the sync wire format (user/sync/wire.c): what a node
 * accepts from the network. Expectations come from the layout table in
 * user/sync/wire.h, read here byte by byte, never from the encoder:
 *
 *  - a round trip keeps every field (0 entries, 1, SL_WIRE_MAX_ENTRIES),
 *    and the bytes sit where the table says, under a crypto_auth tag;
 *  - nothing changed in transit is accepted: every single-bit flip, a
 *    wrong key, every truncation, an oversized datagram;
 *  - a message signed with the right key but wrong in one field is
 *    refused with that field's error (the test re-signs its own bytes, so
 *    the tag is not what refuses it);
 *  - key files: 64 hex digits or 32 raw bytes, nothing else;
 *  - rule name hashes are FNV-1a 32, as every node must compute them.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sodium.h>
#include "sync/wire.h"

#define ULL(x)		((unsigned long long)(x))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* byte offsets of the layout table in user/sync/wire.h */
enum {
	OFF_MAGIC = 0, OFF_VERSION = 4, OFF_TYPE = 5, OFF_COUNT = 6,
	OFF_NODE = 8, OFF_INCARNATION = 12, OFF_SEQ = 20, OFF_SENT = 28,
	OFF_ENTRIES = 36,
	/* within an entry */
	E_ADDR = 0, E_HASH = 16, E_DPORT = 20, E_RESERVED = 22, E_START = 24,
	E_UNITS = 32,
};

static uint8_t key[SL_WIRE_KEY], other_key[SL_WIRE_KEY];
static struct sl_wire_entry in[SL_WIRE_MAX_ENTRIES], out[SL_WIRE_MAX_ENTRIES];

/* ---- helpers ------------------------------------------------------------- */

static uint64_t get_be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

static void put_be(uint8_t *p, unsigned n, uint64_t v)
{
	while (n--) {
		p[n] = v & 0xff;
		v >>= 8;
	}
}

/* A message's tag made again over its (changed) body with `key`. */
static void resign(uint8_t *buf, size_t len)
{
	crypto_auth(buf + len - SL_WIRE_TAG, buf, len - SL_WIRE_TAG, key);
}

/* Distinct, recognisable entries: every field differs from entry to entry
 * and uses its whole width.
 */
static void make_entries(struct sl_wire_entry *e, unsigned n)
{
	unsigned i, j;

	for (i = 0; i < n; i++) {
		memset(&e[i], 0, sizeof(e[i]));
		for (j = 0; j < 16; j++)
			e[i].addr.byte[j] = (uint8_t)(0x11 * j + i);
		e[i].rule_hash = 0x9e3779b9u * (i + 1);
		e[i].dport = htons((uint16_t)(53 + i));
		e[i].start_ms = 0x0123456789abcdefULL + i * 1000;
		e[i].units = 0xfedcba98u - i;
	}
}

static struct sl_wire_header header(uint8_t type, uint16_t count)
{
	return (struct sl_wire_header){
		.type = type, .count = count, .node = 0xbeef,
		.incarnation = 0x1122334455667788ULL,
		.seq = 0x0102030405060708ULL,
		.sent_ms = 0x8877665544332211ULL,
	};
}

/* A valid message of n entries (a heartbeat when n == 0). */
static size_t valid_message(uint8_t *buf, unsigned n)
{
	struct sl_wire_header h = header(n ? SL_WIRE_COUNTS : SL_WIRE_HEARTBEAT,
					 n);
	size_t len;

	make_entries(in, n);
	len = sl_wire_encode(buf, &h, in, key);
	assert_int_equal(len, SL_WIRE_HEADER + n * SL_WIRE_ENTRY + SL_WIRE_TAG);
	return len;
}

static enum sl_wire_error decode(const uint8_t *buf, size_t len)
{
	struct sl_wire_header h;

	return sl_wire_decode(buf, len, key, &h, out);
}

/* ---- round trip ---------------------------------------------------------- */

static void round_trip(unsigned n)
{
	struct sl_wire_header h = header(n ? SL_WIRE_COUNTS : SL_WIRE_HEARTBEAT,
					 n), got;
	uint8_t buf[SL_WIRE_MAX + 64], tag[SL_WIRE_TAG];
	size_t len;
	unsigned i;

	make_entries(in, n);
	memset(out, 0xa5, sizeof(out));
	len = sl_wire_encode(buf, &h, in, key);
	assert_true(len <= SL_WIRE_MAX);
	assert_int_equal(len, SL_WIRE_HEADER + n * SL_WIRE_ENTRY + SL_WIRE_TAG);

	/* the bytes are the table's */
	assert_memory_equal(buf + OFF_MAGIC, "SLS1", 4);
	assert_int_equal(buf[OFF_VERSION], 1);
	assert_int_equal(buf[OFF_TYPE], h.type);
	assert_int_equal(get_be(buf + OFF_COUNT, 2), n);
	assert_int_equal(get_be(buf + OFF_NODE, 4), h.node);
	assert_true(get_be(buf + OFF_INCARNATION, 8) == h.incarnation);
	assert_true(get_be(buf + OFF_SEQ, 8) == h.seq);
	assert_true(get_be(buf + OFF_SENT, 8) == h.sent_ms);
	for (i = 0; i < n; i++) {
		const uint8_t *p = buf + OFF_ENTRIES + i * SL_WIRE_ENTRY;

		assert_memory_equal(p + E_ADDR, in[i].addr.byte, 16);
		assert_int_equal(get_be(p + E_HASH, 4), in[i].rule_hash);
		/* the port goes out as it is held: network order */
		assert_int_equal(get_be(p + E_DPORT, 2), ntohs(in[i].dport));
		assert_int_equal(get_be(p + E_RESERVED, 2), 0);
		assert_true(get_be(p + E_START, 8) == in[i].start_ms);
		assert_int_equal(get_be(p + E_UNITS, 4), in[i].units);
	}
	crypto_auth(tag, buf, len - SL_WIRE_TAG, key);
	assert_memory_equal(buf + len - SL_WIRE_TAG, tag, SL_WIRE_TAG);

	/* and come back as they went */
	memset(&got, 0xa5, sizeof(got));
	assert_int_equal(sl_wire_decode(buf, len, key, &got, out), SL_WIRE_OK);
	assert_int_equal(got.type, h.type);
	assert_int_equal(got.count, n);
	assert_int_equal(got.node, h.node);
	assert_true(got.incarnation == h.incarnation);
	assert_true(got.seq == h.seq);
	assert_true(got.sent_ms == h.sent_ms);
	for (i = 0; i < n; i++) {
		assert_memory_equal(out[i].addr.byte, in[i].addr.byte, 16);
		assert_int_equal(out[i].rule_hash, in[i].rule_hash);
		assert_int_equal(out[i].dport, in[i].dport);
		assert_true(out[i].start_ms == in[i].start_ms);
		assert_int_equal(out[i].units, in[i].units);
	}
}

static void test_round_trip_heartbeat_no_entries(void **st)
{
	round_trip(0);
}

static void test_round_trip_one_entry(void **st)
{
	round_trip(1);
}

static void test_round_trip_max_entries_fits_the_datagram(void **st)
{
	/* the largest message fits, and one entry more would not */
	assert_true(SL_WIRE_HEADER + SL_WIRE_MAX_ENTRIES * SL_WIRE_ENTRY +
		    SL_WIRE_TAG <= SL_WIRE_MAX);
	assert_true(SL_WIRE_HEADER + (SL_WIRE_MAX_ENTRIES + 1) * SL_WIRE_ENTRY +
		    SL_WIRE_TAG > SL_WIRE_MAX);
	round_trip(SL_WIRE_MAX_ENTRIES);
}

/* ---- nothing changed in transit is accepted ------------------------------ */

static void test_every_bit_flip_is_forged(void **st)
{
	static const unsigned sizes[] = { 0, 1, 3, SL_WIRE_MAX_ENTRIES };
	uint8_t buf[SL_WIRE_MAX];
	unsigned s, bad = 0, tried = 0;
	size_t len, i;
	int bit;

	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		len = valid_message(buf, sizes[s]);
		for (i = 0; i < len; i++)
			for (bit = 0; bit < 8; bit++) {
				enum sl_wire_error e;

				buf[i] ^= 1u << bit;
				e = decode(buf, len);
				buf[i] ^= 1u << bit;
				tried++;
				if (e != SL_WIRE_FORGED && bad++ < 8)
					print_error("%u entries: bit %d of byte %zu "
						    "flipped: %s, expected forged\n",
						    sizes[s], bit, i,
						    sl_wire_error_str(e));
			}
		/* and the message itself is still good */
		assert_int_equal(decode(buf, len), SL_WIRE_OK);
	}
	print_message("%u single-bit flips refused\n", tried);
	if (bad)
		fail_msg("%u bit flips not refused as forged", bad);
}

static void test_wrong_key_is_forged(void **st)
{
	uint8_t buf[SL_WIRE_MAX], near[SL_WIRE_KEY];
	struct sl_wire_header h;
	size_t len;

	len = valid_message(buf, 2);
	assert_int_equal(sl_wire_decode(buf, len, other_key, &h, out),
			 SL_WIRE_FORGED);
	len = valid_message(buf, 0);
	assert_int_equal(sl_wire_decode(buf, len, other_key, &h, out),
			 SL_WIRE_FORGED);
	/* keys differing in a single bit */
	memcpy(near, key, sizeof(key));
	near[SL_WIRE_KEY - 1] ^= 0x80;
	assert_int_equal(sl_wire_decode(buf, len, near, &h, out),
			 SL_WIRE_FORGED);
}

/* Every prefix of a message is refused: too short for a header and tag is
 * malformed, anything longer has the wrong bytes where the tag should be.
 */
static void test_every_truncation_refused(void **st)
{
	static const unsigned sizes[] = { 0, 2, SL_WIRE_MAX_ENTRIES };
	uint8_t buf[SL_WIRE_MAX];
	unsigned s, bad = 0;
	size_t len, cut;

	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		len = valid_message(buf, sizes[s]);
		for (cut = 0; cut < len; cut++) {
			enum sl_wire_error e = decode(buf, cut);
			enum sl_wire_error want =
				cut < SL_WIRE_HEADER + SL_WIRE_TAG ?
				SL_WIRE_MALFORMED : SL_WIRE_FORGED;

			if (e != want && bad++ < 8)
				print_error("%u entries cut to %zu of %zu bytes: "
					    "%s, expected %s\n", sizes[s], cut,
					    len, sl_wire_error_str(e),
					    sl_wire_error_str(want));
		}
	}
	if (bad)
		fail_msg("%u truncations not refused", bad);
}

/* Longer than a datagram may be: refused before the tag is even checked,
 * however well signed.
 */
static void test_longer_than_max_refused(void **st)
{
	static uint8_t buf[SL_WIRE_MAX + 100];
	size_t len;

	len = valid_message(buf, SL_WIRE_MAX_ENTRIES);
	/* the same message with trailing bytes, signed again */
	memset(buf + len, 0, sizeof(buf) - len);
	for (len = SL_WIRE_MAX + 1; len <= sizeof(buf); len += 33) {
		resign(buf, len);
		assert_int_equal(decode(buf, len), SL_WIRE_MALFORMED);
	}
	len = SL_WIRE_MAX + 1;
	resign(buf, len);
	assert_int_equal(decode(buf, len), SL_WIRE_MALFORMED);
	/* one entry more than the maximum, count and length agreeing */
	len = SL_WIRE_HEADER + (SL_WIRE_MAX_ENTRIES + 1) * SL_WIRE_ENTRY +
	      SL_WIRE_TAG;
	assert_true(len <= sizeof(buf));
	put_be(buf + OFF_COUNT, 2, SL_WIRE_MAX_ENTRIES + 1);
	memset(buf + len - SL_WIRE_TAG - SL_WIRE_ENTRY, 0, SL_WIRE_ENTRY);
	put_be(buf + len - SL_WIRE_TAG - SL_WIRE_ENTRY + E_UNITS, 4, 1);
	resign(buf, len);
	assert_int_equal(decode(buf, len), SL_WIRE_MALFORMED);
	/* exactly SL_WIRE_MAX bytes, signed, count disagreeing: malformed */
	resign(buf, SL_WIRE_MAX);
	assert_int_equal(decode(buf, SL_WIRE_MAX), SL_WIRE_MALFORMED);
}

/* ---- signed, but wrong in one field -------------------------------------- */

struct field_case {
	const char *what;
	unsigned entries;	/* of the message changed */
	unsigned off;		/* byte offset to write */
	unsigned size;		/* bytes, big-endian */
	uint64_t value;
	enum sl_wire_error want;
};

#define ENTRY(i, field)	(OFF_ENTRIES + (i) * SL_WIRE_ENTRY + (field))

static const struct field_case field_cases[] = {
	{ "magic SLS0", 2, OFF_MAGIC, 4, 0x534c5330, SL_WIRE_MALFORMED },
	{ "magic 0", 0, OFF_MAGIC, 4, 0, SL_WIRE_MALFORMED },
	{ "magic byte-swapped", 2, OFF_MAGIC, 4, 0x31534c53, SL_WIRE_MALFORMED },
	{ "version 2", 2, OFF_VERSION, 1, 2, SL_WIRE_BAD_VERSION },
	{ "version 0", 0, OFF_VERSION, 1, 0, SL_WIRE_BAD_VERSION },
	{ "version 255", 2, OFF_VERSION, 1, 255, SL_WIRE_BAD_VERSION },
	{ "type 2", 2, OFF_TYPE, 1, 2, SL_WIRE_MALFORMED },
	{ "type 2, no entries", 0, OFF_TYPE, 1, 2, SL_WIRE_MALFORMED },
	{ "type 255", 2, OFF_TYPE, 1, 255, SL_WIRE_MALFORMED },
	{ "heartbeat with entries", 2, OFF_TYPE, 1, SL_WIRE_HEARTBEAT,
	  SL_WIRE_MALFORMED },
	{ "node 0", 2, OFF_NODE, 4, 0, SL_WIRE_MALFORMED },
	{ "node 0 in a heartbeat", 0, OFF_NODE, 4, 0, SL_WIRE_MALFORMED },
	{ "node 65536", 2, OFF_NODE, 4, 65536, SL_WIRE_MALFORMED },
	{ "node 0xffffffff", 2, OFF_NODE, 4, 0xffffffff, SL_WIRE_MALFORMED },
	{ "seq 0", 2, OFF_SEQ, 8, 0, SL_WIRE_MALFORMED },
	{ "seq 0 in a heartbeat", 0, OFF_SEQ, 8, 0, SL_WIRE_MALFORMED },
	{ "count one more than the entries", 2, OFF_COUNT, 2, 3,
	  SL_WIRE_MALFORMED },
	{ "count one fewer than the entries", 2, OFF_COUNT, 2, 1,
	  SL_WIRE_MALFORMED },
	{ "count 0 with entries", 2, OFF_COUNT, 2, 0, SL_WIRE_MALFORMED },
	{ "count 1 without entries", 0, OFF_COUNT, 2, 1, SL_WIRE_MALFORMED },
	{ "count 65535", 2, OFF_COUNT, 2, 65535, SL_WIRE_MALFORMED },
	{ "reserved high byte, first entry", 2, ENTRY(0, E_RESERVED), 1, 1,
	  SL_WIRE_MALFORMED },
	{ "reserved low byte, last entry", 2, ENTRY(1, E_RESERVED) + 1, 1, 0x80,
	  SL_WIRE_MALFORMED },
	{ "units 0, first entry", 2, ENTRY(0, E_UNITS), 4, 0,
	  SL_WIRE_MALFORMED },
	{ "units 0, last entry", 2, ENTRY(1, E_UNITS), 4, 0,
	  SL_WIRE_MALFORMED },
	{ "units 0, last of the largest", SL_WIRE_MAX_ENTRIES,
	  ENTRY(SL_WIRE_MAX_ENTRIES - 1, E_UNITS), 4, 0, SL_WIRE_MALFORMED },
	/* and what may be anything: the message stays good */
	{ "node 65535", 2, OFF_NODE, 4, 65535, SL_WIRE_OK },
	{ "seq max", 2, OFF_SEQ, 8, ~0ULL, SL_WIRE_OK },
	{ "units 1", 2, ENTRY(1, E_UNITS), 4, 1, SL_WIRE_OK },
	{ "start 0", 2, ENTRY(0, E_START), 8, 0, SL_WIRE_OK },
	{ "dport 0xffff", 2, ENTRY(0, E_DPORT), 2, 0xffff, SL_WIRE_OK },
};

static void test_signed_but_wrong_field_refused_with_its_error(void **st)
{
	uint8_t buf[SL_WIRE_MAX];
	unsigned i, bad = 0;
	size_t len;

	for (i = 0; i < ARRAY_SIZE(field_cases); i++) {
		const struct field_case *c = &field_cases[i];
		enum sl_wire_error e;

		len = valid_message(buf, c->entries);
		/* re-signing what was encoded changes nothing */
		resign(buf, len);
		assert_int_equal(decode(buf, len), SL_WIRE_OK);
		assert_true(c->off + c->size <= len - SL_WIRE_TAG);
		put_be(buf + c->off, c->size, c->value);
		resign(buf, len);
		e = decode(buf, len);
		if (e != c->want) {
			print_error("%s: %s, expected %s\n", c->what,
				    sl_wire_error_str(e),
				    sl_wire_error_str(c->want));
			bad++;
		}
		/* not re-signed, the same change is forged */
		put_be(buf + c->off, c->size, c->value ^ 1);
		if (decode(buf, len) != SL_WIRE_FORGED) {
			print_error("%s: changed after signing, not forged\n",
				    c->what);
			bad++;
		}
	}
	if (bad)
		fail_msg("%u of %zu signed field cases decoded wrong", bad,
			 ARRAY_SIZE(field_cases));
}

/* A signed message whose entries were cut off but whose count was not
 * changed: the count disagrees with the length, whatever the cut.
 */
static void test_signed_short_body_refused(void **st)
{
	uint8_t buf[SL_WIRE_MAX], tag[SL_WIRE_TAG];
	size_t len, body, cut;

	len = valid_message(buf, 3);
	body = len - SL_WIRE_TAG;
	for (cut = SL_WIRE_HEADER; cut < body; cut++) {
		uint8_t msg[SL_WIRE_MAX];

		memcpy(msg, buf, cut);
		crypto_auth(tag, msg, cut, key);
		memcpy(msg + cut, tag, SL_WIRE_TAG);
		assert_int_equal(decode(msg, cut + SL_WIRE_TAG),
				 SL_WIRE_MALFORMED);
	}
}

static void test_error_strings_distinct(void **st)
{
	assert_string_equal(sl_wire_error_str(SL_WIRE_OK), "ok");
	assert_string_not_equal(sl_wire_error_str(SL_WIRE_MALFORMED),
				sl_wire_error_str(SL_WIRE_FORGED));
	assert_string_not_equal(sl_wire_error_str(SL_WIRE_BAD_VERSION),
				sl_wire_error_str(SL_WIRE_FORGED));
	assert_string_not_equal(sl_wire_error_str(SL_WIRE_MALFORMED),
				sl_wire_error_str(SL_WIRE_BAD_VERSION));
}

/* ---- key files ----------------------------------------------------------- */

/* Write `len` bytes to a fresh file and load it as the key; what the
 * loader printed (its stderr) goes to `said`.
 */
static char said[1024];

static int load_key(const void *data, size_t len, uint8_t *k)
{
	char path[] = "/tmp/sl-test-key.XXXXXX";
	int fd = mkstemp(path), saved, err;
	FILE *tmp = tmpfile();
	size_t n;

	assert_true(fd >= 0);
	assert_non_null(tmp);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(tmp), 2);
	err = sl_wire_key_load(path, k);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(said, 1, sizeof(said) - 1, tmp);
	said[n] = '\0';
	fclose(tmp);
	unlink(path);
	return err;
}

static const char hex64[] =
	"000102030405060708090a0b0c0d0e0f"
	"f0e1d2c3b4a5968778695a4b3c2d1e0f";
static const uint8_t hex64_key[SL_WIRE_KEY] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87,
	0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d, 0x1e, 0x0f,
};

static void test_key_64_hex_digits_with_newline(void **st)
{
	char text[80];
	uint8_t k[SL_WIRE_KEY];
	size_t i;

	memset(k, 0xee, sizeof(k));
	snprintf(text, sizeof(text), "%s\n", hex64);
	assert_int_equal(load_key(text, strlen(text), k), 0);
	assert_memory_equal(k, hex64_key, SL_WIRE_KEY);
	/* without the newline, and in capitals */
	memset(k, 0xee, sizeof(k));
	assert_int_equal(load_key(hex64, 64, k), 0);
	assert_memory_equal(k, hex64_key, SL_WIRE_KEY);
	for (i = 0; i < 64; i++)
		text[i] = (char)toupper((unsigned char)hex64[i]);
	memset(k, 0xee, sizeof(k));
	assert_int_equal(load_key(text, 64, k), 0);
	assert_memory_equal(k, hex64_key, SL_WIRE_KEY);
}

static void test_key_32_raw_bytes(void **st)
{
	uint8_t raw[SL_WIRE_KEY], k[SL_WIRE_KEY];
	size_t i;

	/* not text at all: NULs, newlines, bytes above 0x7f */
	for (i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 37 + 10);
	raw[0] = 0;
	raw[1] = '\n';
	raw[31] = 0xff;
	assert_int_equal(load_key(raw, sizeof(raw), k), 0);
	assert_memory_equal(k, raw, SL_WIRE_KEY);
	assert_string_equal(said, "");
}

static void test_key_bad_files_refused(void **st)
{
	static const struct {
		const char *what;
		const char *text;
	} bad[] = {
		{ "63 hex digits", NULL },
		{ "63 hex digits and a newline", NULL },
		{ "65 hex digits", NULL },
		{ "66 hex digits", NULL },
		{ "a non-hex digit", NULL },
		{ "0x prefix", NULL },
		{ "empty", "" },
		{ "a newline", "\n" },
	};
	char text[128];
	uint8_t k[SL_WIRE_KEY];
	unsigned i, failed = 0;
	int err;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		switch (i) {
		case 0:
			snprintf(text, sizeof(text), "%.63s", hex64);
			break;
		case 1:
			snprintf(text, sizeof(text), "%.63s\n", hex64);
			break;
		case 2:
			snprintf(text, sizeof(text), "%s0", hex64);
			break;
		case 3:
			snprintf(text, sizeof(text), "%s00\n", hex64);
			break;
		case 4:
			snprintf(text, sizeof(text), "%s\n", hex64);
			text[17] = 'g';
			break;
		case 5:
			snprintf(text, sizeof(text), "0x%.62s\n", hex64);
			break;
		default:
			snprintf(text, sizeof(text), "%s", bad[i].text);
		}
		err = load_key(text, strlen(text), k);
		if (err != -EINVAL) {
			print_error("key file with %s: %d, expected -EINVAL\n",
				    bad[i].what, err);
			failed++;
		} else if (!strstr(said, "64 hex digits or 32 raw bytes")) {
			print_error("key file with %s: refused without saying "
				    "what a key is: \"%s\"\n", bad[i].what, said);
			failed++;
		}
	}
	assert_int_equal(sl_wire_key_load("/nonexistent/sl-key", k), -ENOENT);
	if (failed)
		fail_msg("%u bad key files accepted", failed);
}

/* ---- rule name hash ------------------------------------------------------ */

/* FNV-1a 32, from its definition: offset basis 2166136261, prime 16777619,
 * over the name's bytes as unsigned octets.
 */
static uint32_t fnv1a32(const char *s)
{
	uint32_t h = 0x811c9dc5u;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x01000193u;
	}
	return h;
}

static void test_rule_name_hash_is_fnv1a_32(void **st)
{
	static const char *const names[] = {
		"", "a", "dns", "sync-udp", "per-host", "per-net",
		"a-name-of-thirty-one-characters", "\xff\x80",
	};
	unsigned i;

	/* published FNV-1a 32 vectors, and values checked with Python */
	assert_int_equal(sl_rule_name_hash(""), 0x811c9dc5u);
	assert_int_equal(sl_rule_name_hash("a"), 0xe40c292cu);
	assert_int_equal(sl_rule_name_hash("foobar"), 0xbf9cf968u);
	assert_int_equal(sl_rule_name_hash("dns"), 0xda6ae8bcu);
	assert_int_equal(sl_rule_name_hash("sync-udp"), 0xf3aa4234u);
	/* bytes above 0x7f count as octets, not as negative chars */
	assert_int_equal(sl_rule_name_hash("\xff\x80"), 0xee1eea4au);
	for (i = 0; i < ARRAY_SIZE(names); i++)
		assert_int_equal(sl_rule_name_hash(names[i]), fnv1a32(names[i]));
	assert_int_not_equal(sl_rule_name_hash("per-host"),
			     sl_rule_name_hash("per-net"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_heartbeat_no_entries),
		cmocka_unit_test(test_round_trip_one_entry),
		cmocka_unit_test(test_round_trip_max_entries_fits_the_datagram),
		cmocka_unit_test(test_every_bit_flip_is_forged),
		cmocka_unit_test(test_wrong_key_is_forged),
		cmocka_unit_test(test_every_truncation_refused),
		cmocka_unit_test(test_longer_than_max_refused),
		cmocka_unit_test(test_signed_but_wrong_field_refused_with_its_error),
		cmocka_unit_test(test_signed_short_body_refused),
		cmocka_unit_test(test_error_strings_distinct),
		cmocka_unit_test(test_key_64_hex_digits_with_newline),
		cmocka_unit_test(test_key_32_raw_bytes),
		cmocka_unit_test(test_key_bad_files_refused),
		cmocka_unit_test(test_rule_name_hash_is_fnv1a_32),
	};
	unsigned i;

	for (i = 0; i < SL_WIRE_KEY; i++) {
		key[i] = (uint8_t)(i * 7 + 1);
		other_key[i] = (uint8_t)(i * 7 + 2);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
