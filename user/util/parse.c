// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/parse.h"
#include "sl_key.h"

int sl_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	/* strtoull takes a sign and leading space; a number here has neither */
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int sl_parse_duration_ms(const char *s, uint64_t *ms)
{
	static const struct { const char *suffix; double scale; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 },
	};
	static const char digits[] = "0123456789";
	size_t i, n;
	char *end;
	double v;

	/* DIGITS[.DIGITS]UNIT and nothing else: strtod would also take a
	 * sign, space, hex ("0x10s"), an exponent ("1e3s") and "inf"
	 */
	n = s ? strspn(s, digits) : 0;
	if (!n)
		return -EINVAL;
	if (s[n] == '.') {
		size_t frac = strspn(s + n + 1, digits);

		if (!frac)
			return -EINVAL;
		n += 1 + frac;
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno || end != s + n || !isfinite(v))
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		double r;

		if (strcmp(end, units[i].suffix))
			continue;
		r = v * units[i].scale;
		/* whole milliseconds only: "0.5ms" is not a duration here */
		if (r != floor(r) || r > 1e15)
			return -EINVAL;
		*ms = (uint64_t)r;
		return 0;
	}
	return -EINVAL;
}

const char *sl_format_duration(uint64_t ms, char *buf, size_t len)
{
	if (ms && ms % 86400000 == 0)
		snprintf(buf, len, "%llud", (unsigned long long)(ms / 86400000));
	else if (ms && ms % 3600000 == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(ms / 3600000));
	else if (ms && ms % 60000 == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(ms / 60000));
	else if (ms && ms % 1000 == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ms / 1000));
	else
		snprintf(buf, len, "%llums", (unsigned long long)ms);
	return buf;
}

const char *sl_name_of(const char *const *names, unsigned nr, unsigned v)
{
	return v < nr && names[v] ? names[v] : "?";
}

int sl_parse_name(const char *s, const char *(*name)(unsigned), unsigned count,
		  unsigned *v)
{
	unsigned i;

	for (i = 0; i < count; i++)
		if (!strcmp(s, name(i))) {
			*v = i;
			return 0;
		}
	return -EINVAL;
}

int sl_parse_addr(const char *s, struct sl_addr *addr)
{
	struct in_addr v4;

	if (inet_pton(AF_INET, s, &v4) == 1) {
		memset(addr->byte, 0, 10);
		addr->byte[10] = addr->byte[11] = 0xff;
		memcpy(&addr->byte[12], &v4, 4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, addr->byte) == 1)
		return 0;
	return -EINVAL;
}

int sl_parse_host_port(const char *s, char *host, size_t size,
		       uint16_t *port, const char **end)
{
	const char *h = s, *e, *p;
	unsigned long v;
	char *digits_end;
	size_t len;

	if (*h == '[') {
		e = strchr(++h, ']');
		if (!e)
			return -EINVAL;
		p = e + 1;
	} else {
		e = h + strcspn(h, ":/");
		p = e;
	}
	len = e - h;
	if (!len || len >= size)
		return -EINVAL;
	if (*p == ':') {
		/* strtoul takes a sign and leading space; a port has neither */
		if (p[1] < '0' || p[1] > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(p + 1, &digits_end, 10);
		if (errno || !v || v > 65535)
			return -EINVAL;
		*port = v;
		p = digits_end;
	}
	memcpy(host, h, len);
	host[len] = '\0';
	*end = p;
	return 0;
}

int sl_parse_prefix(const char *s, struct sl_addr *addr, unsigned *len128)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash;
	struct sl_addr masked;
	uint64_t bits;
	bool v4;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (sl_parse_addr(buf, addr))
		return -EINVAL;
	v4 = sl_addr_is_ipv4(addr) && !strchr(buf, ':');
	if (!slash) {
		*len128 = 128;
		return 0;
	}
	/* digits only: strtoul would take "+8" and " 8" */
	if (sl_parse_uint(slash + 1, 0, v4 ? 32 : 128, &bits))
		return -EINVAL;
	*len128 = v4 ? 96 + bits : bits;
	masked = *addr;
	sl_addr_mask(&masked, *len128);
	if (memcmp(&masked, addr, sizeof(masked)))
		return -EDOM;
	return 0;
}

const char *sl_format_prefix(const struct sl_addr *addr, unsigned len128,
			     char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	bool v4 = sl_addr_is_ipv4(addr) && len128 >= 96;

	if (v4)
		inet_ntop(AF_INET, &addr->byte[12], ip, sizeof(ip));
	else
		inet_ntop(AF_INET6, addr->byte, ip, sizeof(ip));
	if (len128 == 128)
		snprintf(buf, len, "%s", ip);
	else
		snprintf(buf, len, "%s/%u", ip, v4 ? len128 - 96 : len128);
	return buf;
}

bool sl_prefix_contains(const struct sl_addr *outer, unsigned outer_len,
			const struct sl_addr *inner, unsigned inner_len)
{
	struct sl_addr a = *inner;

	if (inner_len < outer_len)
		return false;
	sl_addr_mask(&a, outer_len);
	return !memcmp(&a, outer, sizeof(a));
}

int sl_parse_listen(const char *s, struct sockaddr_storage *ss)
{
	char host[128];
	const char *end;
	uint16_t port = 0;

	/* the port is not optional here; brackets say IPv6 */
	if (strlen(s) >= sizeof(host) ||
	    sl_parse_host_port(s, host, sizeof(host), &port, &end) || *end ||
	    !port)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		return inet_pton(AF_INET6, host, &a->sin6_addr) == 1 ? 0 : -EINVAL;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -EINVAL;
	}
}
