// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The service config, read from the YAML tree (util/yaml_doc.c) like the rule
 * files: every problem of the file is collected with its line and field
 * ("http.listen", "devices[0].mode"); the `sync:` section is sync's own
 * (sync/config.c).
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "instance/loader.h"
#include "service/config.h"
#include "util/parse.h"
#include "util/yaml_doc.h"
#include "util/yaml_secret.h"

static const char *const config_keys[] = {
	"devices", "rules", "clients", "keep_attached", "http", "rls", "sync",
	"service", NULL,
};
static const char *const service_keys[] = { "user", NULL };
static const char *const device_keys[] = { "name", "mode", NULL };
static const char *const http_keys[] = {
	"socket", "socket_mode", "socket_group", "listen", "token_file",
	"timeout", "connections_per_ip", NULL,
};
static const char *const rls_keys[] = {
	"socket", "socket_mode", "socket_group", "listen", "token_file",
	"timeout", "connections_per_ip", NULL,
};

static void read_devices(const struct sl_yctx *c, const struct sl_ynode *list,
			 struct sl_service_config *cfg)
{
	unsigned i, j;

	if (list->type != SL_YNODE_SEQ) {
		sl_yaml_bad(c, list, "devices", "expected a list of devices ([] for none)");
		return;
	}
	if (list->nr > SL_MAX_DEVICES) {
		sl_yaml_bad(c, list, "devices", "%u devices: at most %u", list->nr,
			    SL_MAX_DEVICES);
		return;
	}
	for (i = 0; i < list->nr; i++) {
		const struct sl_ynode *d = list->kids[i], *v;
		struct sl_config_device *dev = &cfg->devices[cfg->nr_devices];
		char field[32];
		const char *text;

		snprintf(field, sizeof(field), "devices[%u]", i);
		if (!sl_yaml_check_keys(c, d, field, device_keys))
			continue;
		snprintf(field, sizeof(field), "devices[%u].name", i);
		if (!(v = sl_yaml_get(d, "name")))
			sl_yaml_bad(c, d, field, "required: the network device");
		else if (sl_yaml_text(c, v, field, sizeof(dev->name) - 1, &text))
			snprintf(dev->name, sizeof(dev->name), "%s", text);
		for (j = 0; dev->name[0] && j < cfg->nr_devices; j++)
			if (!strcmp(cfg->devices[j].name, dev->name))
				sl_yaml_bad(c, v, field, "%s is listed twice",
					    dev->name);
		dev->mode = SL_MODE_XDP;
		snprintf(field, sizeof(field), "devices[%u].mode", i);
		if ((v = sl_yaml_get(d, "mode")) &&
		    sl_yaml_text(c, v, field, 16, &text) &&
		    sl_parse_mode(text, &dev->mode))
			sl_yaml_bad(c, v, field, "'%s' is not xdp, xdp-generic or tc",
				    text);
		cfg->nr_devices++;
	}
}


/* SEC.FIELD ("http.socket") into BUF (64 bytes): BUF */
static const char *field_of(char *buf, const char *sec, const char *field)
{
	snprintf(buf, 64, "%s.%s", sec, field);
	return buf;
}

/* SEC.socket (http, rls): a path (DEFAULT when not given), or "off"; its
 * mode and group.
 */
static void read_listener_socket(const struct sl_yctx *c,
				 const struct sl_ynode *y, const char *sec,
				 const char *deflt, struct sl_http_config *hc)
{
	const struct sl_ynode *v;
	const char *text = deflt;
	unsigned long mode;
	char *end, f[64];

	if ((v = sl_yaml_get(y, "socket")) &&
	    !sl_yaml_text(c, v, field_of(f, sec, "socket"), 4095, &text))
		return;
	if (strcmp(text, "off")) {
		if (text[0] != '/' || strlen(text) >= sizeof(hc->socket))
			sl_yaml_bad(c, v, field_of(f, sec, "socket"), "'%s' is not an absolute path of at most %zu bytes (a Unix socket's), or off",
				    text, sizeof(hc->socket) - 1);
		else
			hc->socket_enabled = true;
		snprintf(hc->socket, sizeof(hc->socket), "%s", text);
	}
	hc->socket_mode = 0660;
	if ((v = sl_yaml_get(y, "socket_mode")) &&
	    sl_yaml_text(c, v, field_of(f, sec, "socket_mode"), 15, &text)) {
		errno = 0;
		mode = strtoul(text, &end, 8);
		if (!*text || *end || errno || mode > 0777)
			sl_yaml_bad(c, v, f, "'%s' is not an octal file mode (\"0660\": the owner and the group may connect)",
				    text);
		else
			hc->socket_mode = mode;
	}
	if ((v = sl_yaml_get(y, "socket_group")) &&
	    sl_yaml_text(c, v, field_of(f, sec, "socket_group"), 63, &text)) {
		struct group *g = getgrnam(text);

		if (!g)
			sl_yaml_bad(c, v, f, "no group '%s' on this host (the group of the clients' user: nginx's workers, www-data or nginx; Envoy's)",
				    text);
		else {
			hc->socket_group_set = true;
			hc->socket_gid = g->gr_gid;
		}
	}
}

