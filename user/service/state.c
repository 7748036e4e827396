// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core/pinned.h"
#include "service/state.h"

static const __u32 zero;

/* The pinned map if it holds this build's layout, else -errno. */
static int open_pin(void)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(SL_SERVICE_PIN);

	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    info.value_size != sizeof(struct sl_service_state)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int sl_service_state_publish(const struct sl_service_state *st)
{
	int fd, err = 0;

	fd = open_pin();
	if (fd == -ESTALE)
		unlink(SL_SERVICE_PIN);	/* an older build's: ours now */
	if (fd < 0) {
		fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "sl_service",
				    sizeof(__u32), sizeof(*st), 1, NULL);
		if (fd < 0)
			return -errno;
		if (bpf_obj_pin(fd, SL_SERVICE_PIN))
			err = -errno;
	}
	if (!err && bpf_map_update_elem(fd, &zero, st, BPF_ANY))
		err = -errno;
	close(fd);
	return err;
}

int sl_service_state_read(struct sl_service_state *st)
{
	int fd = open_pin(), err = 0;

	memset(st, 0, sizeof(*st));
	if (fd < 0)
		return fd == -ESTALE ? -ENOENT : fd;
	if (bpf_map_lookup_elem(fd, &zero, st))
		err = -errno;
	close(fd);
	return err;
}

void sl_service_state_unpin(void)
{
	unlink(SL_SERVICE_PIN);
}

enum sl_service_how sl_service_device_how(const struct sl_service_state *st,
					  const char *dev)
{
	__u32 i;

	for (i = 0; i < st->nr_devices && i < SL_MAX_DEVICES; i++)
		if (!strncmp(st->dev[i].name, dev, sizeof(st->dev[i].name)))
			return st->dev[i].how;
	return SL_SERVICE_NONE;
}

const char *sl_service_how_name(enum sl_service_how how)
{
	return how == SL_SERVICE_ATTACHED ? "attached" :
	       how == SL_SERVICE_ADOPTED ? "adopted" : NULL;
}

static __u64 ms_ago(__u64 then, __u64 now)
{
	return now > then ? now - then : 0;
}

int sl_service_status_read(__u64 now_ms, struct sl_service_status *s)
{
	const struct sl_service_state *st = &s->st;
	int err;

	memset(s, 0, sizeof(*s));
	err = sl_service_state_read(&s->st);
	if (err || !st->pid)
		return err;
	/* a service killed with -9 leaves its state behind */
	s->running = !kill((pid_t)st->pid, 0) || errno == EPERM;
	s->started_ago_ms = ms_ago(st->started_ms, now_ms);
	s->last_refused_ago_ms = ms_ago(st->last_refused_ms, now_ms);
	return 0;
}

static const char *check_mode(const struct sl_service_state *st)
{
	return st->check_central ? "central" : "kernel";
}

/* The pinned text fields need not end in a NUL: at most their size. */
static json_object *string_field(const char *f, size_t size)
{
	return json_object_new_string_len(f, strnlen(f, size));
}

json_object *sl_service_status_to_json(const struct sl_service_status *s)
{
	const struct sl_service_state *st = &s->st;
	json_object *o, *last = NULL;

	if (!st->pid)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "pid", json_object_new_int64(st->pid));
	json_object_object_add(o, "running", json_object_new_boolean(s->running));
	sl_json_add_u64(o, "started_ms_ago", s->started_ago_ms);
	sl_json_add_u64(o, "reloads_applied", st->reloads_applied);
	sl_json_add_u64(o, "reloads_refused", st->reloads_refused);
	json_object_object_add(o, "check_mode",
			       json_object_new_string(check_mode(st)));
	if (st->last_refused_ms) {
		last = json_object_new_object();
		json_object_object_add(last, "file", string_field(
			st->last_refused_file, sizeof(st->last_refused_file)));
		json_object_object_add(last, "error", string_field(
			st->last_refused_error, sizeof(st->last_refused_error)));
		sl_json_add_u64(last, "ms_ago", s->last_refused_ago_ms);
	}
	json_object_object_add(o, "last_refused", last);
	return o;
}

void sl_service_status_print(const struct sl_service_status *s)
{
	const struct sl_service_state *st = &s->st;

	if (!st->pid)
		return;
	printf("service:  pid %u (%s), reloads: %llu applied, %llu refused, checks: %s\n",
	       st->pid, s->running ? "running" : "gone",
	       (unsigned long long)st->reloads_applied,
	       (unsigned long long)st->reloads_refused,
	       check_mode(st));
	if (st->last_refused_ms)
		printf("          last refused %llu ms ago: %.*s: %.*s\n",
		       (unsigned long long)s->last_refused_ago_ms,
		       (int)sizeof(st->last_refused_file), st->last_refused_file,
		       (int)sizeof(st->last_refused_error), st->last_refused_error);
}
