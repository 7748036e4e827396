// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <json-c/json.h>
#include <sched.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/resource.h>
#include "util/clock.h"
#include "util/tcp_listen.h"
#include "service/api_socket.h"
#include "service/bearer.h"
#include "service/check_body.h"
#include "service/healthz.h"
#include "service/lists_api.h"
#include "service/http.h"
#include "service/http_server.h"
#include "service/metrics.h"
#include "service/ratelimit_fields.h"
#include "service/result_body.h"
#include "sl_key.h"

#define SL_HTTP_MAX_BODY	4096
#define SL_HTTP_MAX_THREADS	64

/* One server per listener: a flood of TCP connections fills the TCP
 * server's table, never the socket's that nginx and the local host use.
 */
struct listener {
	struct sl_http *h;
	struct sl_http_server *server;
	bool tcp;		/* every request carries the bearer token */
};

struct sl_http {
	struct listener sock, tcp;
	char socket_path[108];
	/* the token's hash: requests are compared hash to hash, in constant
	 * time and whatever the length sent
	 */
	unsigned char token_hash[SL_BEARER_HASH_BYTES];
	struct sl_checker *checker;
	struct sl_http_stats stats;
};

/* The request's path or query held a NUL: name what held it, as a POST
 * body's NUL is named (PATH_IS_KEY: /v1/clients/KEY). NULL when none did.
 */
static const char *nul_in_request(const struct sl_http_req *r,
				  bool path_is_key)
{
	static const struct {
		const char *name, *error;
	} args[] = {
		{ "key", "'key' contains a NUL byte" },
		{ "rule", "'rule' contains a NUL byte" },
		{ "deny_status", "'deny_status' contains a NUL byte" },
	};
	const char *v;
	size_t i, len;

	if (!r->path_nul && !r->query_nul)
		return NULL;
	for (i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		v = sl_http_req_arg(r, args[i].name, &len);
		if (v && strlen(v) != len)
			return args[i].error;
	}
	return path_is_key ? args[0].error :
			     "the path or query contains a NUL byte (%00)";
}

/* Begin an answer of TYPE: the fields every answer of the API has */
static void begin_answer(struct sl_http_exchange *x, unsigned status,
			 const char *type)
{
	sl_http_reply_begin(x->out, status);
	sl_http_reply_field(x->out, "Content-Type", type);
	sl_http_reply_field(x->out, "Cache-Control", "no-store");
}

static void send_text(struct sl_http_exchange *x, unsigned status,
		      const char *type, const char *text)
{
	begin_answer(x, status, type);
	sl_http_reply_end(x->out, text, strlen(text));
}

static void send_error(struct sl_http *h, struct sl_http_exchange *x,
		       unsigned status, const char *msg)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "error", json_object_new_string(msg));
	send_text(x, status, "application/json",
		  json_object_to_json_string(o));
	json_object_put(o);
	sl_http_stats_count(&h->stats, status);
}

