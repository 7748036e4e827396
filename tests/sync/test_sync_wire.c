// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fixtures: none */
/*
 * Host unit tests of the sync wire format (user/sync/wire.c): what a node
 * accepts from the network. Expectations come from the layout table in
 * user/sync/wire.h, read here byte by byte, never from the encoder:
 *
 *  - a round trip keeps every field (0 entries, 1, SL_WIRE_MAX_ENTRIES);
 *    the header bytes sit where the table says, the entries only
 *    encrypted (no client address in clear), sealed with the pair key
 *    the table defines (computed here from X25519 and BLAKE2b);
 *  - admission: a sender id that is no configured peer, a datagram from
 *    another address than the peer's, one sealed by another node or for
 *    another node, are refused each with its reason;
 *  - nothing changed in transit is accepted: every single-bit flip of
 *    every header field and of the sealed part, every truncation, an
 *    oversized datagram;
 *  - a message sealed with the right key but wrong in one field is
 *    refused with that field's error (the test seals its own bytes, so
 *    the tag is not what refuses it);
 *  - key files: 64 hex digits or 32 raw bytes, nothing else;
 *  - rule name hashes are FNV-1a 32, as every node must compute them.
 */
#define _GNU_SOURCE
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
	OFF_NONCE = 36, OFF_ENTRIES = 60,
	/* within an entry */
	E_ADDR = 0, E_HASH = 16, E_DPORT = 20, E_RESERVED = 22, E_START = 24,
	E_UNITS = 32,
};

/* S sends to R; M is a third node, a peer of both */
enum { NODE_S = 0xbeef, NODE_R = 7, NODE_M = 3 };
#define ADDR_S	"10.0.0.2:7400"
#define ADDR_M	"10.0.0.3:7400"
#define ADDR_R	"10.0.0.7:7400"

static uint8_t s_sk[SL_WIRE_KEY], s_pk[SL_WIRE_KEY];
static uint8_t r_sk[SL_WIRE_KEY], r_pk[SL_WIRE_KEY];
static uint8_t m_sk[SL_WIRE_KEY], m_pk[SL_WIRE_KEY];
/* each node's keys: S's peer is R; R's are S then M; M's are R then S */
static struct sl_wire_keys sk, rk, mk;
/* the key of datagrams from S to R, as the table in wire.h defines it */
static uint8_t key[SL_WIRE_KEY];
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

/* The key of datagrams from node a to node b, from the table in wire.h:
 * BLAKE2b-256 of the context, the X25519 shared secret, then a's id (4
 * bytes, big-endian) and public key, b's id and public key.
 */
static void table_key(uint8_t *out_key, const uint8_t *own_sk,
		      const uint8_t *other_pk, uint32_t a, const uint8_t *a_pk,
		      uint32_t b, const uint8_t *b_pk)
{
	static const char context[] = "slicelimit sync pair v2";
	uint8_t msg[sizeof(context) + 3 * SL_WIRE_KEY + 8], *p = msg;

	memcpy(p, context, sizeof(context));
	p += sizeof(context);
	assert_int_equal(crypto_scalarmult(p, own_sk, other_pk), 0);
	p += SL_WIRE_KEY;
	put_be(p, 4, a);
	memcpy(p + 4, a_pk, SL_WIRE_KEY);
	p += 4 + SL_WIRE_KEY;
	put_be(p, 4, b);
	memcpy(p + 4, b_pk, SL_WIRE_KEY);
	p += 4 + SL_WIRE_KEY;
	crypto_generichash(out_key, SL_WIRE_KEY, msg, p - msg, NULL, 0);
}

/* The clear form of a message: its 60 header bytes, then the entries as
 * the table lays them out, before sealing (offsets as OFF_* and ENTRY()).
 */
static size_t unseal(const uint8_t *buf, size_t len, uint8_t *clear)
{
	unsigned long long n;

	memcpy(clear, buf, OFF_ENTRIES);
	assert_int_equal(crypto_aead_xchacha20poly1305_ietf_decrypt(
		clear + OFF_ENTRIES, &n, NULL, buf + OFF_ENTRIES,
		len - OFF_ENTRIES, buf, OFF_ENTRIES, buf + OFF_NONCE, key), 0);
	return OFF_ENTRIES + n;
}

