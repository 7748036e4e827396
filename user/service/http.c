// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <json-c/json.h>
#include <microhttpd.h>
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
#include "service/api_socket.h"
#include "service/bearer.h"
#include "service/healthz.h"
#include "service/lists_api.h"
#include "service/http.h"
#include "service/metrics.h"
#include "service/ratelimit_fields.h"
#include "service/result_body.h"
#include "sl_key.h"

#define SL_HTTP_MAX_BODY	4096
#define SL_HTTP_MAX_THREADS	64

/* One daemon per listener: a flood of TCP connections fills the TCP
 * daemon's table, never the socket's that nginx and the local host use.
 */
struct listener {
	struct sl_http *h;
	struct MHD_Daemon *daemon;
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

/* Per-connection state: the POST body as it arrives. */
struct request {
	char body[SL_HTTP_MAX_BODY + 1];
	size_t len;
};

/* The state of every request but a POST: nothing to allocate for it. */
static struct request no_body;

/* Set on a connection whose path or query decoded a NUL byte (%00). The
 * ':' keeps any header of the request from having this name.
 */
#define SL_HTTP_NUL_MARK	"slicelimit:nul"

/* URL-decode as libmicrohttpd does, and mark the connection when a %00
 * was decoded: the string would end there, and "a%00b" would be taken
 * for the key "a".
 */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
	size_t len = MHD_http_unescape(s);

	(void)cls;
	if (strlen(s) != len)
		MHD_set_connection_value(c, MHD_HEADER_KIND, SL_HTTP_NUL_MARK,
					 "1");
	return len;
}

/* The request's path or query held a NUL: name what held it, as a POST
 * body's NUL is named (PATH_IS_KEY: /v1/clients/KEY). NULL when none did.
 */
