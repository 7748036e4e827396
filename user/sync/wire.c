// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>
#include "core/log.h"
#include "sync/wire.h"

_Static_assert(crypto_auth_BYTES == SL_WIRE_TAG, "tag size");
_Static_assert(crypto_auth_KEYBYTES == SL_WIRE_KEY, "key size");

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

size_t sl_wire_encode(uint8_t *buf, const struct sl_wire_header *h,
		      const struct sl_wire_entry *e,
		      const uint8_t key[SL_WIRE_KEY])
{
	uint8_t *p = buf;
	unsigned i;

	p = put32(p, SL_WIRE_MAGIC);
	*p++ = SL_WIRE_VERSION;
	*p++ = h->type;
	p = put16(p, h->count);
	p = put32(p, h->node);
	p = put64(p, h->incarnation);
	p = put64(p, h->seq);
	p = put64(p, h->sent_ms);
	for (i = 0; i < h->count; i++) {
		memcpy(p, e[i].addr.byte, 16);
		p = put32(p + 16, e[i].rule_hash);
		memcpy(p, &e[i].dport, 2);	/* already network order */
		p = put16(p + 2, 0);
		p = put64(p, e[i].start_ms);
		p = put32(p, e[i].units);
	}
	crypto_auth(p, buf, p - buf, key);
	return p - buf + SL_WIRE_TAG;
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
	uint8_t buf[SL_WIRE_MAX];
	size_t done = 0, len;

	do {
		h.count = n - done < SL_WIRE_MAX_ENTRIES ? n - done :
			  SL_WIRE_MAX_ENTRIES;
		h.type = n ? SL_WIRE_COUNTS : SL_WIRE_HEARTBEAT;
		h.seq = ++snd->seq;
		len = sl_wire_encode(buf, &h, e + done, snd->key);
		if (emit(ctx, buf, len))
			sent->errors++;
		sent->messages++;
		sent->bytes += len;
		done += h.count;
	} while (done < n);
}

enum sl_wire_error sl_wire_decode(const uint8_t *buf, size_t len,
				  const uint8_t key[SL_WIRE_KEY],
				  struct sl_wire_header *h,
				  struct sl_wire_entry *e)
{
	const uint8_t *p = buf + SL_WIRE_HEADER;
	size_t body;
	unsigned i;

	if (len < SL_WIRE_HEADER + SL_WIRE_TAG || len > SL_WIRE_MAX)
		return SL_WIRE_MALFORMED;
	body = len - SL_WIRE_TAG;
	if (crypto_auth_verify(buf + body, buf, body, key))
		return SL_WIRE_FORGED;
	if (get32(buf) != SL_WIRE_MAGIC)
		return SL_WIRE_MALFORMED;
	if (buf[4] != SL_WIRE_VERSION)
		return SL_WIRE_BAD_VERSION;
	h->type = buf[5];
	h->count = get16(buf + 6);
	h->node = get32(buf + 8);
	h->incarnation = get64(buf + 12);
	h->seq = get64(buf + 20);
	h->sent_ms = get64(buf + 28);
	if (h->type > SL_WIRE_HEARTBEAT || !h->node || h->node > 0xffff ||
	    !h->seq || h->count > SL_WIRE_MAX_ENTRIES ||
	    (h->type == SL_WIRE_HEARTBEAT && h->count) ||
	    body != SL_WIRE_HEADER + (size_t)h->count * SL_WIRE_ENTRY)
		return SL_WIRE_MALFORMED;
	for (i = 0; i < h->count; i++, p += SL_WIRE_ENTRY) {
		memcpy(e[i].addr.byte, p, 16);
		e[i].rule_hash = get32(p + 16);
		memcpy(&e[i].dport, p + 20, 2);
		if (get16(p + 22))
			return SL_WIRE_MALFORMED;	/* reserved */
		e[i].start_ms = get64(p + 24);
		e[i].units = get32(p + 32);
		if (!e[i].units)
			return SL_WIRE_MALFORMED;
	}
	return SL_WIRE_OK;
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