/* Seal a clear form of clen bytes with `key` (S to R): the message. */
static size_t seal(const uint8_t *clear, size_t clen, uint8_t *buf)
{
	unsigned long long n;

	memmove(buf, clear, OFF_ENTRIES);
	crypto_aead_xchacha20poly1305_ietf_encrypt(
		buf + OFF_ENTRIES, &n, clear + OFF_ENTRIES, clen - OFF_ENTRIES,
		buf, OFF_ENTRIES, NULL, buf + OFF_NONCE, key);
	return OFF_ENTRIES + n;
}

/* A message's tag made again over its (changed) clear form. */
static void resign(uint8_t *clear, size_t clen, uint8_t *buf)
{
	seal(clear, clen, buf);
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
		.nonce = "0123456789abcdefghijklm",
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

	return sl_wire_decode(buf, len, &rk, ADDR_S, &h, out);
}

/* ---- round trip ---------------------------------------------------------- */

static void round_trip(unsigned n)
{
	struct sl_wire_header h = header(n ? SL_WIRE_COUNTS : SL_WIRE_HEARTBEAT,
					 n), got;
	uint8_t buf[SL_WIRE_MAX + 64], clear[SL_WIRE_MAX];
	size_t len, clen;
	unsigned i;

	make_entries(in, n);
	memset(out, 0xa5, sizeof(out));
	len = sl_wire_encode(buf, &h, in, key);
	assert_true(len <= SL_WIRE_MAX);
	assert_int_equal(len, SL_WIRE_HEADER + n * SL_WIRE_ENTRY + SL_WIRE_TAG);

	/* the header's bytes are the table's, in clear */
	assert_memory_equal(buf + OFF_MAGIC, "SLS1", 4);
	assert_int_equal(buf[OFF_VERSION], 2);
	assert_int_equal(buf[OFF_TYPE], h.type);
	assert_int_equal(get_be(buf + OFF_COUNT, 2), n);
	assert_int_equal(get_be(buf + OFF_NODE, 4), h.node);
	assert_true(get_be(buf + OFF_INCARNATION, 8) == h.incarnation);
	assert_true(get_be(buf + OFF_SEQ, 8) == h.seq);
	assert_true(get_be(buf + OFF_SENT, 8) == h.sent_ms);
	assert_memory_equal(buf + OFF_NONCE, h.nonce, SL_WIRE_NONCE);
	/* no client address travels in clear: not one entry's 16 bytes,
	 * nor its IPv4 part, anywhere in the datagram
	 */
	for (i = 0; i < n; i++) {
		assert_null(memmem(buf, len, in[i].addr.byte, 16));
		assert_null(memmem(buf, len, in[i].addr.byte + 12, 4));
	}
	/* the entries open with the table's pair key, laid out as the table
	 * says
	 */
	clen = unseal(buf, len, clear);
	assert_int_equal(clen, OFF_ENTRIES + n * SL_WIRE_ENTRY);
	for (i = 0; i < n; i++) {
		const uint8_t *p = clear + OFF_ENTRIES + i * SL_WIRE_ENTRY;

		assert_memory_equal(p + E_ADDR, in[i].addr.byte, 16);
		assert_int_equal(get_be(p + E_HASH, 4), in[i].rule_hash);
		/* the port goes out as it is held: network order */
		assert_int_equal(get_be(p + E_DPORT, 2), ntohs(in[i].dport));
		assert_int_equal(get_be(p + E_RESERVED, 2), 0);
		assert_true(get_be(p + E_START, 8) == in[i].start_ms);
		assert_int_equal(get_be(p + E_UNITS, 4), in[i].units);
	}
	/* the tag covers the header: sealing the clear form again with the
	 * same nonce gives the same bytes
	 */
	{
		uint8_t again[SL_WIRE_MAX];

		assert_int_equal(seal(clear, clen, again), len);
		assert_memory_equal(again, buf, len);
	}

	/* and come back as they went */
	memset(&got, 0xa5, sizeof(got));
	assert_int_equal(sl_wire_decode(buf, len, &rk, ADDR_S, &got, out),
			 SL_WIRE_OK);
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

/* ---- pair keys ----------------------------------------------------------- */

static const struct sl_wire_peer *peer_in(const struct sl_wire_keys *k,
					  uint32_t node)
{
	unsigned i;

	for (i = 0; i < k->nr; i++)
		if (k->peer[i].node == node)
			return &k->peer[i];
	fail_msg("node %u is no peer", (unsigned)node);
	return NULL;
}

static void test_pair_keys_are_the_tables_and_agree_across_the_pair(void **st)
{
	uint8_t want[SL_WIRE_KEY];

	/* S to R: what S seals with is what R opens with, and the table's */
	assert_memory_equal(peer_in(&sk, NODE_R)->to, key, SL_WIRE_KEY);
	assert_memory_equal(peer_in(&rk, NODE_S)->from, key, SL_WIRE_KEY);
	/* computed from the other side's secret: the same */
	table_key(want, r_sk, s_pk, NODE_S, s_pk, NODE_R, r_pk);
	assert_memory_equal(want, key, SL_WIRE_KEY);
	/* R to S is another key */
	table_key(want, r_sk, s_pk, NODE_R, r_pk, NODE_S, s_pk);
	assert_memory_equal(peer_in(&rk, NODE_S)->to, want, SL_WIRE_KEY);
	assert_memory_equal(peer_in(&sk, NODE_R)->from, want, SL_WIRE_KEY);
	assert_memory_not_equal(want, key, SL_WIRE_KEY);
	/* M to R differs from S to R */
	assert_memory_not_equal(peer_in(&mk, NODE_R)->to, key, SL_WIRE_KEY);
	/* the key names the ids: the same key pairs under other ids make
	 * another key
	 */
	table_key(want, s_sk, r_pk, NODE_M, s_pk, NODE_R, r_pk);
	assert_memory_not_equal(want, key, SL_WIRE_KEY);
}

static void test_bad_peers_refused_by_keys_add(void **st)
{
	static const uint8_t zero[SL_WIRE_KEY];
	struct sl_wire_keys k;
	unsigned i;

	assert_int_equal(sl_wire_keys_init(&k, NODE_R, r_sk), 0);
	/* a low-order point: a shared secret anyone knows */
	assert_int_equal(sl_wire_keys_add(&k, r_sk, NODE_S, zero, NULL),
			 -EINVAL);
	assert_int_equal(sl_wire_keys_add(&k, r_sk, NODE_R, s_pk, NULL),
			 -EINVAL);	/* its own id */
	assert_int_equal(sl_wire_keys_add(&k, r_sk, 0, s_pk, NULL), -EINVAL);
	assert_int_equal(sl_wire_keys_add(&k, r_sk, NODE_S, s_pk, NULL), 0);
	assert_int_equal(sl_wire_keys_add(&k, r_sk, NODE_S, m_pk, NULL),
			 -EINVAL);	/* listed already */
	for (i = 1; k.nr < SL_MAX_PEERS; i++)
		assert_int_equal(sl_wire_keys_add(&k, r_sk, 100 + i, m_pk, NULL),
				 0);
	assert_int_equal(sl_wire_keys_add(&k, r_sk, 99, m_pk, NULL), -ENOSPC);
}

/* ---- admission: who may send ---------------------------------------------- */

/* Sealed by M with M's own pair key to R, but claiming to be S: the key
 * R holds for S does not open it.
 */
static void test_sealed_by_another_node_claiming_a_peer_is_forged(void **st)
{
	struct sl_wire_header h = header(SL_WIRE_COUNTS, 1);
	uint8_t buf[SL_WIRE_MAX];
	size_t len;

	make_entries(in, 1);
	len = sl_wire_encode(buf, &h, in, peer_in(&mk, NODE_R)->to);
	assert_int_equal(sl_wire_decode(buf, len, &rk, ADDR_S, &h, out),
			 SL_WIRE_FORGED);
	/* the same, claiming to be M (its own id), from M's address: good */
	h.node = NODE_M;
	len = sl_wire_encode(buf, &h, in, peer_in(&mk, NODE_R)->to);
	assert_int_equal(sl_wire_decode(buf, len, &rk, ADDR_M, &h, out),
			 SL_WIRE_OK);
}

/* S's datagram to M, passed on to R: sealed for another node. And R's
 * own datagram to S reflected back at R: R is not its own peer.
 */
static void test_sealed_for_another_node_refused(void **st)
{
	struct sl_wire_header h = header(SL_WIRE_COUNTS, 1);
	uint8_t buf[SL_WIRE_MAX];
	size_t len;

	make_entries(in, 1);
	len = sl_wire_encode(buf, &h, in, peer_in(&mk, NODE_S)->from);
	assert_int_equal(sl_wire_decode(buf, len, &mk, ADDR_S, &h, out),
			 SL_WIRE_OK);
	assert_int_equal(sl_wire_decode(buf, len, &rk, ADDR_S, &h, out),
			 SL_WIRE_FORGED);
	h.node = NODE_R;
	len = sl_wire_encode(buf, &h, in, peer_in(&rk, NODE_S)->to);
	assert_int_equal(sl_wire_decode(buf, len, &rk, ADDR_R, &h, out),
			 SL_WIRE_UNKNOWN_PEER);
}

static void test_unconfigured_sender_id_refused(void **st)
{
	static const uint32_t ids[] = { 0, 1, 9, 65535, 65536, 0xffffffff };
	struct sl_wire_header h = header(SL_WIRE_COUNTS, 1);
	uint8_t buf[SL_WIRE_MAX];
	unsigned i;
	size_t len;

	make_entries(in, 1);
	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		h.node = ids[i];
		len = sl_wire_encode(buf, &h, in, key);
		assert_int_equal(sl_wire_decode(buf, len, &rk, ADDR_S, &h, out),
				 SL_WIRE_UNKNOWN_PEER);
	}
}

