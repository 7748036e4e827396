// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <cyaml/cyaml.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "config.h"
#include "loader.h"
#include "sync.h"

struct yaml_device {
	char *name;
	char *mode;
};

struct yaml_http {
	char *listen;
};

struct yaml_sync {
	unsigned *node;
	char *layout;
	char *interval;
	char *backend;
	char *listen;
	char **peers;
	unsigned peers_count;
	char *key_file;
	char *url;
	unsigned *nodes;
};

struct yaml_config {
	struct yaml_device *devices;
	unsigned devices_count;
	char *rules;
	unsigned *clients;
	bool keep_attached;
	struct yaml_http *http;
	struct yaml_sync *sync;
};

static const cyaml_schema_field_t device_fields[] = {
	CYAML_FIELD_STRING_PTR("name", CYAML_FLAG_POINTER, struct yaml_device,
			       name, 1, 15),
	CYAML_FIELD_STRING_PTR("mode", CYAML_FLAG_OPTIONAL, struct yaml_device,
			       mode, 1, 16),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t device_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct yaml_device,
			    device_fields),
};

static const cyaml_schema_field_t http_fields[] = {
	CYAML_FIELD_STRING_PTR("listen", CYAML_FLAG_OPTIONAL, struct yaml_http,
			       listen, 1, 127),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t peer_schema = {
	CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 1, 127),
};

static const cyaml_schema_field_t sync_fields[] = {
	CYAML_FIELD_UINT_PTR("node", CYAML_FLAG_POINTER, struct yaml_sync, node),
	CYAML_FIELD_STRING_PTR("layout", CYAML_FLAG_OPTIONAL, struct yaml_sync,
			       layout, 1, 31),
	CYAML_FIELD_STRING_PTR("interval", CYAML_FLAG_OPTIONAL,
			       struct yaml_sync, interval, 1, 31),
	CYAML_FIELD_STRING_PTR("backend", CYAML_FLAG_OPTIONAL, struct yaml_sync,
			       backend, 1, 15),
	CYAML_FIELD_STRING_PTR("listen", CYAML_FLAG_OPTIONAL, struct yaml_sync,
			       listen, 1, 127),
	CYAML_FIELD_SEQUENCE("peers", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
			     struct yaml_sync, peers, &peer_schema, 0,
			     SL_MAX_PEERS),
	CYAML_FIELD_STRING_PTR("key_file", CYAML_FLAG_OPTIONAL,
			       struct yaml_sync, key_file, 1, 4095),
	CYAML_FIELD_STRING_PTR("url", CYAML_FLAG_OPTIONAL, struct yaml_sync,
			       url, 1, 255),
	CYAML_FIELD_UINT_PTR("nodes", CYAML_FLAG_OPTIONAL, struct yaml_sync,
			     nodes),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t config_fields[] = {
	CYAML_FIELD_SEQUENCE("devices", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
			     struct yaml_config, devices, &device_schema, 0,
			     SL_MAX_DEVICES),
	CYAML_FIELD_STRING_PTR("rules", CYAML_FLAG_POINTER, struct yaml_config,
			       rules, 1, 4095),
	CYAML_FIELD_UINT_PTR("clients", CYAML_FLAG_OPTIONAL, struct yaml_config,
			     clients),
	CYAML_FIELD_BOOL("keep_attached", CYAML_FLAG_OPTIONAL,
			 struct yaml_config, keep_attached),
	CYAML_FIELD_MAPPING_PTR("http", CYAML_FLAG_OPTIONAL, struct yaml_config,
				http, http_fields),
	CYAML_FIELD_MAPPING_PTR("sync", CYAML_FLAG_OPTIONAL, struct yaml_config,
				sync, sync_fields),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t config_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct yaml_config,
			    config_fields),
};

static void log_cyaml(cyaml_log_t level, void *ctx, const char *fmt,
		      va_list args)
{
	if (level >= CYAML_LOG_ERROR)
		vfprintf(stderr, fmt, args);
}

