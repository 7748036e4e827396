/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the sync layer is told to do: the `sync:` section of the service's
 * config file (service/config.h shows the YAML), read by sync/config.c,
 * kept here so that sync/ does not include the service above it.
 */
#ifndef SL_SYNC_CONFIG_H
#define SL_SYNC_CONFIG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "slicelimit.h"
#include "util/yaml_doc.h"

#define SL_MAX_CLUSTER_NODES	64
#define SL_SYNC_STATE_DIR_DEFAULT	"/var/lib/slicelimit"

enum sl_sync_backend {
	SL_SYNC_UDP = 0,
	SL_SYNC_REDIS = 1,
};

struct sl_sync_config {
	bool enabled;
	unsigned node;
	enum sl_layout layout;		/* the kernel's: delayed-sync under central */
	bool check_central;		/* layout: central: /v1/check in the store */
	unsigned interval_ms;
	enum sl_sync_backend backend;
	struct sockaddr_storage listen;
	struct sockaddr_storage peers[SL_MAX_PEERS];
	/* each peer's node id and X25519 public key, as peers[] */
	unsigned peer_node[SL_MAX_PEERS];
	uint8_t peer_public_key[SL_MAX_PEERS][32];
	unsigned nr_peers;
	unsigned nodes;
	char key_file[4096];		/* redis: the fleet's shared key */
	char identity_file[4096];	/* udp: this node's secret key */
	/* udp: where the replay state survives a restart (the directory is
	 * made, 0700, if missing)
	 */
	char state_dir[4096];
	char url[256];
	/* Redis AUTH: the password read from password_file at start, and the
	 * ACL user ("" : the default user)
	 */
	bool auth;
	char username[128];
	char password[512];
	/* Redis Cluster: only when configured, and only to these nodes
	 * (besides the URL's)
	 */
	bool cluster;
	struct sl_redis_node_conf {
		char host[256];
		uint16_t port;
	} cluster_nodes[SL_MAX_CLUSTER_NODES];
	unsigned nr_cluster_nodes;
	size_t max_reply;		/* bytes of one reply */
};

/* The `sync:` mapping Y into SC (zeroed by the caller): enabled, with
 * each problem of the section added to C's list at its line and field.
 */
void sl_sync_config_read(const struct sl_yctx *c, const struct sl_ynode *y,
			 struct sl_sync_config *sc);

#endif /* SL_SYNC_CONFIG_H */