static void test_datagram_from_another_address_refused(void **st)
{
	static const char *const from[] = {
		ADDR_M, "10.0.0.2:7401", "10.0.0.20:7400", "", NULL,
	};
	struct sl_wire_header h;
	uint8_t buf[SL_WIRE_MAX];
	unsigned i;
	size_t len;

	len = valid_message(buf, 1);
	for (i = 0; i < ARRAY_SIZE(from); i++)
		assert_int_equal(sl_wire_decode(buf, len, &rk, from[i], &h, out),
				 SL_WIRE_WRONG_ADDRESS);
	assert_int_equal(sl_wire_decode(buf, len, &rk, ADDR_S, &h, out),
			 SL_WIRE_OK);
}

/* A round goes to every peer, each copy sealed for that peer alone under
 * its own nonce; the sequence number is the same.
 */
static int keep(void *ctx, unsigned peer, const uint8_t *msg, size_t len)
{
	uint8_t (*copies)[SL_WIRE_MAX] = ctx;

	assert_true(peer < 2);
	assert_int_equal(len, SL_WIRE_HEADER + 3 * SL_WIRE_ENTRY + SL_WIRE_TAG);
	memcpy(copies[peer], msg, len);
	return 0;
}

static void test_send_seals_each_copy_for_its_peer(void **st)
{
	static uint8_t copies[2][SL_WIRE_MAX];
	struct sl_wire_sender snd = { .node = NODE_R, .incarnation = 5,
				      .keys = &rk };
	struct sl_wire_sent sent = { 0 };
	struct sl_wire_header h;
	size_t len = SL_WIRE_HEADER + 3 * SL_WIRE_ENTRY + SL_WIRE_TAG;

	make_entries(in, 3);
	sl_wire_send(&snd, 1234, in, 3, keep, copies, &sent);
	assert_int_equal(sent.messages, 2);
	assert_int_equal(sent.bytes, 2 * len);
	/* rk's peers: S first, then M */
	assert_int_equal(sl_wire_decode(copies[0], len, &sk, ADDR_R, &h, out),
			 SL_WIRE_OK);
	assert_true(h.seq == 1 && h.node == NODE_R && h.sent_ms == 1234);
	assert_int_equal(sl_wire_decode(copies[1], len, &mk, ADDR_R, &h, out),
			 SL_WIRE_OK);
	assert_true(h.seq == 1);
	/* each is M's or S's alone */
	assert_int_equal(sl_wire_decode(copies[0], len, &mk, ADDR_R, &h, out),
			 SL_WIRE_FORGED);
	assert_int_equal(sl_wire_decode(copies[1], len, &sk, ADDR_R, &h, out),
			 SL_WIRE_FORGED);
	assert_memory_not_equal(copies[0] + OFF_NONCE, copies[1] + OFF_NONCE,
				SL_WIRE_NONCE);
}

