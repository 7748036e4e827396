// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "util/log.h"
#include "state/pinned.h"
#include "instance/pinned_record.h"
#include "service/state.h"

static const __u32 zero;
/* This process's own record, once it published one; -1: none. */
static int state_fd = -1;

int sl_service_state_publish(const struct sl_service_state *st)
{
	int err;

	if (state_fd >= 0)
		return bpf_map_update_elem(state_fd, &zero, st, BPF_ANY) ? -errno : 0;
	err = sl_pinned_record_write(SL_SERVICE_PIN, "sl_service", st, sizeof(*st));
	if (!err)
		state_fd = sl_pinned_record_open(SL_SERVICE_PIN, sizeof(*st));
	return err;
}

void sl_service_state_publish_or_warn(const struct sl_service_state *st)
{
	int err = sl_service_state_publish(st);

	if (err)
		pr_warn("cannot pin the service state as %s: %s", SL_SERVICE_PIN,
			strerror(-err));
}

int sl_service_state_read(struct sl_service_state *st)
{
	if (state_fd >= 0) {
		memset(st, 0, sizeof(*st));
		return bpf_map_lookup_elem(state_fd, &zero, st) ? -errno : 0;
	}
	return sl_pinned_record_read(SL_SERVICE_PIN, st, sizeof(*st));
}

void sl_service_state_unpin(void)
{
	if (state_fd >= 0)
		close(state_fd);
	state_fd = -1;
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
	s->changed_ago_ms = ms_ago(st->changed_ms, now_ms);
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

json_object *sl_http_listeners_to_json(const char *socket, unsigned mode,
				       const char *listen)
{
	json_object *o = json_object_new_object();
	char text[8];

	snprintf(text, sizeof(text), "%04o", mode & 0777);
	json_object_object_add(o, "socket", *socket ?
			       json_object_new_string(socket) : NULL);
	json_object_object_add(o, "socket_mode", *socket ?
			       json_object_new_string(text) : NULL);
	json_object_object_add(o, "listen", *listen ?
			       json_object_new_string(listen) : NULL);
	/* TCP never runs without the token (the config refuses it) */
	json_object_object_add(o, "token_required",
			       json_object_new_boolean(*listen != '\0'));
	return o;
}

json_object *sl_service_status_to_json(const struct sl_service_status *s)
{
	char sock[sizeof(s->st.http_socket) + 1];
	char listen[sizeof(s->st.http_listen) + 1];
	const struct sl_service_state *st = &s->st;
	json_object *o, *last = NULL, *changed = NULL;

	if (!st->pid)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "pid", json_object_new_int64(st->pid));
	json_object_object_add(o, "running", json_object_new_boolean(s->running));
	json_object_object_add(o, "config", string_field(st->config,
							 sizeof(st->config)));
	json_object_object_add(o, "redis_url", st->sync_url[0] ?
			       string_field(st->sync_url, sizeof(st->sync_url)) : NULL);
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
	if (st->changed_ms) {
		changed = json_object_new_object();
		json_object_object_add(changed, "what", string_field(
			st->changed, sizeof(st->changed)));
		sl_json_add_u64(changed, "ms_ago", s->changed_ago_ms);
	}
	json_object_object_add(o, "changed_under_it", changed);
	json_object_object_add(o, "user", string_field(st->user, sizeof(st->user)));
	json_object_object_add(o, "uid", json_object_new_int64(st->uid));
	json_object_object_add(o, "sync_wanted",
			       json_object_new_boolean(st->sync_wanted));
	json_object_object_add(o, "sync_down", st->sync_wanted && st->sync_down[0] ?
			       string_field(st->sync_down, sizeof(st->sync_down)) : NULL);
	snprintf(sock, sizeof(sock), "%.*s", (int)sizeof(st->http_socket),
		 st->http_socket);
	snprintf(listen, sizeof(listen), "%.*s", (int)sizeof(st->http_listen),
		 st->http_listen);
	json_object_object_add(o, "http", sl_http_listeners_to_json(sock,
			       st->http_socket_mode, listen));
	return o;
}

void sl_service_status_print(const struct sl_service_status *s)
{
	const struct sl_service_state *st = &s->st;

	if (!st->pid)
		return;
	printf("service:  pid %u (%s), config %.*s\n", st->pid,
	       s->running ? "running" : "gone", (int)sizeof(st->config),
	       st->config);
	printf("          reloads: %llu applied, %llu refused, checks: %s\n",
	       (unsigned long long)st->reloads_applied,
	       (unsigned long long)st->reloads_refused,
	       check_mode(st));
	if (!st->uid)
		printf("          runs as root (its user is root): every privilege for its whole life\n");
	else
		printf("          runs as user %.*s (uid %u), with no capabilities\n",
		       (int)sizeof(st->user), st->user, st->uid);
	if (st->last_refused_ms)
		printf("          last refused %llu ms ago: %.*s: %.*s\n",
		       (unsigned long long)s->last_refused_ago_ms,
		       (int)sizeof(st->last_refused_file), st->last_refused_file,
		       (int)sizeof(st->last_refused_error), st->last_refused_error);
	if (st->http_socket[0])
		printf("          api: socket %.*s (mode %04o)\n",
		       (int)sizeof(st->http_socket), st->http_socket,
		       st->http_socket_mode & 0777);
	if (st->http_listen[0])
		printf("          api: tcp %.*s (bearer token required)\n",
		       (int)sizeof(st->http_listen), st->http_listen);
	if (st->sync_wanted && st->sync_down[0])
		printf("          sync DOWN: %.*s; this node decides on its own counts\n",
		       (int)sizeof(st->sync_down), st->sync_down);
	if (st->changed_ms)
		printf("          changed under it %llu ms ago: %.*s ('slicelimit reload' puts its config back)\n",
		       (unsigned long long)s->changed_ago_ms,
		       (int)sizeof(st->changed), st->changed);
}