static const char *nul_in_request(struct MHD_Connection *c, bool path_is_key)
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

	if (!MHD_lookup_connection_value(c, MHD_HEADER_KIND, SL_HTTP_NUL_MARK))
		return NULL;
	for (i = 0; i < sizeof(args) / sizeof(args[0]); i++)
		if (MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND,
						  args[i].name,
						  strlen(args[i].name), &v,
						  &len) == MHD_YES &&
		    v && strlen(v) != len)
			return args[i].error;
	return path_is_key ? args[0].error :
			     "the path or query contains a NUL byte (%00)";
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status,
				 const char *type, const char *text,
				 struct MHD_Response **keep)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(text), (void *)text,
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (keep) {
		*keep = r;	/* the caller adds headers and queues it */
		return MHD_YES;
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_error(struct sl_http *h, struct MHD_Connection *c,
				  unsigned status, const char *msg)
{
	json_object *o = json_object_new_object();
	enum MHD_Result ret;

	json_object_object_add(o, "error", json_object_new_string(msg));
	ret = send_text(c, status, "application/json",
			json_object_to_json_string(o), NULL);
	json_object_put(o);
	sl_http_stats_count(&h->stats, status);
	return ret;
}

/* The rate-limit headers and body of a check or client lookup. */
static enum MHD_Result send_result(struct sl_http *h, struct MHD_Connection *c,
				   const char *key,
				   const struct sl_check_result *res,
				   unsigned status)
{
	const struct sl_rule *rule = &res->rule;
	struct sl_ratelimit_numbers n;
	struct sl_result_body body;
	struct MHD_Response *r = NULL;
	enum MHD_Result ret;
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
	if (sl_result_body_format(&body, text, sizeof(text)) < 0 ||
	    send_text(c, status, "application/json", text, &r) != MHD_YES)
		return MHD_NO;

	/* IETF RateLimit header fields (structured fields) and the
	 * widespread X-RateLimit-* trio
	 */
	MHD_add_response_header(r, "RateLimit-Policy",
		sl_ratelimit_policy_field(buf, rule->name, &n));
	MHD_add_response_header(r, "RateLimit",
		sl_ratelimit_field(buf, rule->name, &n));
	sl_format_u64(n.limit, buf);
	MHD_add_response_header(r, "X-RateLimit-Limit", buf);
	sl_format_u64(n.remaining, buf);
	MHD_add_response_header(r, "X-RateLimit-Remaining", buf);
	sl_format_u64(n.until_s, buf);
	MHD_add_response_header(r, "X-RateLimit-Reset", buf);
	MHD_add_response_header(r, "SliceLimit-Decision", body.decision);
	if (!res->allowed && status != 200) {
		sl_format_u64(n.retry_s, buf);
		MHD_add_response_header(r, "Retry-After", buf);
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	sl_http_stats_count(&h->stats, status);
	return ret;
}

static const char *arg(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

#define COST_RANGE "'cost' must be a whole number of units from 1 to the rule's limit (GET /v1/clients/KEY reads without charging)"

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
static enum MHD_Result handle_check(struct sl_http *h, struct MHD_Connection *c,
				    const char *rule, const char *key,
				    __u32 cost)
{
	const char *deny = arg(c, "deny_status");
	unsigned deny_status = 429;
	struct sl_check_result res;
	bool count = cost > 0;
	uint64_t t0, t1;
	char msg[160];
	int err;

	if (deny) {
		if (strcmp(deny, "401") && strcmp(deny, "403") && strcmp(deny, "429"))
			return send_error(h, c, 400, "deny_status must be 401, 403 or 429");
		deny_status = atoi(deny);
	}
	if (!rule || !*rule)
		return send_error(h, c, 400, "missing 'rule'");
	if (!key || !*key)
		return send_error(h, c, 400, "missing 'key'");
	if (strlen(key) > 256 || strlen(rule) > 31)
		return send_error(h, c, 400, "'key' longer than 256 bytes or 'rule' longer than 31");
	t0 = sl_now_mono_ns();
	err = sl_check(h->checker, rule, key, cost, &res);
	t1 = sl_now_mono_ns();
	if (count && !err) {
		sl_http_stats_latency(&h->stats, t1 - t0);
		sl_http_stats_check(&h->stats, res.rule.id, res.allowed);
		sl_http_stats_decision(&h->stats, res.decision);
	}
	if (err == -ENOENT)
		return send_error(h, c, 404, "no rule of that name (slicelimit rules list)");
	if (err == -ERANGE) {
		snprintf(msg, sizeof(msg), "'cost' %u is over the rule's limit of %llu: it could never fit",
			 cost, (unsigned long long)sl_rule_quota(&res.rule));
		return send_error(h, c, 400, msg);
	}
	if (err == -EOPNOTSUPP)
		return send_error(h, c, 400, "'cost' must be 1 under a sliding-log rule, which counts requests");
	if (err)
		return send_error(h, c, 503, strerror(-err));
	return send_result(h, c, key, &res,
			   res.allowed || !count ? 200 : deny_status);
}

/* GET /v1/check?rule=R&key=K[&cost=N] */
static enum MHD_Result handle_get_check(struct sl_http *h,
					struct MHD_Connection *c)
{
	const char *text = arg(c, "cost");
	__u32 cost = 1;

	if (text && query_cost(text, &cost))
		return send_error(h, c, 400, COST_RANGE);
	return handle_check(h, c, arg(c, "rule"), arg(c, "key"), cost);
}

/* POST bodies: {"rule": "...", "key": "...", "cost": N}; query parameters
 * for what the body does not say.
 */
static enum MHD_Result handle_post_check(struct sl_http *h,
					 struct MHD_Connection *c,
					 struct request *req)
{
	const char *rule = arg(c, "rule"), *key = arg(c, "key");
	const char *cost_text = arg(c, "cost");
	json_object *o = NULL, *v;
	enum MHD_Result ret;
	__u32 cost = 1;

	if (cost_text && query_cost(cost_text, &cost))
		return send_error(h, c, 400, COST_RANGE);

	if (req->len) {
		struct json_tokener *tok = json_tokener_new();
		size_t end;

		req->body[req->len] = '\0';
		if (!tok)
			return send_error(h, c, 503, "out of memory");
		o = json_tokener_parse_ex(tok, req->body, req->len);
		/* one JSON object and nothing after it but white space */
		end = tok->char_offset;
		json_tokener_free(tok);
		while (end < req->len && (req->body[end] == ' ' ||
		       req->body[end] == '\t' || req->body[end] == '\r' ||
		       req->body[end] == '\n'))
			end++;
		if (!o || !json_object_is_type(o, json_type_object) ||
		    end != req->len) {
			json_object_put(o);
			return send_error(h, c, 400, "body is not one JSON object");
		}
		/* a field the API does not know is refused, not ignored:
		 * the client meant something this server does not do
		 */
		json_object_object_foreach(o, name, val) {
			char msg[160];

			(void)val;
			if (!strcmp(name, "rule") || !strcmp(name, "key") ||
			    !strcmp(name, "cost"))
				continue;
			snprintf(msg, sizeof(msg), "unknown field '%.64s': the body has 'rule', 'key' and 'cost' only",
				 name);
			json_object_put(o);
			return send_error(h, c, 400, msg);
		}
		if (json_object_object_get_ex(o, "rule", &v)) {
			if (!json_object_is_type(v, json_type_string)) {
				json_object_put(o);
				return send_error(h, c, 400, "'rule' must be a string (a rule's name)");
			}
			rule = json_object_get_string(v);
			if (strlen(rule) != (size_t)json_object_get_string_len(v)) {
				json_object_put(o);
				return send_error(h, c, 400, "'rule' contains a NUL byte");
			}
		}
		if (json_object_object_get_ex(o, "key", &v)) {
			if (!json_object_is_type(v, json_type_string)) {
				json_object_put(o);
				return send_error(h, c, 400, "'key' must be a string (an address, an API key, a user name)");
			}
			key = json_object_get_string(v);
			if (strlen(key) != (size_t)json_object_get_string_len(v)) {
				json_object_put(o);
				return send_error(h, c, 400, "'key' contains a NUL byte");
			}
		}
		if (json_object_object_get_ex(o, "cost", &v)) {
			int64_t n = json_object_get_int64(v);

			/* an integer, not "4" nor 4.0: json-c saturates at
			 * INT64_MAX, which the bound refuses too
			 */
			if (!json_object_is_type(v, json_type_int) || n < 1 ||
			    n > UINT32_MAX) {
				json_object_put(o);
				return send_error(h, c, 400, COST_RANGE);
			}
			cost = n;
		}
	}
	ret = handle_check(h, c, rule, key, cost);
	json_object_put(o);
	return ret;
}

/* The block and allow lists (service/lists_api.c), to a caller admit()
 * let in: the socket's, or TCP's with the token.
 */
static enum MHD_Result handle_lists(struct sl_http *h, struct MHD_Connection *c,
				    const char *method, const char *path,
				    struct request *req)
{
	json_object *o = NULL;
	const char *body = "";
	enum MHD_Result ret;
	unsigned status;


	/* no_body is every body-less request's, shared: never written */
	if (req != &no_body) {
		req->body[req->len] = '\0';
		body = req->body;
	}
	status = sl_lists_api(h->checker->maps, method, path, body,
			      req == &no_body ? 0 : req->len, &o);
	ret = send_text(c, status, "application/json",
			json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE),
			NULL);
	json_object_put(o);
	sl_http_stats_count(&h->stats, status);
	return ret;
}

/* 200 {"status": "ok"}, or 503 {"status": "unavailable", "reason"}; the
 * reason only to who may use the API (DETAIL): a liveness probe over TCP
 * without the token learns up or down and nothing else.
 */
static enum MHD_Result handle_healthz(struct sl_http *h, struct MHD_Connection *c,
				      bool detail)
{
	json_object *o = json_object_new_object();
	enum MHD_Result ret;
	char reason[128];
	bool ok = sl_healthz(h->checker->maps, reason, sizeof(reason));
	unsigned status = ok ? 200 : 503;

	json_object_object_add(o, "status",
			       json_object_new_string(ok ? "ok" : "unavailable"));
	if (!ok && detail)
		json_object_object_add(o, "reason", json_object_new_string(reason));
	ret = send_text(c, status, "application/json",
			json_object_to_json_string(o), NULL);
	json_object_put(o);
	sl_http_stats_count(&h->stats, status);
	return ret;
}

/* Does the request carry "Authorization: Bearer TOKEN" with the token? */
static bool token_ok(const struct sl_http *h, struct MHD_Connection *c)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);

	return sl_bearer_ok(v, v ? strlen(v) : 0, h->token_hash);
}