/* The rate-limit headers and body of a check or client lookup. */
static void send_result(struct sl_http *h, struct sl_http_exchange *x,
			const char *key, const struct sl_check_result *res,
			unsigned status)
{
	const struct sl_rule *rule = &res->rule;
	struct sl_ratelimit_numbers n;
	struct sl_result_body body;
	struct sl_http_out *r = x->out;
	int len;
	/* the longest: a key of 256 bytes and a rule name of 31, every
	 * byte escaped to six (\u00XX), and six 20-digit numbers
	 */
	char text[4096], buf[SL_RATELIMIT_FIELD_MAX + 1];

	sl_ratelimit_numbers(res, &n);
	/* "decision" local: the central store could not answer (fail open) */
	body = (struct sl_result_body){
		.allowed = res->allowed,
		.rule = rule->name,
		.key = key,
		.limit = n.limit,
		.window_s = n.window_s,
		.used = res->view.used,
		.remaining = n.remaining,
		.reset_s = n.reset_s,
		.retry_after_s = res->allowed ? 0 : n.retry_s,
		.decision = sl_check_decision_name(res->decision),
	};
	len = sl_result_body_format(&body, text, sizeof(text));
	if (len < 0) {
		send_error(h, x, 503, strerror(-len));
		return;
	}
	begin_answer(x, status, "application/json");

	/* IETF RateLimit header fields (structured fields) and the
	 * widespread X-RateLimit-* trio
	 */
	sl_http_reply_field(r, "RateLimit-Policy",
		sl_ratelimit_policy_field(buf, rule->name, &n));
	sl_http_reply_field(r, "RateLimit",
		sl_ratelimit_field(buf, rule->name, &n));
	sl_format_u64(n.limit, buf);
	sl_http_reply_field(r, "X-RateLimit-Limit", buf);
	sl_format_u64(n.remaining, buf);
	sl_http_reply_field(r, "X-RateLimit-Remaining", buf);
	sl_format_u64(n.until_s, buf);
	sl_http_reply_field(r, "X-RateLimit-Reset", buf);
	sl_http_reply_field(r, "SliceLimit-Decision", body.decision);
	if (!res->allowed && status != 200) {
		sl_format_u64(n.retry_s, buf);
		sl_http_reply_field(r, "Retry-After", buf);
	}
	sl_http_reply_end(r, text, (size_t)len);
	sl_http_stats_count(&h->stats, status);
}

static const char *arg(struct sl_http_exchange *x, const char *name)
{
	return sl_http_req_arg(x->req, name, NULL);
}

#define COST_RANGE SL_CHECK_COST_RANGE

/* The query's cost=N: digits only, 1..UINT32_MAX (the rule's limit is
 * checked with the rule). 0 with *cost set, or -EINVAL.
 */
static int query_cost(const char *text, __u32 *cost)
{
	unsigned long long n = 0;
	const char *p;

	if (!*text)
		return -EINVAL;
	for (p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		n = n * 10 + (unsigned)(*p - '0');
		if (n > UINT32_MAX)
			return -EINVAL;
	}
	if (!n)
		return -EINVAL;
	*cost = n;
	return 0;
}

/* COST: the units to charge (POST and GET /v1/check; the query's cost=
 * when the body has none), or 0 to only read (GET /v1/clients/KEY).
 */
static void handle_check(struct sl_http *h, struct sl_http_exchange *x,
			 const char *rule, const char *key, __u32 cost)
{
	const char *deny = arg(x, "deny_status");
	unsigned deny_status = 429;
	struct sl_check_result res;
	bool count = cost > 0;
	uint64_t t0, t1;
	char msg[160];
	int err;

	if (deny) {
		if (strcmp(deny, "401") && strcmp(deny, "403") && strcmp(deny, "429"))
			return send_error(h, x, 400, "deny_status must be 401, 403 or 429");
		deny_status = atoi(deny);
	}
	if (!rule || !*rule)
		return send_error(h, x, 400, "missing 'rule'");
	if (!key || !*key)
		return send_error(h, x, 400, "missing 'key'");
	if (strlen(key) > 256 || strlen(rule) > 31)
		return send_error(h, x, 400, "'key' longer than 256 bytes or 'rule' longer than 31");
	t0 = sl_now_mono_ns();
	err = sl_check(h->checker, rule, key, cost, &res);
	t1 = sl_now_mono_ns();
	if (count && !err) {
		sl_http_stats_latency(&h->stats, t1 - t0);
		sl_http_stats_check(&h->stats, res.rule.id, res.allowed);
		sl_http_stats_decision(&h->stats, res.decision);
	}
	if (err == -ENOENT)
		return send_error(h, x, 404, "no rule of that name (slicelimit rules list)");
	if (err == -ERANGE) {
		snprintf(msg, sizeof(msg), "'cost' %u is over the rule's limit of %llu: it could never fit",
			 cost, (unsigned long long)sl_rule_quota(&res.rule));
		return send_error(h, x, 400, msg);
	}
	if (err == -EOPNOTSUPP)
		return send_error(h, x, 400, "'cost' must be 1 under a sliding-log rule, which counts requests");
	if (err)
		return send_error(h, x, 503, strerror(-err));
	send_result(h, x, key, &res,
			   res.allowed || !count ? 200 : deny_status);
}

