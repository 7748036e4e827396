// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The sync message (sync/wire.h): encoded, sealed per peer and sent;
 * opened and decoded; the nodes' keys and the pairs' keys made from them.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>
#include "util/log.h"
#include "sync/wire.h"

_Static_assert(crypto_aead_xchacha20poly1305_ietf_ABYTES == SL_WIRE_TAG,
	       "tag size");
_Static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == SL_WIRE_KEY,
	       "key size");
_Static_assert(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES == SL_WIRE_NONCE,
	       "nonce size");
_Static_assert(crypto_scalarmult_BYTES == SL_WIRE_KEY &&
	       crypto_scalarmult_SCALARBYTES == SL_WIRE_KEY, "X25519 sizes");

const char *sl_wire_error_str(enum sl_wire_error e)
{
	switch (e) {
	case SL_WIRE_OK:
		return "ok";
	case SL_WIRE_MALFORMED:
		return "malformed";
	case SL_WIRE_BAD_VERSION:
		return "unknown version";
	case SL_WIRE_FORGED:
		return "forged";
	case SL_WIRE_UNKNOWN_PEER:
		return "unknown peer";
	case SL_WIRE_WRONG_ADDRESS:
		return "wrong address";
	}
	return "?";
}

uint32_t sl_rule_name_hash(const char *name)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	while (*name)
		h = (h ^ (uint8_t)*name++) * 16777619u;
	return h;
}