/* ---- nothing changed in transit is accepted ------------------------------ */

/* What a changed byte at `off` is refused as: the fields read before the
 * seal is opened (magic, version, the sender id that picks the key) each
 * with their reason, anything else because it no longer opens.
 */
static enum sl_wire_error flip_refused_as(size_t off)
{
	if (off < OFF_VERSION)
		return SL_WIRE_MALFORMED;
	if (off == OFF_VERSION)
		return SL_WIRE_BAD_VERSION;
	if (off >= OFF_NODE && off < OFF_NODE + 4)
		return SL_WIRE_UNKNOWN_PEER;
	return SL_WIRE_FORGED;
}

static void test_every_bit_flip_is_refused(void **st)
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
				enum sl_wire_error e, want = flip_refused_as(i);

				buf[i] ^= 1u << bit;
				e = decode(buf, len);
				buf[i] ^= 1u << bit;
				tried++;
				if (e != want && bad++ < 8)
					print_error("%u entries: bit %d of byte %zu "
						    "flipped: %s, expected %s\n",
						    sizes[s], bit, i,
						    sl_wire_error_str(e),
						    sl_wire_error_str(want));
			}
		/* and the message itself is still good */
		assert_int_equal(decode(buf, len), SL_WIRE_OK);
	}
	print_message("%u single-bit flips refused\n", tried);
	if (bad)
		fail_msg("%u bit flips not refused", bad);
}