/* 401 with the challenge that names the scheme (RFC 6750). */
static enum MHD_Result send_unauthorized(struct sl_http *h,
					 struct MHD_Connection *c)
{
	static const char body[] = "{\"error\":\"this listener needs 'Authorization: Bearer TOKEN' (http.token_file)\"}";
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (send_text(c, 401, "application/json", body, &r) != MHD_YES)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	ret = MHD_queue_response(c, 401, r);
	MHD_destroy_response(r);
	sl_http_stats_count(&h->stats, 401);
	return ret;
}

/* A declared body over the cap: answered before a byte of it is read
 * (libmicrohttpd then reads no more and closes the connection).
 */
static bool declared_too_big(struct MHD_Connection *c)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_CONTENT_LENGTH);
	char *end;
	unsigned long long n;

	if (!v)
		return false;
	errno = 0;
	n = strtoull(v, &end, 10);
	return errno || end == v || n > SL_HTTP_MAX_BODY;
}

/* The request's headers, before any body: who asks, and whether the
 * body is one this API would read. MHD_YES with *answered set when the
 * answer is already queued.
 */
static enum MHD_Result admit(struct listener *l, struct MHD_Connection *c,
			     const char *url, const char *method,
			     bool *answered)
{
	struct sl_http *h = l->h;
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	*answered = true;
	if (l->tcp && !token_ok(h, c)) {
		/* up or down, no detail: what a liveness probe needs */
		if (get && !strcmp(url, "/healthz"))
			return handle_healthz(h, c, false);
		return send_unauthorized(h, c);
	}
	if ((!strcmp(method, "POST") || !strcmp(method, "PUT")) &&
	    declared_too_big(c))
		return send_error(h, c, 413, "body larger than 4096 bytes");
	*answered = false;
	return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct listener *l = cls;
	struct sl_http *h = l->h;
	struct request *req = *con_cls;
	bool get = !strcmp(method, "GET");
	bool post = !strcmp(method, "POST");
	bool put = !strcmp(method, "PUT");

	if (!req) {	/* headers only so far: only a POST has a body */
		bool answered;
		enum MHD_Result ret = admit(l, c, url, method, &answered);

		if (answered) {
			*con_cls = &no_body;
			return ret;
		}
		if (!post && !put) {
			*con_cls = &no_body;
			return MHD_YES;
		}
		req = malloc(sizeof(*req));
		if (!req)
			return MHD_NO;
		req->len = 0;
		*con_cls = req;
		return MHD_YES;
	}
	if (*upload_size) {
		/* only a POST or a PUT reads its body; the others drop
		 * theirs
		 */
		if (req == &no_body) {
			*upload_size = 0;
			return MHD_YES;
		}
		/* a body sent without its length (chunked) and past the
		 * cap: the connection is closed, nothing more is read
		 */
		if (req->len + *upload_size > SL_HTTP_MAX_BODY)
			return MHD_NO;
		memcpy(req->body + req->len, upload, *upload_size);
		req->len += *upload_size;
		*upload_size = 0;
		return MHD_YES;
	}

	if (!strncmp(url, "/v1/", 4)) {
		const char *nul = nul_in_request(c,
			!strncmp(url, "/v1/clients/", 12));

		if (nul)
			return send_error(h, c, 400, nul);
	}
	if (!strcmp(url, "/v1/check")) {
		if (post)
			return handle_post_check(h, c, req);
		if (get)
			return handle_get_check(h, c);
	} else if (!strncmp(url, "/v1/clients/", 12)) {
		if (get || !strcmp(method, "HEAD"))
			return handle_check(h, c, arg(c, "rule"), url + 12, 0);
	} else if (!strcmp(url, "/v1/lists") || !strncmp(url, "/v1/lists/", 10)) {
		return handle_lists(h, c, method, url + 9, req);
	} else if (!strcmp(url, "/healthz")) {
		if (get || !strcmp(method, "HEAD"))
			return handle_healthz(h, c, true);
	} else if (!strcmp(url, "/metrics")) {
		if (get || !strcmp(method, "HEAD")) {
			char *text;

			if (h->checker->central) {
				struct sl_central_stats cs;

				sl_central_stats(h->checker->central, &cs);
				sl_http_stats_central(&h->stats, &cs);
			}
			text = sl_metrics_render(h->checker->maps, &h->stats);
			enum MHD_Result ret;

			if (!text)
				return send_error(h, c, 503, "cannot read the maps");
			ret = send_text(c, 200, "text/plain; version=0.0.4", text, NULL);
			free(text);
			sl_http_stats_count(&h->stats, 200);
			return ret;
		}
	} else {
		return send_error(h, c, 404, "no such endpoint: /v1/check, /v1/clients/KEY, /v1/lists, /healthz, /metrics");
	}
	return send_error(h, c, 405, "method not allowed");
}

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	if (*con_cls != &no_body)
		free(*con_cls);
	*con_cls = NULL;
}

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

