// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One command to the store, bounded in time and in size (the promise:
 * sync/redis.h, sl_redis_command). hiredis's own blocking calls time
 * each read, not the command: a server that sends a byte just inside
 * the timeout holds the caller for as long as it likes, and the reader
 * buffers a bulk string of any length before handing it over. Here the
 * reply is read by this file, against one deadline for the whole
 * command and a count of the bytes it took.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include "util/clock.h"
#include "sync/redis.h"

#define SL_REDIS_ARGS_MAX	8

static void set_error(redisContext *c, int type, const char *fmt, ...)
{
	va_list ap;

	c->err = type;
	va_start(ap, fmt);
	vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
	va_end(ap);
}

/* Milliseconds left before `deadline` (monotonic), 0 once it passed. */
static int left_ms(uint64_t deadline)
{
	uint64_t now = sl_now_mono_ms();

	return now >= deadline ? 0 : (int)(deadline - now);
}

/* Wait for `events` on c's socket until the deadline: 0, or -ETIMEDOUT
 * with c->err set.
 */
static int wait_fd(redisContext *c, short events, uint64_t deadline,
		   unsigned timeout_ms)
{
	struct pollfd p = { .fd = c->fd, .events = events };
	int ms, n;

	for (;;) {
		ms = left_ms(deadline);
		if (!ms)
			break;
		n = poll(&p, 1, ms);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR) {
			set_error(c, REDIS_ERR_IO, "poll: %s", strerror(errno));
			return -EIO;
		}
	}
	set_error(c, REDIS_ERR_IO, "no whole answer within %u ms",
		  timeout_ms);
	return -ETIMEDOUT;
}

/* The command's words out, before the deadline. */
static int send_all(redisContext *c, uint64_t deadline, unsigned timeout_ms)
{
	struct timeval tv;
	int done = 0, ms;

	while (!done) {
		if (wait_fd(c, POLLOUT, deadline, timeout_ms))
			return -ETIMEDOUT;
		/* a blocking write of what is left may wait: not past the
		 * deadline
		 */
		ms = left_ms(deadline);
		tv = (struct timeval){ .tv_sec = ms / 1000,
				       .tv_usec = (ms % 1000) * 1000 + 1 };
		if (redisSetTimeout(c, tv) != REDIS_OK ||
		    redisBufferWrite(c, &done) != REDIS_OK)
			return -EIO;
	}
	return 0;
}

redisReply *sl_redis_command(redisContext *c, const struct sl_redis_limits *lim,
			     int argc, const char **argv, const size_t *argvlen)
{
	uint64_t deadline = sl_now_mono_ms() + lim->timeout_ms;
	size_t taken = 0;
	char buf[16384];
	void *reply = NULL;
	ssize_t n;

	if (c->err)
		return NULL;
	if (redisAppendCommandArgv(c, argc, argv, argvlen) != REDIS_OK ||
	    send_all(c, deadline, lim->timeout_ms))
		goto fail;
	for (;;) {
		if (redisReaderGetReply(c->reader, &reply) != REDIS_OK) {
			set_error(c, REDIS_ERR_PROTOCOL, "%s", c->reader->errstr);
			goto fail;
		}
		if (reply)
			return reply;
		if (wait_fd(c, POLLIN, deadline, lim->timeout_ms))
			goto fail;
		n = read(c->fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			set_error(c, n ? REDIS_ERR_IO : REDIS_ERR_EOF, "%s",
				  n ? strerror(errno) : "Server closed the connection");
			goto fail;
		}
		taken += n;
		if (taken > lim->max_reply) {
			/* what is still in flight is not read: the caller
			 * drops this connection
			 */
			set_error(c, REDIS_ERR_PROTOCOL,
				  "a reply over the %zu-byte limit (sync.max_reply)",
				  lim->max_reply);
			goto fail;
		}
		if (redisReaderFeed(c->reader, buf, n) != REDIS_OK) {
			set_error(c, REDIS_ERR_PROTOCOL, "%s", c->reader->errstr);
			goto fail;
		}
	}
fail:
	if (!c->err)
		set_error(c, REDIS_ERR_OOM, "out of memory");
	return NULL;
}

redisReply *sl_redis_commandl(redisContext *c, const struct sl_redis_limits *lim,
			      ...)
{
	const char *argv[SL_REDIS_ARGS_MAX];
	size_t argvlen[SL_REDIS_ARGS_MAX];
	const char *s;
	va_list ap;
	int argc = 0;

	va_start(ap, lim);
	while ((s = va_arg(ap, const char *)) && argc < SL_REDIS_ARGS_MAX) {
		argv[argc] = s;
		argvlen[argc++] = strlen(s);
	}
	va_end(ap);
	return sl_redis_command(c, lim, argc, argv, argvlen);
}