static void test_wrong_key_is_forged(void **st)
{
	uint8_t buf[SL_WIRE_MAX];
	struct sl_wire_keys near = rk;
	struct sl_wire_header h;
	size_t len;

	/* R's key for S differing in a single bit */
	near.peer[0].from[SL_WIRE_KEY - 1] ^= 0x80;
	len = valid_message(buf, 2);
	assert_int_equal(sl_wire_decode(buf, len, &near, ADDR_S, &h, out),
			 SL_WIRE_FORGED);
	len = valid_message(buf, 0);
	assert_int_equal(sl_wire_decode(buf, len, &near, ADDR_S, &h, out),
			 SL_WIRE_FORGED);
}

/* Every prefix of a message is refused: too short for a header and tag is
 * malformed, anything longer no longer opens.
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

/* Longer than a datagram may be: refused before it is opened, however
 * well sealed.
 */
static void test_longer_than_max_refused(void **st)
{
	static uint8_t buf[SL_WIRE_MAX + 100], clear[SL_WIRE_MAX + 100];
	size_t len, clen;

	len = valid_message(buf, SL_WIRE_MAX_ENTRIES);
	clen = unseal(buf, len, clear);
	/* the same message with trailing bytes, sealed again */
	memset(clear + clen, 0, sizeof(clear) - clen);
	for (clen = SL_WIRE_MAX + 1 - SL_WIRE_TAG;
	     clen + SL_WIRE_TAG <= sizeof(buf); clen += 33) {
		len = seal(clear, clen, buf);
		assert_int_equal(decode(buf, len), SL_WIRE_MALFORMED);
	}
	/* one entry more than the maximum, count and length agreeing */
	clen = OFF_ENTRIES + (SL_WIRE_MAX_ENTRIES + 1) * SL_WIRE_ENTRY;
	put_be(clear + OFF_COUNT, 2, SL_WIRE_MAX_ENTRIES + 1);
	memset(clear + clen - SL_WIRE_ENTRY, 0, SL_WIRE_ENTRY);
	put_be(clear + clen - SL_WIRE_ENTRY + E_UNITS, 4, 1);
	len = seal(clear, clen, buf);
	assert_true(len > SL_WIRE_MAX);
	assert_int_equal(decode(buf, len), SL_WIRE_MALFORMED);
	/* exactly SL_WIRE_MAX bytes, sealed, count disagreeing: malformed */
	len = seal(clear, SL_WIRE_MAX - SL_WIRE_TAG, buf);
	assert_int_equal(len, SL_WIRE_MAX);
	assert_int_equal(decode(buf, len), SL_WIRE_MALFORMED);
}

