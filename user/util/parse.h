/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The small parsers every command and file loader shares: numbers,
 * durations, addresses and prefixes, each with its range checked.
 */
#ifndef SL_UTIL_PARSE_H
#define SL_UTIL_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "slicelimit.h"

/* A whole decimal number in [min, max]: no sign, no space, no suffix
 * (leading zeros are fine). 0, -EINVAL when it is not a number, -ERANGE
 * when it is one outside the range. Every numeric flag and config field
 * goes through it, so none is cut down silently.
 */
int sl_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* The largest client table (attach --clients, the config's clients:):
 * 2^26 states of each algorithm's size stay within what a map holds.
 */
#define SL_MAX_CLIENTS	(1u << 26)

/* "60s", "500ms", "0.2s", "1m", "1h", "1d" -> milliseconds. 0 or -EINVAL. */
int sl_parse_duration_ms(const char *s, uint64_t *ms);
/* Milliseconds -> the shortest exact form ("60s", "1500ms"). */
const char *sl_format_duration(uint64_t ms, char *buf, size_t len);

/* The names of an enum, as a table indexed by value: names[v], or "?"
 * for a value past it (a newer kernel's, a damaged map's).
 */
const char *sl_name_of(const char *const *names, unsigned nr, unsigned v);
/* Which of the count values `name` spells s: 0, or -EINVAL for none.
 * By function, so a table private to its file (rules/names.c) is read
 * through its own name function.
 */
int sl_parse_name(const char *s, const char *(*name)(unsigned), unsigned count,
		  unsigned *v);

/* "192.0.2.1", "2001:db8::1" -> IPv4-mapped or IPv6. 0 or -EINVAL. */
int sl_parse_addr(const char *s, struct sl_addr *addr);
/* "HOST:PORT", "HOST" or "[IPV6]:PORT" at the start of s: the host
 * (brackets off; not empty, shorter than size) into host, the port
 * (1..65535) into *port when s names one (else *port keeps the caller's
 * default), *end past them (at the NUL, or what follows, such as a URL's
 * '/'). An unbracketed host ends at ':' or '/'. 0 or -EINVAL.
 */
int sl_parse_host_port(const char *s, char *host, size_t size,
		       uint16_t *port, const char **end);
/* "127.0.0.1:8080", "[::1]:8080" -> socket address (the port required).
 * 0 or -EINVAL.
 */
int sl_parse_listen(const char *s, struct sockaddr_storage *ss);
/* "10.0.0.0/8", "2001:db8::/32", or an address (full length). The length
 * returned counts the 128-bit (IPv4-mapped) form. -EINVAL, or -EDOM when
 * host bits are set.
 */
int sl_parse_prefix(const char *s, struct sl_addr *addr, unsigned *len128);
/* The address, or address/len when len128 < 128, in its own family. */
const char *sl_format_prefix(const struct sl_addr *addr, unsigned len128,
			     char *buf, size_t len);
bool sl_prefix_contains(const struct sl_addr *outer, unsigned outer_len,
			const struct sl_addr *inner, unsigned inner_len);

#endif /* SL_UTIL_PARSE_H */
