/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the running service did, for `status` and /metrics: which devices it
 * attached and which it adopted (found attached, by an earlier run or the
 * attach command, and kept as they were), and how its SIGHUP reloads went.
 * The service writes it to a one-entry array map that it creates and pins
 * as SL_SERVICE_PIN, so that `status`, a separate process, can read it, and
 * it goes with the other pins. It is not in the BPF object: the kernel
 * never reads it.
 */
#ifndef SL_SERVICE_STATE_H
#define SL_SERVICE_STATE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <linux/types.h>
#include "service/config.h"

#define SL_SERVICE_PIN	SL_PIN_DIR "/sl_service"

enum sl_service_how {
	SL_SERVICE_NONE = 0,	/* not one of the service's devices */
	SL_SERVICE_ATTACHED = 1,	/* this run attached it */
	SL_SERVICE_ADOPTED = 2,	/* found attached at start or reload: kept */
};

struct sl_service_device {
	char name[16];
	__u32 how;		/* enum sl_service_how */
};

struct sl_service_state {
	__u32 pid;
	__u32 nr_devices;
	__u64 started_ms;		/* TAI */
	__u64 reloads_applied;	/* SIGHUPs that took the new config and rules */
	__u64 reloads_refused;	/* SIGHUPs that kept what was running */
	__u64 last_refused_ms;	/* TAI; 0: none refused */
	char last_refused_file[256];
	char last_refused_error[64];
	struct sl_service_device dev[SL_MAX_DEVICES];
	__u32 check_central;	/* /v1/check decided in the store (layout
				 * central), else in this node's kernel */
	__u32 pad;
	char config[256];	/* the config file it runs, as a full path */
	__u64 changed_ms;	/* TAI: when another command last changed
				 * what it manages (--force); 0: never since
				 * its start or last reload */
	char changed[128];	/* what that command changed */
	char sync_url[256];	/* the Redis store it syncs through, its
				 * userinfo left out; "": none */
	__u32 sync_wanted;	/* its config asks for sync */
	__u32 pad2;
	char sync_down[128];	/* why the sync it wants does not run; "":
				 * it runs, or none is wanted */
	char rules[256];	/* the rule file its config names, as a full
				 * path: what a refused `rules apply` points
				 * the operator to */
	char http_socket[108];	/* the API's Unix socket; "": none */
	__u32 http_socket_mode;
	char http_listen[128];	/* its TCP address (a bearer token on every
				 * request); "": none */
	__u32 uid;		/* the user it runs as once started (0: it
				 * kept root, --user root) */
	__u32 pad3;
	char user[32];		/* that user's name */
};

/* Write st to the pin, creating it (or replacing one of another layout).
 * The service's first write keeps the record open: its later writes and
 * reads go through that descriptor, so that they still work once it
 * dropped root and cannot open the pins by path. 0 or -errno.
 */
int sl_service_state_publish(const struct sl_service_state *st);
/* The same for the running service, which goes on without it (status and
 * /metrics read it): a failure is said in the log.
 */
void sl_service_state_publish_or_warn(const struct sl_service_state *st);
/* The pinned state: 0, -ENOENT when no service has published one. */
int sl_service_state_read(struct sl_service_state *st);
/* Remove the pin: no service runs (the programs stay, keep_attached);
 * this process's descriptor on it is closed.
 */
void sl_service_state_unpin(void);

/* How the service holds DEV (SL_SERVICE_NONE: it does not). */
enum sl_service_how sl_service_device_how(const struct sl_service_state *st,
					  const char *dev);
/* "attached", "adopted", or NULL for SL_SERVICE_NONE. */
const char *sl_service_how_name(enum sl_service_how how);

/* The API's listeners as `status --json` and `run --check --json` show
 * them: {"socket", "socket_mode", "listen", "token_required"}, with null
 * for a listener that is off ("" here).
 */
json_object *sl_http_listeners_to_json(const char *socket, unsigned mode,
				       const char *listen);

/* The service as `status` shows it: the pinned state, and what is derived
 * from it at one instant, so that the JSON and the text say the same.
 */
struct sl_service_status {
	struct sl_service_state st;	/* all zero: none published */
	bool running;			/* st.pid is alive */
	__u64 started_ago_ms;
	__u64 last_refused_ago_ms;
	__u64 changed_ago_ms;
};

/* 0, or -ENOENT when no service has published one (s all zero then). */
int sl_service_status_read(__u64 now_ms, struct sl_service_status *s);
/* The "service" object of `status --json`, or NULL when none published. */
json_object *sl_service_status_to_json(const struct sl_service_status *s);
/* The same, for people; nothing when none published. */
void sl_service_status_print(const struct sl_service_status *s);

#endif /* SL_SERVICE_STATE_H */