/* GET /v1/check?rule=R&key=K[&cost=N] */
static void handle_get_check(struct sl_http *h, struct sl_http_exchange *x)
{
	const char *text = arg(x, "cost");
	__u32 cost = 1;

	if (text && query_cost(text, &cost))
		return send_error(h, x, 400, COST_RANGE);
	handle_check(h, x, arg(x, "rule"), arg(x, "key"), cost);
}

/* POST bodies: {"rule": "...", "key": "...", "cost": N}; query parameters
 * for what the body does not say.
 */
static void handle_post_check(struct sl_http *h, struct sl_http_exchange *x)
{
	const char *rule = arg(x, "rule"), *key = arg(x, "key");
	const char *cost_text = arg(x, "cost");
	struct sl_check_body b = { 0 };
	char why[160];
	__u32 cost = 1;

	if (cost_text && query_cost(cost_text, &cost))
		return send_error(h, x, 400, COST_RANGE);
	if (x->body_len &&
	    sl_check_body_parse(x->body, x->body_len, &b, why, sizeof(why)))
		return send_error(h, x, 400, why);
	handle_check(h, x, b.rule ? b.rule : rule, b.key ? b.key : key,
		     b.has_cost ? b.cost : cost);
	sl_check_body_free(&b);
}

/* The block and allow lists (service/lists_api.c), to a caller admit()
 * let in: the socket's, or TCP's with the token.
 */
