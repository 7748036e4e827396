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

struct yaml_device {
	char *name;
	char *mode;
};

struct yaml_http {
	char *listen;
};

struct yaml_config {
	struct yaml_device *devices;
	unsigned devices_count;
	char *rules;
	unsigned *clients;
	bool keep_attached;
	struct yaml_http *http;
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
	cyaml_free(&cc, &config_schema, y, 0);
	return err;
}