/* SEC.listen (TCP, only when given) and the token it needs. */
static void read_listener_tcp(const struct sl_yctx *c, const struct sl_ynode *y,
			      const char *sec, struct sl_http_config *hc)
{
	const struct sl_ynode *v, *listen;
	const char *text;
	char f[64], tf[64];
	uint64_t n;

	hc->per_ip = 32;
	if ((v = sl_yaml_get(y, "connections_per_ip")) &&
	    sl_yaml_uint(c, v, field_of(f, sec, "connections_per_ip"), 1,
			 65535, &n))
		hc->per_ip = n;
	field_of(tf, sec, "token_file");
	if (!(listen = sl_yaml_get(y, "listen")) ||
	    !sl_yaml_text(c, listen, field_of(f, sec, "listen"),
			  sizeof(hc->listen) - 1, &text) || !strcmp(text, "off")) {
		if ((v = sl_yaml_get(y, "token_file")))
			sl_yaml_bad(c, v, tf, "only with %s.listen: the Unix socket is guarded by its mode and group",
				    sec);
		return;
	}
	snprintf(hc->listen, sizeof(hc->listen), "%s", text);
	if (sl_parse_listen(text, &hc->addr)) {
		sl_yaml_bad(c, listen, f, "'%s' is not ADDRESS:PORT (127.0.0.1:8080, [::1]:8080) or off",
			    text);
		return;
	}
	hc->tcp_enabled = true;
	if (!(v = sl_yaml_get(y, "token_file"))) {
		sl_yaml_bad(c, listen, f, "TCP needs %s: a secret file (root's, like the sync key) holding the bearer token clients send as 'Authorization: Bearer TOKEN' (or use the Unix socket, %s.socket, and no listen)",
			    tf, sec);
		return;
	}
	if (sl_yaml_text(c, v, tf, sizeof(hc->token_file) - 1, &text)) {
		snprintf(hc->token_file, sizeof(hc->token_file), "%s", text);
		sl_yaml_secret_line(c, v, tf, text, hc->token,
				    sizeof(hc->token));
	}
}

/* SEC.timeout: how long a connection may idle (10s) */
static void read_listener_timeout(const struct sl_yctx *c,
				  const struct sl_ynode *y, const char *sec,
				  struct sl_http_config *lc)
{
	const struct sl_ynode *v;
	const char *text;
	uint64_t ms = 10000;
	char f[64];

	lc->timeout_s = 10;
	if ((v = sl_yaml_get(y, "timeout")) &&
	    sl_yaml_text(c, v, field_of(f, sec, "timeout"), 31, &text)) {
		if (sl_parse_duration_ms(text, &ms) || ms < 1000 || ms > 300000)
			sl_yaml_bad(c, v, f, "'%s' is not a duration from 1s to 300s (10s)",
				    text);
		else
			lc->timeout_s = (ms + 999) / 1000;
	}
}

/* rls: Envoy's rate limit service, off unless the section is there */
static void read_rls(const struct sl_yctx *c, const struct sl_ynode *y,
		     struct sl_http_config *rc)
{
	rc->timeout_s = 10;
	if (!y)
		return;
	if (y->type == SL_YNODE_SCALAR && y->plain && !y->text[0]) {
		/* "rls:" alone: the defaults */
		rc->socket_enabled = true;
		rc->socket_mode = 0660;
		snprintf(rc->socket, sizeof(rc->socket), "%s",
			 SL_RLS_SOCKET_DEFAULT);
		return;
	}
	if (!sl_yaml_check_keys(c, y, "rls", rls_keys))
		return;
	read_listener_socket(c, y, "rls", SL_RLS_SOCKET_DEFAULT, rc);
	read_listener_tcp(c, y, "rls", rc);
	read_listener_timeout(c, y, "rls", rc);
	if (!rc->socket_enabled && !rc->tcp_enabled)
		sl_yaml_bad(c, y, "rls", "neither socket nor listen: remove the section to turn the rate limit service off");
}

