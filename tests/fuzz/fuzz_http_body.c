// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_http_body: arbitrary bytes as the body of POST /v1/check, sent to the
 * real HTTP API (sl_http_start: service/http_server.c, user/service/http.c, the checker and
 * the kernel's sl_check program on a private instance) on a loopback port,
 * over one keep-alive connection.
 *
 * The expected answer is worked out here from the API's contract (README,
 * "The HTTP API"), not from service/http.c:
 *   - a body over 4096 bytes: 413;
 *   - not one JSON object with nothing but " \t\r\n" after it: 400;
 *   - a member other than "rule", "key" and "cost": 400;
 *   - a "cost" that is not a JSON integer from 1 to 2^32 - 1: 400;
 *   - "rule"/"key" string members; missing, empty or not a string: 400; a key or a
 *     rule with a NUL byte: 400; a key over 256 bytes or a rule over 31:
 *     400;
 *   - a rule that is not one of the applied rules: 404;
 *   - a cost over the rule's limit (it could never fit): 400;
 *   - otherwise 200 or 429, with a JSON body whose rule and key are the
 *     ones sent and whose "allowed" agrees with the status.
 * Every error body is a JSON object with a string "error".
 */
#include "fuzz_common.h"
#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "service/check.h"
#include "service/http.h"
#include "instance/instance.h"
#include "rules/rules.h"
#include "slicelimit.skel.h"

#define MAX_BODY	4096

static const char rules_yaml[] =
	"rules:\n"
	"  - {name: api, source: \"100::/64\", limit: 3, window: 1s}\n"
	"  - {name: open, source: \"100::/64\", limit: 4294967295, window: 1s}\n"
	"  - {name: tb.x_y-z, source: \"100::/64\", limit: 5, algorithm: token-bucket, window: 1s}\n"
	"  - {name: ips, source: 198.51.100.0/24, limit: 2, window: 1s, exempt: [198.51.100.128/25]}\n";
static const char *const rule_names[] = { "api", "open", "tb.x_y-z", "ips" };
static const uint64_t rule_limits[] = { 3, 4294967295u, 5, 2 };

static struct sl_instance in;
static struct sl_checker checker;
static struct sl_http *http;
static struct sockaddr_un server;	/* the API's socket, in a temp dir */
static int conn = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sl_instance_opts o = { .clients = 4096 };
	static char dir[] = "/tmp/sl-fuzz-http.XXXXXX";
	struct sl_http_config hc = {
		.socket_enabled = true, .socket_mode = 0600, .timeout_s = 10,
	};
	bool on_socket;

	fuzz_report_open();
	fuzz_open_instance(&in, &o);
	fuzz_apply_rules(&in, "fuzz_http.yaml", rules_yaml);
	if (sl_checker_init(&checker, bpf_program__fd(in.skel->progs.sl_check),
			    &in.maps))
		die("sl_checker_init failed");
	if (!mkdtemp(dir))
		die("mkdtemp: %s", strerror(errno));
	snprintf(hc.socket, sizeof(hc.socket), "%s/api.sock", dir);
	server.sun_family = AF_UNIX;
	snprintf(server.sun_path, sizeof(server.sun_path), "%s", hc.socket);
	if (sl_http_start(&hc, &checker, &http, &on_socket))
		die("sl_http_start on %s failed", hc.socket);
	return 0;
}

/* ---- the client ---- */

static void connect_server(void)
{
	struct timeval tv = { .tv_sec = 10 };

	if (conn >= 0)
		close(conn);
	conn = socket(AF_UNIX, SOCK_STREAM, 0);
	if (conn < 0)
		die("socket: %s", strerror(errno));
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(conn, (struct sockaddr *)&server, sizeof(server)))
		die("connect: %s", strerror(errno));
}