static void handle_lists(struct sl_http *h, struct sl_http_exchange *x)
{
	json_object *o = NULL;
	unsigned status;

	status = sl_lists_api(h->checker->maps, x->req->method,
			      x->req->path + 9, x->body ? x->body : "",
			      x->body_len, &o);
	send_text(x, status, "application/json",
		  json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						 JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	sl_http_stats_count(&h->stats, status);
}

/* 200 {"status": "ok"}, or 503 {"status": "unavailable", "reason"}; the
 * reason only to who may use the API (DETAIL): a liveness probe over TCP
 * without the token learns up or down and nothing else.
 */
static void handle_healthz(struct sl_http *h, struct sl_http_exchange *x,
			   bool detail)
{
	json_object *o = json_object_new_object();
	char reason[128];
	bool ok = sl_healthz(h->checker->maps, reason, sizeof(reason));
	unsigned status = ok ? 200 : 503;

	json_object_object_add(o, "status",
			       json_object_new_string(ok ? "ok" : "unavailable"));
	if (!ok && detail)
		json_object_object_add(o, "reason", json_object_new_string(reason));
	send_text(x, status, "application/json", json_object_to_json_string(o));
	json_object_put(o);
	sl_http_stats_count(&h->stats, status);
}

/* Does the request carry "Authorization: Bearer TOKEN" with the token? */
static bool token_ok(const struct sl_http *h, const struct sl_http_req *r)
{
	return sl_bearer_ok(r->authorization, r->authorization_len,
			    h->token_hash);
}

/* 401 with the challenge that names the scheme (RFC 6750). */
static void send_unauthorized(struct sl_http *h, struct sl_http_exchange *x)
{
	static const char body[] = "{\"error\":\"this listener needs 'Authorization: Bearer TOKEN' (http.token_file)\"}";

	begin_answer(x, 401, "application/json");
	sl_http_reply_field(x->out, "WWW-Authenticate", "Bearer");
	sl_http_reply_end(x->out, body, sizeof(body) - 1);
	sl_http_stats_count(&h->stats, 401);
}

/* The request's head, before any body: who asks, and whether the body
 * is one this API would read (a declared body over the cap is answered
 * before a byte of it is read). True when it answered.
 */
static bool admit(void *ctx, struct sl_http_exchange *x)
{
	struct listener *l = ctx;
	struct sl_http *h = l->h;
	const struct sl_http_req *r = x->req;
	bool get = !strcmp(r->method, "GET") || !strcmp(r->method, "HEAD");

	if (l->tcp && !token_ok(h, r)) {
		/* up or down, no detail: what a liveness probe needs */
		if (get && !strcmp(r->path, "/healthz"))
			handle_healthz(h, x, false);
		else
			send_unauthorized(h, x);
		return true;
	}
	if ((!strcmp(r->method, "POST") || !strcmp(r->method, "PUT")) &&
	    r->content_length > SL_HTTP_MAX_BODY) {
		send_error(h, x, 413, "body larger than 4096 bytes");
		return true;
	}
	return false;
}

/* GET /metrics: the text exposition */
static void handle_metrics(struct sl_http *h, struct sl_http_exchange *x)
{
	char *text;

	if (h->checker->central) {
		struct sl_central_stats cs;

		sl_central_stats(h->checker->central, &cs);
		sl_http_stats_central(&h->stats, &cs);
	}
	text = sl_metrics_render(h->checker->maps, &h->stats);
	if (!text)
		return send_error(h, x, 503, "cannot read the maps");
	send_text(x, 200, "text/plain; version=0.0.4", text);
	free(text);
	sl_http_stats_count(&h->stats, 200);
}

static void handle(void *ctx, struct sl_http_exchange *x)
{
	struct listener *l = ctx;
	struct sl_http *h = l->h;
	const char *url = x->req->path, *method = x->req->method;
	bool get = !strcmp(method, "GET");
	bool read = get || !strcmp(method, "HEAD");

	if (!strncmp(url, "/v1/", 4)) {
		const char *nul = nul_in_request(x->req,
			!strncmp(url, "/v1/clients/", 12));

		if (nul)
			return send_error(h, x, 400, nul);
	}
	if (!strcmp(url, "/v1/check")) {
		if (!strcmp(method, "POST"))
			return handle_post_check(h, x);
		if (get)
			return handle_get_check(h, x);
	} else if (!strncmp(url, "/v1/clients/", 12)) {
		if (read)
			return handle_check(h, x, arg(x, "rule"), url + 12, 0);
	} else if (!strcmp(url, "/v1/lists") || !strncmp(url, "/v1/lists/", 10)) {
		return handle_lists(h, x);
	} else if (!strcmp(url, "/healthz")) {
		if (read)
			return handle_healthz(h, x, true);
	} else if (!strcmp(url, "/metrics")) {
		if (read)
			return handle_metrics(h, x);
	} else {
		return send_error(h, x, 404, "no such endpoint: /v1/check, /v1/clients/KEY, /v1/lists, /healthz, /metrics");
	}
	send_error(h, x, 405, "method not allowed");
}

/* What the server answers by itself: a malformed head, a body it will
 * not read
 */
static void refuse(void *ctx, struct sl_http_exchange *x, unsigned status,
		   const char *why)
{
	struct listener *l = ctx;

	send_error(l->h, x, status, why);
}

static const struct sl_http_server_ops api_ops = {
	.admit = admit,
	.handle = handle,
	.refuse = refuse,
};

/* One event loop per CPU the service may run on, as nginx's workers:
 * pinned to one CPU, one thread and no switches between threads.
 */
static unsigned worker_threads(const struct sl_checker *checker)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 2;
	n = CPU_COUNT(&set);
	/* a check decided in the central store waits on the network: never
	 * fewer threads than the two the API always had
	 */
	if (checker->central && n < 2)
		return 2;
	return n < 1 ? 1 : n > SL_HTTP_MAX_THREADS ? SL_HTTP_MAX_THREADS : n;
}

