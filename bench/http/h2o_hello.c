// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/http/h2o_hello.c ADDRESS PORT: libh2o-evloop with no check at all,
 * beside bench/http/mhd_hello.c, for bench/bench_http.sh to measure h2o's
 * own ceiling against nginx's `return 200`. Every request gets the headers
 * and the body of an allowed check, the same as mhd_hello's; one thread,
 * one event loop (the benchmark pins it to one CPU), HTTP/1.1 keep-alive
 * (and HTTP/2 with prior knowledge, which h2o's accept path also takes).
 * SIGTERM or SIGINT stops it (the default action: it holds nothing that
 * needs undoing).
 */
#define H2O_USE_LIBUV 0
#include <arpa/inet.h>
#include <h2o.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char body[] =
	"{ \"allowed\": true, \"rule\": \"api\", \"key\": \"client-00001\", "
	"\"limit\": 4000000000, \"window_s\": 60, \"used\": 1, "
	"\"remaining\": 3999999999, \"reset_s\": 60, \"retry_after_s\": 0, "
	"\"decision\": \"kernel\" }";

static const struct { const char *name, *value; } fixed_headers[] = {
	{ "cache-control", "no-store" },
	{ "ratelimit-policy", "\"api\";q=4000000000;w=60" },
	{ "ratelimit", "\"api\";r=3999999999;t=60" },
	{ "x-ratelimit-limit", "4000000000" },
	{ "x-ratelimit-remaining", "3999999999" },
	{ "x-ratelimit-reset", "60" },
	{ "slicelimit-decision", "kernel" },
};

static h2o_globalconf_t config;
static h2o_context_t ctx;
static h2o_accept_ctx_t accept_ctx;

static int answer(h2o_handler_t *self, h2o_req_t *req)
{
	size_t i;

	req->res.status = 200;
	req->res.reason = "OK";
	/* a length, as mhd_hello and nginx send, not chunks */
	req->res.content_length = sizeof(body) - 1;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE,
		       NULL, H2O_STRLIT("application/json"));
	for (i = 0; i < sizeof(fixed_headers) / sizeof(fixed_headers[0]); i++)
		h2o_add_header_by_str(&req->pool, &req->res.headers,
				      fixed_headers[i].name, strlen(fixed_headers[i].name),
				      1, NULL, fixed_headers[i].value,
				      strlen(fixed_headers[i].value));
	h2o_send_inline(req, body, sizeof(body) - 1);
	return 0;
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
	h2o_socket_t *sock;

	if (err)
		return;
	sock = h2o_evloop_socket_accept(listener);
	if (sock)
		h2o_accept(&accept_ctx, sock);
}

static int listen_on(const struct sockaddr_in *addr)
{
	h2o_socket_t *sock;
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (const struct sockaddr *)addr, sizeof(*addr)) ||
	    listen(fd, SOMAXCONN)) {
		close(fd);
		return -1;
	}
	sock = h2o_evloop_socket_create(ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
	h2o_socket_read_start(sock, on_accept);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	h2o_hostconf_t *host;
	h2o_handler_t *handler;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
		fprintf(stderr, "usage: %s IPV4-ADDRESS PORT\n", argv[0]);
		return 2;
	}
	addr.sin_port = htons(atoi(argv[2]));
	h2o_config_init(&config);
	host = h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	handler = h2o_create_handler(h2o_config_register_path(host, "/", 0), sizeof(*handler));
	handler->on_req = answer;
	h2o_context_init(&ctx, h2o_evloop_create(), &config);
	accept_ctx.ctx = &ctx;
	accept_ctx.hosts = config.hosts;
	if (listen_on(&addr)) {
		fprintf(stderr, "h2o_hello: cannot listen on %s:%s\n", argv[1], argv[2]);
		return 1;
	}
	while (h2o_evloop_run(ctx.loop, INT32_MAX) == 0)
		;
	return 1;
}
