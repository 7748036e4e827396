/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sync message between nodes: one UDP datagram (the multi-node replay
 * exchanges the same, in memory), encoded field by field in network byte order, never as a struct copy.
 *
 *   offset  size  field
 *        0     4  magic "SLS1"
 *        4     1  version (1)
 *        5     1  type: 0 counts, 1 heartbeat (no entries)
 *        6     2  entry count
 *        8     4  sender node id (1..65535)
 *       12     8  sender incarnation (TAI ns at its start)
 *       20     8  sequence number, per sender incarnation, from 1
 *       28     8  sent at (sender's TAI ms)
 *       36  36*n  entries: address (16), rule name hash (4), destination
 *                 port (2), reserved (2, zero), the units' earliest
 *                 first accept in TAI ms (8), units (4)
 *      ...    32  HMAC-SHA-512-256 (libsodium crypto_auth) of all bytes
 *                 before it, with the fleet's shared key
 *
 * Entries carry deltas: units a sender accepted for a client in the slice
 * that began at `start_ms`, since its previous message. A receiver applies
 * each (sender, incarnation, sequence) at most once, so a duplicate or a
 * replay can never count twice; a lost message only undercounts (fail
 * open).
 */
#ifndef SL_SYNC_WIRE_H
#define SL_SYNC_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include "slicelimit.h"
#include "core/secret_file.h"

#define SL_WIRE_MAGIC		0x534c5331u	/* "SLS1" */
#define SL_WIRE_VERSION		1
#define SL_WIRE_HEADER		36
#define SL_WIRE_ENTRY		36
#define SL_WIRE_TAG		32
#define SL_WIRE_KEY		32
/* Datagrams stay under a 1500-byte path MTU with IPv6 and UDP headers
 * (1500 - 40 - 8 = 1452), so they are never fragmented.
 */
#define SL_WIRE_MAX		1452
#define SL_WIRE_MAX_ENTRIES	((SL_WIRE_MAX - SL_WIRE_HEADER - SL_WIRE_TAG) / \
				 SL_WIRE_ENTRY)

enum sl_wire_type {
	SL_WIRE_COUNTS = 0,
	SL_WIRE_HEARTBEAT = 1,
};

struct sl_wire_header {
	uint8_t type;
	uint16_t count;
	uint32_t node;
	uint64_t incarnation;
	uint64_t seq;
	uint64_t sent_ms;
};

struct sl_wire_entry {
	struct sl_addr addr;
	uint32_t rule_hash;	/* sl_rule_name_hash() of the rule's name */
	uint16_t dport;		/* network byte order, as in the client key */
	uint64_t start_ms;	/* TAI ms of the units' earliest first accept
				 * (Redis: of their slice's start) */
	uint32_t units;
};

/* Why a datagram was refused. */
enum sl_wire_error {
	SL_WIRE_OK = 0,
	SL_WIRE_MALFORMED = 1,	/* wrong size, magic, type or count */
	SL_WIRE_BAD_VERSION = 2,
	SL_WIRE_FORGED = 3,	/* the authentication tag does not match */
};

const char *sl_wire_error_str(enum sl_wire_error e);

/* Rules are named the same on every node; ids are a node's own. */
uint32_t sl_rule_name_hash(const char *name);

/* Encode a message of h->count entries into buf (at least SL_WIRE_MAX
 * bytes); returns its length. h->count <= SL_WIRE_MAX_ENTRIES.
 */
size_t sl_wire_encode(uint8_t *buf, const struct sl_wire_header *h,
		      const struct sl_wire_entry *e,
		      const uint8_t key[SL_WIRE_KEY]);

/* Check and decode a datagram: the tag first, so nothing of a forged
 * message is looked at; `e` holds SL_WIRE_MAX_ENTRIES entries.
 */
enum sl_wire_error sl_wire_decode(const uint8_t *buf, size_t len,
				  const uint8_t key[SL_WIRE_KEY],
				  struct sl_wire_header *h,
				  struct sl_wire_entry *e);

/* A node's datagrams: the fields every one of them carries, and the
 * sequence number of the last one made.
 */
struct sl_wire_sender {
	uint32_t node;
	uint64_t incarnation;
	uint64_t seq;
	const uint8_t *key;	/* SL_WIRE_KEY bytes: the fleet's */
};

/* What sending a round's datagrams came to. */
struct sl_wire_sent {
	uint64_t messages;
	uint64_t bytes;
	uint64_t errors;	/* datagrams emit refused */
};

/* Called with each datagram; non-zero is a send error, and the rest are
 * still sent.
 */
typedef int (*sl_wire_emit_fn)(void *ctx, const uint8_t *msg, size_t len);

/* A round's entries e[0..n) as datagrams of at most SL_WIRE_MAX_ENTRIES
 * entries each, in order (a heartbeat if n is 0: peers know the node is
 * alive), sent at sent_ms under the sender's next sequence numbers; each
 * is passed to emit, and counted in *sent.
 */
void sl_wire_send(struct sl_wire_sender *snd, uint64_t sent_ms,
		  const struct sl_wire_entry *e, size_t n,
		  sl_wire_emit_fn emit, void *ctx, struct sl_wire_sent *sent);

/* Read a key file: 64 hex digits (and optional whitespace), or 32 raw
 * bytes, opened as a secret (core/secret_file.h: the file itself, owned
 * by root or this user, no access for group or others). 0, -errno when
 * it cannot be read (-ELOOP a symbolic link; -EACCES unfit, with *st and
 * *problem saying why), -EINVAL when it holds no key; nothing printed.
 */
int sl_wire_key_read(const char *path, uint8_t key[SL_WIRE_KEY],
		     struct stat *st, enum sl_secret_problem *problem);
/* What sl_wire_key_read wants of a file's content, for its messages. */
#define SL_WIRE_KEY_FORMAT "64 hex digits or 32 raw bytes (make one with: head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n')"
/* The same, 0 or -errno with a message. */
int sl_wire_key_load(const char *path, uint8_t key[SL_WIRE_KEY]);

#endif /* SL_SYNC_WIRE_H */