/* ---- sealed, but wrong in one field -------------------------------------- */

struct field_case {
	const char *what;
	unsigned entries;	/* of the message changed */
	unsigned off;		/* byte offset to write (clear form) */
	unsigned size;		/* bytes, big-endian */
	uint64_t value;
	enum sl_wire_error want;
};

#define ENTRY(i, field)	(OFF_ENTRIES + (i) * SL_WIRE_ENTRY + (field))

static const struct field_case field_cases[] = {
	{ "magic SLS0", 2, OFF_MAGIC, 4, 0x534c5330, SL_WIRE_MALFORMED },
	{ "magic 0", 0, OFF_MAGIC, 4, 0, SL_WIRE_MALFORMED },
	{ "magic byte-swapped", 2, OFF_MAGIC, 4, 0x31534c53, SL_WIRE_MALFORMED },
	{ "version 1 (a shared fleet key's)", 2, OFF_VERSION, 1, 1,
	  SL_WIRE_BAD_VERSION },
	{ "version 0", 0, OFF_VERSION, 1, 0, SL_WIRE_BAD_VERSION },
	{ "version 255", 2, OFF_VERSION, 1, 255, SL_WIRE_BAD_VERSION },
	{ "type 2", 2, OFF_TYPE, 1, 2, SL_WIRE_MALFORMED },
	{ "type 2, no entries", 0, OFF_TYPE, 1, 2, SL_WIRE_MALFORMED },
	{ "type 255", 2, OFF_TYPE, 1, 255, SL_WIRE_MALFORMED },
	{ "heartbeat with entries", 2, OFF_TYPE, 1, SL_WIRE_HEARTBEAT,
	  SL_WIRE_MALFORMED },
	{ "node 0", 2, OFF_NODE, 4, 0, SL_WIRE_UNKNOWN_PEER },
	{ "node 0 in a heartbeat", 0, OFF_NODE, 4, 0, SL_WIRE_UNKNOWN_PEER },
	{ "node 65536", 2, OFF_NODE, 4, 65536, SL_WIRE_UNKNOWN_PEER },
	{ "node 0xffffffff", 2, OFF_NODE, 4, 0xffffffff,
	  SL_WIRE_UNKNOWN_PEER },
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
	{ "seq max", 2, OFF_SEQ, 8, ~0ULL, SL_WIRE_OK },
	{ "another nonce", 2, OFF_NONCE + 16, 8, 42, SL_WIRE_OK },
	{ "units 1", 2, ENTRY(1, E_UNITS), 4, 1, SL_WIRE_OK },
	{ "start 0", 2, ENTRY(0, E_START), 8, 0, SL_WIRE_OK },
	{ "dport 0xffff", 2, ENTRY(0, E_DPORT), 2, 0xffff, SL_WIRE_OK },
};

static void test_sealed_but_wrong_field_refused_with_its_error(void **st)
{
	uint8_t buf[SL_WIRE_MAX], clear[SL_WIRE_MAX];
	unsigned i, bad = 0;
	size_t len, clen;

	for (i = 0; i < ARRAY_SIZE(field_cases); i++) {
		const struct field_case *c = &field_cases[i];
		enum sl_wire_error e, want;

		len = valid_message(buf, c->entries);
		clen = unseal(buf, len, clear);
		/* sealing again what was encoded changes nothing */
		resign(clear, clen, buf);
		assert_int_equal(decode(buf, len), SL_WIRE_OK);
		assert_true(c->off + c->size <= clen);
		put_be(clear + c->off, c->size, c->value);
		resign(clear, clen, buf);
		e = decode(buf, len);
		if (e != c->want) {
			print_error("%s: %s, expected %s\n", c->what,
				    sl_wire_error_str(e),
				    sl_wire_error_str(c->want));
			bad++;
		}
		/* changed after sealing: a header field is refused as a
		 * bit flip is, an entry field because it no longer opens
		 */
		if (c->off < OFF_ENTRIES) {
			len = valid_message(buf, c->entries);
			if (get_be(buf + c->off, c->size) == c->value)
				continue;	/* no change */
			put_be(buf + c->off, c->size, c->value);
			want = flip_refused_as(c->off);
		} else {
			buf[c->off] ^= 1;
			want = SL_WIRE_FORGED;
		}
		if (decode(buf, len) != want) {
			print_error("%s: changed after sealing, not %s\n",
				    c->what, sl_wire_error_str(want));
			bad++;
		}
	}
	if (bad)
		fail_msg("%u of %zu sealed field cases decoded wrong", bad,
			 ARRAY_SIZE(field_cases));
}