/* Whether the server has closed our idle connection. */
static bool conn_closed(void)
{
	struct pollfd p = { .fd = conn, .events = POLLIN };
	char c;

	if (conn < 0)
		return true;
	if (poll(&p, 1, 0) <= 0)
		return false;
	return recv(conn, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
}

static bool send_all(const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(conn, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return false;
		p += n;
		len -= n;
	}
	return true;
}

struct response {
	unsigned status;
	char head[4096];
	char *body;
	size_t body_len;
};

/* Read one response: status line and headers, then Content-Length bytes.
 * false when the connection closed before a whole response.
 */
static bool read_response(struct response *r)
{
	size_t have = 0, need;
	char *end = NULL, *cl;
	ssize_t n;

	while (!end) {
		if (have == sizeof(r->head) - 1)
			die("response headers longer than %zu bytes", have);
		n = recv(conn, r->head + have, 1, 0);	/* never past the head */
		if (n <= 0)
			return false;
		have += n;
		r->head[have] = '\0';
		end = strstr(r->head, "\r\n\r\n");
	}
	if (sscanf(r->head, "HTTP/1.%*d %u", &r->status) != 1)
		die("not an HTTP status line: %.80s", r->head);
	cl = strcasestr(r->head, "\r\nContent-Length:");
	if (!cl)
		die("response without Content-Length:\n%s", r->head);
	need = strtoul(cl + 17, NULL, 10);
	if (need > 1 << 20)
		die("response body of %zu bytes", need);
	r->body = malloc(need + 1);
	if (!r->body)
		die("out of memory");
	for (r->body_len = 0; r->body_len < need; r->body_len += n) {
		n = recv(conn, r->body + r->body_len, need - r->body_len, 0);
		if (n <= 0) {
			free(r->body);
			r->body = NULL;
			return false;
		}
	}
	r->body[need] = '\0';
	return true;
}

static void post(const uint8_t *data, size_t size, struct response *r)
{
	char head[160];
	int len, tries;

	len = snprintf(head, sizeof(head),
		       "POST /v1/check HTTP/1.1\r\nHost: fuzz\r\n"
		       "Content-Type: application/json\r\n"
		       "Content-Length: %zu\r\n\r\n", size);
	for (tries = 0; tries < 2; tries++) {
		if (conn_closed())
			connect_server();
		/* a body over the cap is answered (413) and the connection
		 * closed before the body is read: its send may fail, the
		 * answer is there all the same
		 */
		if (send_all(head, len) &&
		    (send_all(data, size) || size > MAX_BODY) &&
		    read_response(r))
			return;
		close(conn);	/* closed under us: once more, afresh */
		conn = -1;
	}
	die("no response to a POST of %zu bytes", size);
}

/* ---- the contract ---- */

static const char *member(json_object *o, const char *name, size_t *len)
{
	json_object *v;

	if (!json_object_object_get_ex(o, name, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	*len = json_object_get_string_len(v);
	return json_object_get_string(v);
}

/* The rule's limit, or 0 for no rule of that name. */
static uint64_t known_rule(const char *rule, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(rule_names) / sizeof(rule_names[0]); i++)
		if (len == strlen(rule_names[i]) && !memcmp(rule, rule_names[i], len))
			return rule_limits[i];
	return 0;
}

/* The expected status; 0 for "200 or 429". */
static unsigned expect(const uint8_t *data, size_t size, json_object **obj,
		       const char **why)
{
	struct json_tokener *tok;
	json_object *o;
	const char *rule, *key;
	size_t end, rule_len = 0, key_len = 0;
	json_object *cost_obj;
	int64_t cost = 1;
	char *text;

	*obj = NULL;
	if (size > MAX_BODY)
		return *why = "a body over 4096 bytes", 413;
	if (!size)
		return *why = "no body and no query: no rule", 400;
	text = malloc(size + 1);
	tok = json_tokener_new();
	if (!text || !tok)
		die("out of memory");
	memcpy(text, data, size);
	text[size] = '\0';
	o = json_tokener_parse_ex(tok, text, size);
	end = tok->char_offset;
	json_tokener_free(tok);
	free(text);
	while (end < size && (data[end] == ' ' || data[end] == '\t' ||
			      data[end] == '\r' || data[end] == '\n'))
		end++;
	if (!o || !json_object_is_type(o, json_type_object) || end != size) {
		json_object_put(o);
		return *why = "not one JSON object and white space", 400;
	}
	*obj = o;
	{
		json_object_object_foreach(o, name, val) {
			(void)val;
			if (strcmp(name, "rule") && strcmp(name, "key") &&
			    strcmp(name, "cost"))
				return *why = "a member other than rule, key and cost", 400;
		}
	}
	if (json_object_object_get_ex(o, "cost", &cost_obj)) {
		if (!json_object_is_type(cost_obj, json_type_int))
			return *why = "a cost that is not an integer", 400;
		cost = json_object_get_int64(cost_obj);
		if (cost < 1 || cost > 4294967295)
			return *why = "a cost out of 1..2^32 - 1", 400;
	}
	rule = member(o, "rule", &rule_len);
	key = member(o, "key", &key_len);
	if (key && strlen(key) != key_len)
		return *why = "a key with a NUL byte", 400;
	if (rule && strlen(rule) != rule_len)
		return *why = "a rule with a NUL byte", 400;
	if (!rule || !rule_len)
		return *why = "no rule", 400;
	if (!key || !key_len)
		return *why = "no key", 400;
	if (key_len > 256 || strnlen(rule, 32) > 31)
		return *why = "key over 256 bytes or rule over 31", 400;
	if (!known_rule(rule, rule_len))
		return *why = "not a rule's name", 404;
	if ((uint64_t)cost > known_rule(rule, rule_len))
		return *why = "a cost over the rule's limit", 400;
	return *why = "a check", 0;
}

static void fail(const struct response *r, const char *why, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

static void fail(const struct response *r, const char *why, const char *fmt, ...)
{
	va_list ap;
	FILE *out = report ? report : stderr;

	va_start(ap, fmt);
	fputs("fuzz_http_body: ", out);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fprintf(out, "\n  expected because: %s\n  got: %u %.300s\n", why,
		r->status, r->body ? r->body : "");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct response r = { 0 };
	json_object *sent = NULL, *got, *v;
	const char *why, *s;
	unsigned want;

	if (size > 2 * MAX_BODY)
		return -1;
	want = expect(data, size, &sent, &why);
	post(data, size, &r);
	got = json_tokener_parse(r.body);
	if (!got || !json_object_is_type(got, json_type_object))
		fail(&r, why, "the response body is not a JSON object");
	if (want ? r.status != want : r.status != 200 && r.status != 429)
		fail(&r, why, "status %u, expected %u", r.status, want ? want : 200);
	if (r.status == 200 || r.status == 429) {
		size_t len;

		if (!json_object_object_get_ex(got, "allowed", &v) ||
		    json_object_get_boolean(v) != (r.status == 200))
			fail(&r, why, "'allowed' disagrees with the status");
		s = member(sent, "rule", &len);
		if (!json_object_object_get_ex(got, "rule", &v) ||
		    strcmp(json_object_get_string(v), s))
			fail(&r, why, "answered for another rule");
		s = member(sent, "key", &len);
		if (!json_object_object_get_ex(got, "key", &v) ||
		    strcmp(json_object_get_string(v), s))
			fail(&r, why, "answered for another key");
	} else if (!json_object_object_get_ex(got, "error", &v) ||
		   !json_object_is_type(v, json_type_string)) {
		fail(&r, why, "an error without a string 'error'");
	}
	json_object_put(got);
	json_object_put(sent);
	free(r.body);
	return 0;
}
