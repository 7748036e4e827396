// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/http/mhd_hello.c ADDRESS PORT: libmicrohttpd with no check at all,
 * for bench/bench_http.sh to measure the HTTP server's own ceiling beside
 * nginx's `return 200`. Every request gets one fixed answer with the headers
 * and the body of an allowed check; the daemon runs as user/service/http.c
 * starts it (epoll, turbo, one thread: the benchmark pins it to one CPU).
 * SIGTERM or SIGINT stops it.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char body[] =
	"{ \"allowed\": true, \"rule\": \"api\", \"key\": \"client-00001\", "
	"\"limit\": 4000000000, \"window_s\": 60, \"used\": 1, "
	"\"remaining\": 3999999999, \"reset_s\": 60, \"retry_after_s\": 0, "
	"\"decision\": \"kernel\" }";

static struct MHD_Response *answer;

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	static int seen;

	if (!*con_cls) {	/* headers only so far */
		*con_cls = &seen;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	return MHD_queue_response(c, 200, answer);
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct MHD_Daemon *d;
	sigset_t stop;
	int sig;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
		fprintf(stderr, "usage: %s IPV4-ADDRESS PORT\n", argv[0]);
		return 2;
	}
	addr.sin_port = htons(atoi(argv[2]));
	answer = MHD_create_response_from_buffer(strlen(body), (void *)body,
						 MHD_RESPMEM_PERSISTENT);
	if (!answer)
		return 1;
	MHD_add_response_header(answer, "Content-Type", "application/json");
	MHD_add_response_header(answer, "Cache-Control", "no-store");
	MHD_add_response_header(answer, "RateLimit-Policy", "\"api\";q=4000000000;w=60");
	MHD_add_response_header(answer, "RateLimit", "\"api\";r=3999999999;t=60");
	MHD_add_response_header(answer, "X-RateLimit-Limit", "4000000000");
	MHD_add_response_header(answer, "X-RateLimit-Remaining", "3999999999");
	MHD_add_response_header(answer, "X-RateLimit-Reset", "60");
	MHD_add_response_header(answer, "SliceLimit-Decision", "kernel");

	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);	/* the daemon's thread too */
	d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO |
			     MHD_USE_ERROR_LOG, 0, NULL, NULL, handle, NULL,
			     MHD_OPTION_SOCK_ADDR, &addr,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned)1024,
			     MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "mhd_hello: cannot listen on %s:%s\n", argv[1], argv[2]);
		return 1;
	}
	sigwait(&stop, &sig);
	MHD_stop_daemon(d);
	MHD_destroy_response(answer);
	return 0;
}
