// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The file, field by field in network byte order:
 *
 *   offset  size  field
 *        0     4  magic "SLR1"
 *        4     4  the receiver's node id
 *        8     8  accepted_until_ms
 *       16     4  peer count n (at most SL_MAX_PEERS)
 *       20  28*n  peers: node (4), incarnation (8), max_seq (8), window (8)
 *      ...    32  BLAKE2b (libsodium crypto_generichash) of all bytes
 *                 before it: a torn or altered file is told from a whole one
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>
#include "sync/replay_state.h"

#define RS_MAGIC	0x534c5231u	/* "SLR1" */
#define RS_HEADER	20
#define RS_PEER		28
#define RS_SUM		32
#define RS_MAX		(RS_HEADER + SL_MAX_PEERS * RS_PEER + RS_SUM)

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
	return p + 4;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	return put32(put32(p, v >> 32), v);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

int sl_replay_state_load(const char *path, uint32_t node,
			 struct sl_replay_state *rs)
{
	uint8_t buf[RS_MAX + 1], sum[RS_SUM];
	size_t len = 0, body;
	const uint8_t *p;
	ssize_t got;
	unsigned i;
	int fd;

	memset(rs, 0, sizeof(*rs));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	while (len < sizeof(buf)) {
		got = read(fd, buf + len, sizeof(buf) - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += got;
	}
	close(fd);
	if (len < RS_HEADER + RS_SUM || len > RS_MAX)
		return -EBADMSG;
	body = len - RS_SUM;
	crypto_generichash(sum, sizeof(sum), buf, body, NULL, 0);
	if (sodium_memcmp(sum, buf + body, RS_SUM) ||
	    get32(buf) != RS_MAGIC || get32(buf + 4) != node ||
	    get32(buf + 16) > SL_MAX_PEERS ||
	    body != RS_HEADER + (size_t)get32(buf + 16) * RS_PEER)
		return -EBADMSG;
	rs->node = node;
	rs->accepted_until_ms = get64(buf + 8);
	rs->nr_peers = get32(buf + 16);
	for (i = 0, p = buf + RS_HEADER; i < rs->nr_peers; i++, p += RS_PEER) {
		rs->peer[i].node = get32(p);
		rs->peer[i].incarnation = get64(p + 4);
		rs->peer[i].max_seq = get64(p + 12);
		rs->peer[i].window = get64(p + 20);
	}
	return 0;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= n;
	}
	return 0;
}

int sl_replay_state_save(const char *path, const struct sl_replay_state *rs)
{
	char tmp[4096], dir[4096];
	uint8_t buf[RS_MAX], *p = buf;
	unsigned i, n = rs->nr_peers < SL_MAX_PEERS ? rs->nr_peers :
			SL_MAX_PEERS;
	int fd, dfd, err;

	p = put32(p, RS_MAGIC);
	p = put32(p, rs->node);
	p = put64(p, rs->accepted_until_ms);
	p = put32(p, n);
	for (i = 0; i < n; i++) {
		p = put32(p, rs->peer[i].node);
		p = put64(p, rs->peer[i].incarnation);
		p = put64(p, rs->peer[i].max_seq);
		p = put64(p, rs->peer[i].window);
	}
	crypto_generichash(p, RS_SUM, buf, p - buf, NULL, 0);
	p += RS_SUM;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		return -errno;
	err = write_all(fd, buf, p - buf);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	/* the rename itself is durable only once its directory is */
	snprintf(dir, sizeof(dir), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	err = fsync(dfd) ? -errno : 0;
	close(dfd);
	return err;
}