static void read_http(const struct sl_yctx *c, const struct sl_ynode *y,
		      struct sl_http_config *hc)
{
	hc->timeout_s = 10;
	hc->per_ip = 32;
	hc->socket_mode = 0660;
	if (!y) {
		hc->socket_enabled = true;
		snprintf(hc->socket, sizeof(hc->socket), "%s",
			 SL_HTTP_SOCKET_DEFAULT);
		return;
	}
	if (!sl_yaml_check_keys(c, y, "http", http_keys))
		return;
	read_listener_socket(c, y, "http", SL_HTTP_SOCKET_DEFAULT, hc);
	read_listener_tcp(c, y, "http", hc);
	read_listener_timeout(c, y, "http", hc);
}

int sl_config_parse_buffer(const char *name, const char *buf, size_t len,
			   struct sl_service_config *cfg, struct sl_problems *pb)
{
	const struct sl_yctx c = { .pb = pb };
	const char *text;
	const struct sl_ynode *v;
	struct sl_ynode *root;
	uint64_t n;
	int err;

	memset(cfg, 0, sizeof(*cfg));
	err = sl_yaml_parse_document(name, buf, len,
				     "empty config: expected at least 'rules: FILE'",
				     pb, &root);
	if (err)
		return err;
	if (!sl_yaml_check_keys(&c, root, NULL, config_keys))
		goto out;
	if ((v = sl_yaml_get(root, "devices")))
		read_devices(&c, v, cfg);
	if (!(v = sl_yaml_get(root, "rules")))
		sl_yaml_bad(&c, root, "rules", "required: the rule file to apply");
	else if (sl_yaml_text(&c, v, "rules", sizeof(cfg->rules_path) - 1, &text)) {
		if (*text)
			snprintf(cfg->rules_path, sizeof(cfg->rules_path), "%s", text);
		else
			sl_yaml_bad(&c, v, "rules", "empty: the path of the rule file to apply");
	}
	/* the same bound as attach --clients */
	if ((v = sl_yaml_get(root, "clients")) &&
	    sl_yaml_uint(&c, v, "clients", 1, SL_MAX_CLIENTS, &n))
		cfg->clients = n;
	if ((v = sl_yaml_get(root, "keep_attached")))
		sl_yaml_bool(&c, v, "keep_attached", &cfg->keep_attached);
	read_http(&c, sl_yaml_get(root, "http"), &cfg->http);
	read_rls(&c, sl_yaml_get(root, "rls"), &cfg->rls);
	if (cfg->rls.socket_enabled && cfg->http.socket_enabled &&
	    !strcmp(cfg->rls.socket, cfg->http.socket))
		sl_yaml_bad(&c, sl_yaml_get(root, "rls"), "rls.socket", "'%s' is http.socket too: give each its own",
			    cfg->rls.socket);
	if ((v = sl_yaml_get(root, "sync")))
		sl_sync_config_read(&c, v, &cfg->sync);
	if ((v = sl_yaml_get(root, "service")) &&
	    sl_yaml_check_keys(&c, v, "service", service_keys) &&
	    (v = sl_yaml_get(v, "user")) &&
	    sl_yaml_text(&c, v, "service.user", sizeof(cfg->service_user) - 1,
			 &text)) {
		if (*text)
			snprintf(cfg->service_user, sizeof(cfg->service_user), "%s", text);
		else
			sl_yaml_bad(&c, v, "service.user", "empty: the user the service runs as once attached (root: keep root)");
	}
out:
	sl_yaml_free(root);
	if (pb->oom)
		return -ENOMEM;
	return pb->total ? -EINVAL : 0;
}

static int parse_config(const char *name, const char *buf, size_t len,
			void *cfg, struct sl_problems *pb)
{
	return sl_config_parse_buffer(name, buf, len, cfg, pb);
}

int sl_config_parse_file(const char *path, struct sl_service_config *cfg,
			 struct sl_problems *pb)
{
	memset(cfg, 0, sizeof(*cfg));
	return sl_yaml_parse_file(path, parse_config, cfg, pb);
}

int sl_config_load(const char *path, struct sl_service_config *cfg)
{
	struct sl_problems *pb = malloc(sizeof(*pb));

	memset(cfg, 0, sizeof(*cfg));
	if (!pb)
		return -ENOMEM;
	return sl_problems_report(sl_config_parse_file(path, cfg, pb), pb);
}
