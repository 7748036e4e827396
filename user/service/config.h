/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The service's config file (`slicelimit run --config FILE`), YAML:
 *
 *   devices:                  # attached at start, detached at stop
 *     - { name: eth0, mode: xdp }      # xdp (default), xdp-generic, tc
 *   rules: /etc/slicelimit/rules.yaml  # applied at start and on SIGHUP
 *   clients: 262144           # client table capacity (first load only)
 *   keep_attached: false      # true: leave the programs enforcing at stop
 *   service:
 *     user: slicelimit        # dropped to once attached (run --user wins)
 *   http:                     # the check API and /metrics
 *     socket: /run/slicelimit/api.sock   # the default listener; "off": none
 *     socket_mode: "0660"     # who may connect: the file's mode ...
 *     socket_group: www-data  # ... and group (nginx's workers)
 *     listen: 127.0.0.1:8080  # TCP as well, only when given: needs token_file
 *     token_file: /etc/slicelimit/api.token  # Authorization: Bearer TOKEN
 *     timeout: 10s            # a connection idle this long is closed
 *     connections_per_ip: 32  # TCP connections one address may hold
 *   rls:                      # Envoy's rate limit service (gRPC, h2c): off
 *                             # unless given; the same keys as http:
 *     socket: /run/slicelimit/rls.sock   # the default listener; "off": none
 *     socket_mode: "0660"
 *     socket_group: envoy
 *     listen: 127.0.0.1:8081  # TCP as well, only when given: needs token_file
 *     token_file: /etc/slicelimit/rls.token  # authorization: Bearer TOKEN
 *     timeout: 10s            # idle connection / unfinished call
 *     connections_per_ip: 32
 *   sync:                     # optional: count each client with peers
 *     node: 1                 # this node's id, unique in the fleet
 *     layout: delayed-sync    # split-quota, predictive; or central
 *                             # (redis only): /v1/check decided in Redis
 *                             # for the fleet, packets as delayed-sync
 *     interval: 200ms
 *     backend: udp            # udp (a mesh of peers) or redis
 *     listen: 10.0.0.1:7400   # udp: where peers' messages arrive
 *     identity_file: /etc/slicelimit/sync.identity   # udp: this node's
 *                             # secret key (slicelimit sync keygen)
 *     peers:                  # udp: each other node, its id, where its
 *       - {node: 2, address: 10.0.0.2:7400, public_key: HEX}  # datagrams
 *                             # come from and go, its public key
 *     key_file: /etc/slicelimit/sync.key   # redis: 64 hex digits
 *     url: redis://127.0.0.1:6379           # redis
 *     password_file: /etc/slicelimit/redis.pass   # redis AUTH: mode 0600
 *     username: slicelimit    # redis: an ACL user (with password_file)
 *     nodes: 2                # split-quota: default peers + 1
 */
#ifndef SL_SERVICE_CONFIG_H
#define SL_SERVICE_CONFIG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>
#include "slicelimit.h"
#include "util/yaml_doc.h"
#include "sync/config.h"

#define SL_MAX_DEVICES	64

struct sl_config_device {
	char name[16];
	enum sl_attach_mode mode;
};

#define SL_HTTP_SOCKET_DEFAULT	"/run/slicelimit/api.sock"
#define SL_HTTP_TOKEN_MAX	256
#define SL_RLS_SOCKET_DEFAULT	"/run/slicelimit/rls.sock"

/* The check API's listeners and who may use them. */
struct sl_http_config {
	bool socket_enabled;		/* http.socket is not "off" */
	char socket[108];		/* sun_path */
	unsigned socket_mode;		/* of the socket file */
	bool socket_group_set;
	unsigned socket_gid;		/* http.socket_group, resolved */
	bool tcp_enabled;		/* http.listen given, not "off" */
	struct sockaddr_storage addr;
	char listen[128];
	/* the bearer token every TCP request must carry, read from
	 * token_file at parse time as the Redis password is
	 */
	char token_file[4096];
	char token[SL_HTTP_TOKEN_MAX + 1];
	unsigned timeout_s;
	unsigned per_ip;		/* TCP connections per client address */
};

struct sl_service_config {
	struct sl_config_device devices[SL_MAX_DEVICES];
	unsigned nr_devices;
	char rules_path[4096];
	unsigned clients;
	bool keep_attached;
	struct sl_http_config http;
	/* Envoy's rate limit service: the same listeners' settings, both
	 * off unless the rls section is there
	 */
	struct sl_http_config rls;
	struct sl_sync_config sync;
	char service_user[32];		/* "": not set (run --user, or the
					 * default, names the user) */
};

/* Parse and validate; every problem of the file goes into *pb, each with
 * its line and field. 0, -EINVAL (problems), -ENOMEM or -errno (unread).
 */
int sl_config_parse_file(const char *path, struct sl_service_config *cfg,
			 struct sl_problems *pb);
int sl_config_parse_buffer(const char *name, const char *buf, size_t len,
			   struct sl_service_config *cfg, struct sl_problems *pb);
/* The same, with every problem printed to stderr as "FILE:LINE: FIELD: ...". */
int sl_config_load(const char *path, struct sl_service_config *cfg);

#endif /* SL_SERVICE_CONFIG_H */