/* File descriptors the service keeps besides the API's connections: the
 * maps and programs, the pins, the sync socket and the Redis connection,
 * the log; and per listener thread its epoll descriptor and its wake-up
 * pipe. The connection caps are what RLIMIT_NOFILE leaves after these, so
 * a flood of connections runs out of the cap, never of descriptors the
 * service needs.
 */
#define SL_HTTP_RESERVED_FDS	128
#define SL_HTTP_MAX_CONNECTIONS	1024

static unsigned connection_cap(unsigned threads, unsigned listeners)
{
	struct rlimit rl;
	rlim_t spare, reserved = SL_HTTP_RESERVED_FDS + 2 * threads * listeners;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return SL_HTTP_MAX_CONNECTIONS;
	spare = rl.rlim_cur > reserved ? rl.rlim_cur - reserved : 0;
	spare /= listeners;
	/* a handful, even under a small limit: the API stays usable */
	if (spare < 8)
		spare = 8;
	return spare > SL_HTTP_MAX_CONNECTIONS ? SL_HTTP_MAX_CONNECTIONS : spare;
}

/* Serve FD (a listening socket: the Unix socket's, or -1 to open TCP's
 * on ADDR) with a server of its own
 */
static int start_listener(struct listener *l, struct sl_http *h, int fd,
			  const struct sockaddr_storage *addr,
			  const struct sl_http_config *hc, unsigned threads,
			  unsigned cap)
{
	struct sl_http_server_opts o = {
		.ops = &api_ops,
		.ctx = l,
		.threads = threads,
		.max_connections = cap,
		.timeout_s = hc->timeout_s,
		.max_body = SL_HTTP_MAX_BODY,
	};

	l->h = h;
	l->tcp = fd < 0;
	if (l->tcp) {
		fd = sl_tcp_listen(addr);
		if (fd < 0)
			return fd == -EADDRNOTAVAIL ? -EADDRINUSE : fd;
		/* TCP only: a Unix socket's peers have no address to
		 * count by (who may connect is the file's mode)
		 */
		o.per_ip = hc->per_ip;
	}
	return sl_http_server_start(&o, fd, &l->server);
}

int sl_http_start(const struct sl_http_config *hc, struct sl_checker *checker,
		  struct sl_http **out, bool *socket_failed)
{
	struct sl_http *h = calloc(1, sizeof(*h));
	unsigned threads = worker_threads(checker);
	unsigned listeners = hc->socket_enabled + hc->tcp_enabled, cap;
	int fd, err = 0;

	*socket_failed = false;
	if (!h)
		return -ENOMEM;
	h->checker = checker;
	cap = connection_cap(threads, listeners ? listeners : 1);
	if (hc->socket_enabled) {
		fd = sl_api_socket_listen(hc->socket, hc->socket_mode,
					  hc->socket_group_set, hc->socket_gid);
		if (fd < 0) {
			err = fd;
			*socket_failed = true;
			goto fail;
		}
		/* from here the file is this instance's to remove */
		snprintf(h->socket_path, sizeof(h->socket_path), "%s",
			 hc->socket);
		/* the server owns the descriptor from here */
		err = start_listener(&h->sock, h, fd, NULL, hc, threads, cap);
		if (err) {
			*socket_failed = true;
			goto fail;
		}
	}
	if (hc->tcp_enabled) {
		sl_bearer_hash(hc->token, h->token_hash);
		err = start_listener(&h->tcp, h, -1, &hc->addr, hc, threads,
				     cap);
		if (err)
			goto fail;
	}
	*out = h;
	return 0;
fail:
	sl_http_stop(h);
	return err;
}

struct sl_http_stats *sl_http_stats_of(struct sl_http *h)
{
	return &h->stats;
}

void sl_http_stop(struct sl_http *h)
{
	if (!h)
		return;
	sl_http_server_stop(h->tcp.server);
	sl_http_server_stop(h->sock.server);
	if (h->socket_path[0])
		sl_api_socket_remove(h->socket_path);
	sodium_memzero(h->token_hash, sizeof(h->token_hash));
	free(h);
}