static uint8_t *put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
	return p + 2;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	return put16(put16(p, v >> 16), v);
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	return put32(put32(p, v >> 32), v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* The 60 header bytes, in clear: the associated data. */
static uint8_t *put_header(uint8_t *p, const struct sl_wire_header *h)
{
	p = put32(p, SL_WIRE_MAGIC);
	*p++ = SL_WIRE_VERSION;
	*p++ = h->type;
	p = put16(p, h->count);
	p = put32(p, h->node);
	p = put64(p, h->incarnation);
	p = put64(p, h->seq);
	p = put64(p, h->sent_ms);
	memcpy(p, h->nonce, SL_WIRE_NONCE);
	return p + SL_WIRE_NONCE;
}

size_t sl_wire_encode(uint8_t *buf, const struct sl_wire_header *h,
		      const struct sl_wire_entry *e,
		      const uint8_t key[SL_WIRE_KEY])
{
	uint8_t plain[SL_WIRE_MAX], *p = plain;
	unsigned long long sealed;
	unsigned i;

	for (i = 0; i < h->count; i++) {
		memcpy(p, e[i].addr.byte, 16);
		p = put32(p + 16, e[i].rule_hash);
		memcpy(p, &e[i].dport, 2);	/* already network order */
		p = put16(p + 2, 0);
		p = put64(p, e[i].start_ms);
		p = put32(p, e[i].units);
	}
	put_header(buf, h);
	crypto_aead_xchacha20poly1305_ietf_encrypt(
		buf + SL_WIRE_HEADER, &sealed, plain, p - plain, buf,
		SL_WIRE_HEADER, NULL, h->nonce, key);
	sodium_memzero(plain, p - plain);
	return SL_WIRE_HEADER + sealed;
}

void sl_wire_send(struct sl_wire_sender *snd, uint64_t sent_ms,
		  const struct sl_wire_entry *e, size_t n,
		  sl_wire_emit_fn emit, void *ctx, struct sl_wire_sent *sent)
{
	struct sl_wire_header h = {
		.node = snd->node,
		.incarnation = snd->incarnation,
		.sent_ms = sent_ms,
	};
	const struct sl_wire_keys *k = snd->keys;
	uint8_t buf[SL_WIRE_MAX];
	size_t done = 0, len;
	unsigned i;

	do {
		h.count = n - done < SL_WIRE_MAX_ENTRIES ? n - done :
			  SL_WIRE_MAX_ENTRIES;
		h.type = n ? SL_WIRE_COUNTS : SL_WIRE_HEARTBEAT;
		h.seq = ++snd->seq;
		/* one sequence number for all peers: each keeps its own
		 * replay window per sender
		 */
		for (i = 0; i < k->nr; i++) {
			randombytes_buf(h.nonce, sizeof(h.nonce));
			len = sl_wire_encode(buf, &h, e + done, k->peer[i].to);
			if (emit(ctx, i, buf, len))
				sent->errors++;
			sent->messages++;
			sent->bytes += len;
		}
		done += h.count;
	} while (done < n);
}

static const struct sl_wire_peer *peer_of(const struct sl_wire_keys *k,
					  uint32_t node)
{
	unsigned i;

	for (i = 0; i < k->nr; i++)
		if (k->peer[i].node == node)
			return &k->peer[i];
	return NULL;
}

enum sl_wire_error sl_wire_decode(const uint8_t *buf, size_t len,
				  const struct sl_wire_keys *k,
				  const char *from,
				  struct sl_wire_header *h,
				  struct sl_wire_entry *e)
{
	uint8_t plain[SL_WIRE_MAX], *p = plain;
	const struct sl_wire_peer *peer;
	unsigned long long body;
	enum sl_wire_error err = SL_WIRE_OK;
	unsigned i;

	if (len < SL_WIRE_HEADER + SL_WIRE_TAG || len > SL_WIRE_MAX ||
	    get32(buf) != SL_WIRE_MAGIC)
		return SL_WIRE_MALFORMED;
	if (buf[4] != SL_WIRE_VERSION)
		return SL_WIRE_BAD_VERSION;
	/* the sender id chooses the key: it is read before the datagram is
	 * authentic, and only to look the peer up
	 */
	peer = peer_of(k, get32(buf + 8));
	if (!peer)
		return SL_WIRE_UNKNOWN_PEER;
	if (peer->addr[0] && (!from || strcmp(peer->addr, from)))
		return SL_WIRE_WRONG_ADDRESS;
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(
		    plain, &body, NULL, buf + SL_WIRE_HEADER,
		    len - SL_WIRE_HEADER, buf, SL_WIRE_HEADER,
		    buf + 36, peer->from))
		return SL_WIRE_FORGED;
	h->type = buf[5];
	h->count = get16(buf + 6);
	h->node = get32(buf + 8);
	h->incarnation = get64(buf + 12);
	h->seq = get64(buf + 20);
	h->sent_ms = get64(buf + 28);
	memcpy(h->nonce, buf + 36, SL_WIRE_NONCE);
	if (h->type > SL_WIRE_HEARTBEAT || !h->node || h->node > 0xffff ||
	    !h->seq || h->count > SL_WIRE_MAX_ENTRIES ||
	    (h->type == SL_WIRE_HEARTBEAT && h->count) ||
	    body != (size_t)h->count * SL_WIRE_ENTRY)
		err = SL_WIRE_MALFORMED;
	for (i = 0; !err && i < h->count; i++, p += SL_WIRE_ENTRY) {
		memcpy(e[i].addr.byte, p, 16);
		e[i].rule_hash = get32(p + 16);
		memcpy(&e[i].dport, p + 20, 2);
		e[i].start_ms = get64(p + 24);
		e[i].units = get32(p + 32);
		if (get16(p + 22) || !e[i].units)
			err = SL_WIRE_MALFORMED;	/* reserved, or empty */
	}
	sodium_memzero(plain, body);
	return err;
}

void sl_wire_keypair(uint8_t public_key[SL_WIRE_KEY],
		     uint8_t secret_key[SL_WIRE_KEY])
{
	crypto_box_keypair(public_key, secret_key);
}

int sl_wire_public_key(uint8_t public_key[SL_WIRE_KEY],
		       const uint8_t secret_key[SL_WIRE_KEY])
{
	return crypto_scalarmult_base(public_key, secret_key) ? -EINVAL : 0;
}

int sl_wire_keys_init(struct sl_wire_keys *k, uint32_t node,
		      const uint8_t secret_key[SL_WIRE_KEY])
{
	memset(k, 0, sizeof(*k));
	k->node = node;
	return sl_wire_public_key(k->public_key, secret_key);
}

/* The key of datagrams from node `a` to node `b`: the shared secret, then
 * both ids and public keys in the direction's order, so each direction
 * has its own key and a key names the two nodes it is for.
 */