static int start_listener(struct listener *l, struct sl_http *h, int fd,
			  const struct sockaddr_storage *addr,
			  const struct sl_http_config *hc, unsigned threads,
			  unsigned cap)
{
	/* turbo: read and write before asking epoll whether they would block */
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO |
			 MHD_USE_ERROR_LOG;
	struct MHD_OptionItem opts[4];
	unsigned n = 0;

	/* a pool of one is no pool: the option is left out (MHD warns) */
	if (threads > 1)
		opts[n++] = (struct MHD_OptionItem){
			MHD_OPTION_THREAD_POOL_SIZE, threads, NULL };
	if (fd < 0) {
		opts[n++] = (struct MHD_OptionItem){
			MHD_OPTION_SOCK_ADDR, 0, (void *)addr };
		/* TCP only: a Unix socket's peers have no address to
		 * count by (who may connect is the file's mode)
		 */
		opts[n++] = (struct MHD_OptionItem){
			MHD_OPTION_PER_IP_CONNECTION_LIMIT, hc->per_ip, NULL };
	} else {
		opts[n++] = (struct MHD_OptionItem){
			MHD_OPTION_LISTEN_SOCKET, fd, NULL };
	}
	opts[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	l->h = h;
	l->tcp = fd < 0;
	if (l->tcp && addr->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	l->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, l,
		MHD_OPTION_ARRAY, opts,
		MHD_OPTION_CONNECTION_TIMEOUT, hc->timeout_s,
		MHD_OPTION_CONNECTION_LIMIT, cap,
		MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL,
		MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
		MHD_OPTION_END);
	return l->daemon ? 0 : -EADDRINUSE;
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
		err = start_listener(&h->sock, h, fd, NULL, hc, threads, cap);
		if (err) {
			close(fd);
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
	if (h->tcp.daemon)
		MHD_stop_daemon(h->tcp.daemon);
	if (h->sock.daemon) {
		/* the daemon closes the descriptor it was given */
		MHD_stop_daemon(h->sock.daemon);
	}
	if (h->socket_path[0])
		sl_api_socket_remove(h->socket_path);
	sodium_memzero(h->token_hash, sizeof(h->token_hash));
	free(h);
}
