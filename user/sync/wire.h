/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sync message between nodes: one UDP datagram (the multi-node replay
 * exchanges the same, in memory), encoded field by field in network byte
 * order, never as a struct copy, and sealed for the one peer it goes to.
 *
 *   offset  size  field
 *        0     4  magic "SLS1"
 *        4     1  version (2)
 *        5     1  type: 0 counts, 1 heartbeat (no entries)
 *        6     2  entry count
 *        8     4  sender node id (1..65535)
 *       12     8  sender incarnation (TAI ns at its start)
 *       20     8  sequence number, per sender incarnation, from 1
 *       28     8  sent at (sender's TAI ms)
 *       36    24  nonce (random)
 *       60  36*n  entries, encrypted: address (16), rule name hash (4),
 *                 destination port (2), reserved (2, zero), the units'
 *                 earliest first accept in TAI ms (8), units (4)
 *      ...    16  tag: XChaCha20-Poly1305 (libsodium's
 *                 crypto_aead_xchacha20poly1305_ietf) of the entries, with
 *                 the 60 header bytes as associated data
 *
 * Every node has an X25519 key pair of its own; each peer is configured
 * with its node id, address and public key. A datagram from node S to
 * node R is sealed with the key of that direction of that pair:
 * BLAKE2b-256 of the X25519 shared secret, S's id and public key, R's id
 * and public key (sl_wire_pair_keys). Only S and R can compute it, and it
 * names both ids, so a node can speak only as itself and only to the
 * peer the datagram was sealed for. A receiver admits a datagram only
 * from a configured node id, from that peer's configured address, and
 * only if it opens with the pair's key; client addresses never travel in
 * clear.
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
#include "util/secret_file.h"

#define SL_WIRE_MAGIC		0x534c5331u	/* "SLS1" */
#define SL_WIRE_VERSION		2
#define SL_WIRE_NONCE		24
#define SL_WIRE_HEADER		(36 + SL_WIRE_NONCE)
#define SL_WIRE_ENTRY		36
#define SL_WIRE_TAG		16
/* a pair's key, a node's public or secret key, a key_file's key */
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
	uint8_t nonce[SL_WIRE_NONCE];	/* sl_wire_send: random per datagram */
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
	SL_WIRE_FORGED = 3,	/* does not open with the pair's key */
	SL_WIRE_UNKNOWN_PEER = 4,	/* the sender id is no configured peer */
	SL_WIRE_WRONG_ADDRESS = 5,	/* not from the peer's configured address */
};

/* A configured peer, as the codec knows it: its id and public key, the
 * keys of both directions of the pair, and where its datagrams must come
 * from ("" : anywhere, for the in-memory replay).
 */
struct sl_wire_peer {
	uint32_t node;
	uint8_t public_key[SL_WIRE_KEY];
	uint8_t to[SL_WIRE_KEY];	/* seals this node's datagrams to it */
	uint8_t from[SL_WIRE_KEY];	/* opens its datagrams to this node */
	char addr[64];			/* as the transport names addresses */
};

/* A node's identity and its peers, in the order datagrams go out. */
struct sl_wire_keys {
	uint32_t node;
	uint8_t public_key[SL_WIRE_KEY];
	unsigned nr;
	struct sl_wire_peer peer[SL_MAX_PEERS];
};

/* A new X25519 key pair. */
void sl_wire_keypair(uint8_t public_key[SL_WIRE_KEY],
		     uint8_t secret_key[SL_WIRE_KEY]);
/* The public key of a secret key. 0, or -EINVAL when libsodium makes
 * none.
 */
int sl_wire_public_key(uint8_t public_key[SL_WIRE_KEY],
		       const uint8_t secret_key[SL_WIRE_KEY]);
/* Start `k` as node `node` with its secret key: no peers yet. 0 or
 * -EINVAL.
 */
int sl_wire_keys_init(struct sl_wire_keys *k, uint32_t node,
		      const uint8_t secret_key[SL_WIRE_KEY]);
/* Add peer `node` with its public key, from address `addr` (NULL or "":
 * any), deriving the pair's keys from this node's secret key. 0; -EINVAL
 * for a public key no shared secret can come from (a low-order point) or
 * a node id that is this node's or listed already; -ENOSPC past
 * SL_MAX_PEERS.
 */
int sl_wire_keys_add(struct sl_wire_keys *k,
		     const uint8_t secret_key[SL_WIRE_KEY], uint32_t node,
		     const uint8_t public_key[SL_WIRE_KEY], const char *addr);
/* "64 hex digits" -> key; 0 or -EINVAL. */
int sl_wire_key_parse(const char *hex, uint8_t key[SL_WIRE_KEY]);

const char *sl_wire_error_str(enum sl_wire_error e);

/* Rules are named the same on every node; ids are a node's own. */
uint32_t sl_rule_name_hash(const char *name);

/* Encode a message of h->count entries into buf (at least SL_WIRE_MAX
 * bytes), sealed with `key` (a pair's `to`) under h->nonce; returns its
 * length. h->count <= SL_WIRE_MAX_ENTRIES.
 */
size_t sl_wire_encode(uint8_t *buf, const struct sl_wire_header *h,
		      const struct sl_wire_entry *e,
		      const uint8_t key[SL_WIRE_KEY]);

/* Admit and decode a datagram that came from address `from` (as
 * sl_wire_peer.addr names it): a configured sender id, that peer's
 * address, then the pair's key must open it, before any field of it is
 * used; `e` holds SL_WIRE_MAX_ENTRIES entries.
 */
enum sl_wire_error sl_wire_decode(const uint8_t *buf, size_t len,
				  const struct sl_wire_keys *k,
				  const char *from,
				  struct sl_wire_header *h,
				  struct sl_wire_entry *e);

/* A node's datagrams: the fields every one of them carries, and the
 * sequence number of the last one made.
 */
struct sl_wire_sender {
	uint32_t node;
	uint64_t incarnation;
	uint64_t seq;
	const struct sl_wire_keys *keys;	/* its peers, in sending order */
};

/* What sending a round's datagrams came to. */
struct sl_wire_sent {
	uint64_t messages;
	uint64_t bytes;
	uint64_t errors;	/* datagrams emit refused */
};

/* Called with each datagram for peer keys->peer[peer]; non-zero is a
 * send error, and the rest are still sent.
 */
typedef int (*sl_wire_emit_fn)(void *ctx, unsigned peer, const uint8_t *msg,
			       size_t len);

/* A round's entries e[0..n) as datagrams of at most SL_WIRE_MAX_ENTRIES
 * entries each, in order (a heartbeat if n is 0: peers know the node is
 * alive), sent at sent_ms under the sender's next sequence numbers; each
 * is sealed for every peer in turn, passed to emit, and counted in *sent.
 */
void sl_wire_send(struct sl_wire_sender *snd, uint64_t sent_ms,
		  const struct sl_wire_entry *e, size_t n,
		  sl_wire_emit_fn emit, void *ctx, struct sl_wire_sent *sent);

/* Read a key file (sync.identity_file's secret key, sync.key_file's
 * shared key): 64 hex digits (and optional whitespace), or 32 raw
 * bytes, opened as a secret (util/secret_file.h: the file itself, owned
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