int sl_parse_listen(const char *s, struct sockaddr_storage *ss)
{
	char host[128], *colon, *end;
	unsigned long port;

	if (strlen(s) >= sizeof(host))
		return -EINVAL;
	strcpy(host, s);
	colon = strrchr(host, ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (*end || !port || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		host[strlen(host) - 1] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		return inet_pton(AF_INET6, host + 1, &a->sin6_addr) == 1 ? 0 : -EINVAL;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -EINVAL;
	}
}

/* Each problem is reported; -EINVAL if there was any. */
static int sync_config(const char *path, const struct yaml_sync *y,
		       struct sl_sync_config *sc)
{
	const char *backend = y->backend ? y->backend : "udp";
	uint64_t ms = 200;
	unsigned i;
	int err = 0;

	sc->enabled = true;
	sc->node = *y->node;
	if (!sc->node || sc->node > 65535) {
		fprintf(stderr, "%s: sync.node: %u is not a node id 1..65535\n",
			path, sc->node);
		err = -EINVAL;
	}
	sc->layout = SL_LAYOUT_DELAYED_SYNC;
	if (y->layout && (sl_parse_layout(y->layout, &sc->layout) ||
			  sc->layout == SL_LAYOUT_LOCAL)) {
		fprintf(stderr, "%s: sync.layout: '%s' is not delayed-sync, split-quota or predictive\n",
			path, y->layout);
		err = -EINVAL;
	}
	if (y->interval && (sl_parse_duration_ms(y->interval, &ms) || ms < 10 ||
			    ms > 60000)) {
		fprintf(stderr, "%s: sync.interval: '%s' is not a duration from 10ms to 60s (200ms, 1s)\n",
			path, y->interval);
		err = -EINVAL;
	}
	sc->interval_ms = ms;
	if (!strcmp(backend, "udp")) {
		sc->backend = SL_SYNC_UDP;
	} else if (!strcmp(backend, "redis")) {
		sc->backend = SL_SYNC_REDIS;
	} else {
		fprintf(stderr, "%s: sync.backend: '%s' is not udp or redis\n",
			path, backend);
		err = -EINVAL;
	}
	if (sc->backend == SL_SYNC_UDP) {
		if (!y->listen || sl_parse_listen(y->listen, &sc->listen)) {
			fprintf(stderr, "%s: sync.listen: %s%s%s ADDRESS:PORT to receive peers' messages on (10.0.0.1:7400)\n",
				path, y->listen ? "'" : "", y->listen ? y->listen : "needs",
				y->listen ? "' is not" : "");
			err = -EINVAL;
		}
		for (i = 0; i < y->peers_count; i++) {
			if (sl_parse_listen(y->peers[i], &sc->peers[i])) {
				fprintf(stderr, "%s: sync.peers: '%s' is not ADDRESS:PORT\n",
					path, y->peers[i]);
				err = -EINVAL;
			}
		}
		sc->nr_peers = y->peers_count;
		if (!y->key_file) {
			fprintf(stderr, "%s: sync.key_file: needed: the fleet's shared 32-byte key (64 hex digits)\n",
				path);
			err = -EINVAL;
		}
	} else {
		snprintf(sc->url, sizeof(sc->url), "%s", y->url ? y->url : "");
		if (!y->url || strncmp(y->url, "redis://", 8)) {
			fprintf(stderr, "%s: sync.url: %s redis://HOST:PORT\n",
				path, y->url ? "not a" : "needs");
			err = -EINVAL;
		}
	}
	if (y->key_file)
		snprintf(sc->key_file, sizeof(sc->key_file), "%s", y->key_file);
	sc->nodes = y->nodes ? *y->nodes : sc->nr_peers + 1;
	if (sc->layout == SL_LAYOUT_SPLIT_QUOTA &&
	    (!sc->nodes || sc->nodes > 65535 ||
	     (sc->backend == SL_SYNC_REDIS && !y->nodes))) {
		/* with Redis there is no peer list to count */
		fprintf(stderr, "%s: sync.nodes: %s the number of nodes sharing each limit, 1..65535\n",
			path, sc->backend == SL_SYNC_REDIS && !y->nodes ?
			"split-quota over Redis needs" : "not");
		err = -EINVAL;
	}
	return err;
}

int sl_config_load(const char *path, struct sl_service_config *cfg)
{
	const cyaml_config_t cc = {
		.log_fn = log_cyaml,
		.mem_fn = cyaml_mem,
		.log_level = CYAML_LOG_ERROR,
		.flags = CYAML_CFG_NO_ALIAS,
	};
	struct yaml_config *y = NULL;
	const char *listen = "127.0.0.1:8080";
	cyaml_err_t cerr;
	unsigned i;
	int err = 0;

	memset(cfg, 0, sizeof(*cfg));
	cerr = cyaml_load_file(path, &cc, &config_schema, (cyaml_data_t **)&y,
			       NULL);
	if (cerr != CYAML_OK) {
		fprintf(stderr, "%s: %s\n", path, cyaml_strerror(cerr));
		return -EINVAL;
	}
	for (i = 0; i < y->devices_count; i++) {
		struct sl_config_device *d = &cfg->devices[cfg->nr_devices++];

		snprintf(d->name, sizeof(d->name), "%s", y->devices[i].name);
		d->mode = SL_MODE_XDP;
		if (y->devices[i].mode && sl_parse_mode(y->devices[i].mode, &d->mode)) {
			fprintf(stderr, "%s: device %s: mode '%s' is not xdp, xdp-generic or tc\n",
				path, d->name, y->devices[i].mode);
			err = -EINVAL;
		}
	}
	snprintf(cfg->rules_path, sizeof(cfg->rules_path), "%s", y->rules);
	cfg->clients = y->clients ? *y->clients : 0;
	cfg->keep_attached = y->keep_attached;
	if (y->http && y->http->listen)
		listen = y->http->listen;
	snprintf(cfg->http_listen, sizeof(cfg->http_listen), "%s", listen);
	cfg->http_enabled = strcmp(listen, "off") != 0;
	if (cfg->http_enabled && sl_parse_listen(listen, &cfg->http_addr)) {
		fprintf(stderr, "%s: http.listen: '%s' is not ADDRESS:PORT (127.0.0.1:8080, [::1]:8080) or off\n",
			path, listen);
		err = -EINVAL;
	}
	if (y->sync && sync_config(path, y->sync, &cfg->sync))
		err = -EINVAL;
	cyaml_free(&cc, &config_schema, y, 0);
	return err;
}