static void direction_key(uint8_t key[SL_WIRE_KEY],
			  const uint8_t shared[SL_WIRE_KEY],
			  uint32_t a, const uint8_t a_pk[SL_WIRE_KEY],
			  uint32_t b, const uint8_t b_pk[SL_WIRE_KEY])
{
	static const char context[] = "slicelimit sync pair v2";
	crypto_generichash_state st;
	uint8_t id[4];

	crypto_generichash_init(&st, NULL, 0, SL_WIRE_KEY);
	crypto_generichash_update(&st, (const uint8_t *)context,
				  sizeof(context));
	crypto_generichash_update(&st, shared, SL_WIRE_KEY);
	put32(id, a);
	crypto_generichash_update(&st, id, sizeof(id));
	crypto_generichash_update(&st, a_pk, SL_WIRE_KEY);
	put32(id, b);
	crypto_generichash_update(&st, id, sizeof(id));
	crypto_generichash_update(&st, b_pk, SL_WIRE_KEY);
	crypto_generichash_final(&st, key, SL_WIRE_KEY);
}

int sl_wire_keys_add(struct sl_wire_keys *k,
		     const uint8_t secret_key[SL_WIRE_KEY], uint32_t node,
		     const uint8_t public_key[SL_WIRE_KEY], const char *addr)
{
	struct sl_wire_peer *p;
	uint8_t shared[SL_WIRE_KEY];

	if (!node || node == k->node || peer_of(k, node))
		return -EINVAL;
	if (k->nr == SL_MAX_PEERS)
		return -ENOSPC;
	/* fails on a low-order point: a shared secret anyone knows */
	if (crypto_scalarmult(shared, secret_key, public_key))
		return -EINVAL;
	p = &k->peer[k->nr++];
	memset(p, 0, sizeof(*p));
	p->node = node;
	memcpy(p->public_key, public_key, SL_WIRE_KEY);
	direction_key(p->to, shared, k->node, k->public_key, node, public_key);
	direction_key(p->from, shared, node, public_key, k->node, k->public_key);
	sodium_memzero(shared, sizeof(shared));
	snprintf(p->addr, sizeof(p->addr), "%s", addr ? addr : "");
	return 0;
}

int sl_wire_key_parse(const char *hex, uint8_t key[SL_WIRE_KEY])
{
	size_t bin_len;

	if (strlen(hex) != 2 * SL_WIRE_KEY ||
	    sodium_hex2bin(key, SL_WIRE_KEY, hex, 2 * SL_WIRE_KEY, NULL,
			   &bin_len, NULL) || bin_len != SL_WIRE_KEY)
		return -EINVAL;
	return 0;
}

int sl_wire_key_read(const char *path, uint8_t key[SL_WIRE_KEY],
		     struct stat *st, enum sl_secret_problem *problem)
{
	uint8_t raw[4 * SL_WIRE_KEY];
	size_t len = 0, i, n = 0, bin_len;
	ssize_t got;
	int fd, err = 0;

	fd = sl_secret_open(path, st, problem);
	if (fd < 0)
		return fd;
	while (len < sizeof(raw)) {
		got = read(fd, raw + len, sizeof(raw) - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			err = -errno;
		if (got <= 0)
			break;
		len += got;
	}
	close(fd);
	if (err)
		return err;
	if (len == SL_WIRE_KEY) {
		memcpy(key, raw, SL_WIRE_KEY);
		return 0;
	}
	/* whitespace anywhere, even inside a byte's two digits: libsodium
	 * skips it only between bytes, so it goes first
	 */
	for (i = 0; i < len; i++)
		if (!isspace(raw[i]))
			raw[n++] = raw[i];
	if (!sodium_hex2bin(key, SL_WIRE_KEY, (const char *)raw, n, NULL,
			    &bin_len, NULL) && bin_len == SL_WIRE_KEY)
		return 0;
	return -EINVAL;
}

int sl_wire_key_load(const char *path, uint8_t key[SL_WIRE_KEY])
{
	enum sl_secret_problem problem;
	struct stat st;
	char why[512];
	int err = sl_wire_key_read(path, key, &st, &problem);

	if (err == -EINVAL) {
		pr_error("sync key %s: want " SL_WIRE_KEY_FORMAT, path);
	} else if (err) {
		sl_secret_describe(why, sizeof(why), path, err, &st, problem);
		pr_error("sync key: %s", why);
	}
	return err;
}