/* A sealed message whose entries were cut off but whose count was not
 * changed: the count disagrees with the length, whatever the cut.
 */
static void test_sealed_short_body_refused(void **st)
{
	uint8_t buf[SL_WIRE_MAX], clear[SL_WIRE_MAX], msg[SL_WIRE_MAX];
	size_t len, clen, cut;

	len = valid_message(buf, 3);
	clen = unseal(buf, len, clear);
	for (cut = OFF_ENTRIES; cut < clen; cut++) {
		len = seal(clear, cut, msg);
		assert_int_equal(decode(msg, len), SL_WIRE_MALFORMED);
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
	assert_string_not_equal(sl_wire_error_str(SL_WIRE_UNKNOWN_PEER),
				sl_wire_error_str(SL_WIRE_WRONG_ADDRESS));
	assert_string_not_equal(sl_wire_error_str(SL_WIRE_UNKNOWN_PEER),
				sl_wire_error_str(SL_WIRE_FORGED));
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
		cmocka_unit_test(test_pair_keys_are_the_tables_and_agree_across_the_pair),
		cmocka_unit_test(test_bad_peers_refused_by_keys_add),
		cmocka_unit_test(test_sealed_by_another_node_claiming_a_peer_is_forged),
		cmocka_unit_test(test_sealed_for_another_node_refused),
		cmocka_unit_test(test_unconfigured_sender_id_refused),
		cmocka_unit_test(test_datagram_from_another_address_refused),
		cmocka_unit_test(test_send_seals_each_copy_for_its_peer),
		cmocka_unit_test(test_every_bit_flip_is_refused),
		cmocka_unit_test(test_wrong_key_is_forged),
		cmocka_unit_test(test_every_truncation_refused),
		cmocka_unit_test(test_longer_than_max_refused),
		cmocka_unit_test(test_sealed_but_wrong_field_refused_with_its_error),
		cmocka_unit_test(test_sealed_short_body_refused),
		cmocka_unit_test(test_error_strings_distinct),
		cmocka_unit_test(test_key_64_hex_digits_with_newline),
		cmocka_unit_test(test_key_32_raw_bytes),
		cmocka_unit_test(test_key_bad_files_refused),
		cmocka_unit_test(test_rule_name_hash_is_fnv1a_32),
	};
	unsigned i;

	if (sodium_init() < 0)
		return 1;
	/* fixed secret keys: the same messages every run */
	for (i = 0; i < SL_WIRE_KEY; i++) {
		s_sk[i] = (uint8_t)(i * 7 + 1);
		r_sk[i] = (uint8_t)(i * 7 + 2);
		m_sk[i] = (uint8_t)(i * 7 + 3);
	}
	if (sl_wire_keys_init(&sk, NODE_S, s_sk) ||
	    sl_wire_keys_init(&rk, NODE_R, r_sk) ||
	    sl_wire_keys_init(&mk, NODE_M, m_sk))
		return 1;
	memcpy(s_pk, sk.public_key, SL_WIRE_KEY);
	memcpy(r_pk, rk.public_key, SL_WIRE_KEY);
	memcpy(m_pk, mk.public_key, SL_WIRE_KEY);
	if (sl_wire_keys_add(&sk, s_sk, NODE_R, r_pk, ADDR_R) ||
	    sl_wire_keys_add(&rk, r_sk, NODE_S, s_pk, ADDR_S) ||
	    sl_wire_keys_add(&rk, r_sk, NODE_M, m_pk, ADDR_M) ||
	    sl_wire_keys_add(&mk, m_sk, NODE_R, r_pk, ADDR_R) ||
	    sl_wire_keys_add(&mk, m_sk, NODE_S, s_pk, ADDR_S))
		return 1;
	table_key(key, s_sk, r_pk, NODE_S, s_pk, NODE_R, r_pk);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
