// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "util/secret_file.h"
#include "util/yaml_secret.h"

size_t sl_yaml_secret_line(const struct sl_yctx *c, const struct sl_ynode *v,
			   const char *field, const char *path, char *out,
			   size_t size)
{
	/* the longest secret (the Redis password), one byte more to see
	 * that it is too long, and its NUL
	 */
	char buf[514];
	enum sl_secret_problem problem;
	struct stat st;
	ssize_t n;
	int fd;

	if (size + 1 > sizeof(buf))
		size = sizeof(buf) - 1;
	fd = sl_secret_open(path, &st, &problem);
	if (fd < 0) {
		sl_secret_describe(buf, sizeof(buf), path, fd, &st, problem);
		sl_yaml_bad(c, v, field, "%s", buf);
		return 0;
	}
	n = read(fd, buf, size + 1);
	if (n < 0) {
		sl_yaml_bad(c, v, field, "cannot read '%s': %s", path,
			    strerror(errno));
		n = 0;
		goto out;
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (!n || (size_t)n >= size || memchr(buf, '\n', n) ||
	    memchr(buf, 0, n)) {
		sl_yaml_bad(c, v, field, "'%s' must hold the secret on one line, 1 to %zu bytes",
			    path, size - 1);
		n = 0;
		goto out;
	}
	memcpy(out, buf, n);
	out[n] = 0;
out:
	/* the copy on the stack is not left behind */
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return n;
}
