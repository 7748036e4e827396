// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "instance/pinned_record.h"

static const __u32 zero;

/* The record's map if it holds SIZE-byte values, else -errno (-ESTALE:
 * one of another size).
 */
static int open_record(const char *path, size_t size)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(path);

	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    info.value_size != size) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int sl_pinned_record_open(const char *path, size_t size)
{
	return open_record(path, size);
}

int sl_pinned_record_write(const char *path, const char *name,
			   const void *val, size_t size)
{
	int fd, err = 0;

	fd = open_record(path, size);
	if (fd == -ESTALE)
		unlink(path);	/* an older build's: ours now */
	if (fd < 0) {
		fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, name, sizeof(__u32),
				    size, 1, NULL);
		if (fd < 0)
			return -errno;
		if (bpf_obj_pin(fd, path))
			err = -errno;
	}
	if (!err && bpf_map_update_elem(fd, &zero, val, BPF_ANY))
		err = -errno;
	close(fd);
	return err;
}

int sl_pinned_record_read(const char *path, void *val, size_t size)
{
	int fd = open_record(path, size), err = 0;

	memset(val, 0, size);
	if (fd < 0)
		return fd == -ESTALE ? -ENOENT : fd;
	if (bpf_map_lookup_elem(fd, &zero, val))
		err = -errno;
	close(fd);
	return err;
}
