/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One updating line on stderr for a long operation ("replay: 120000/500000
 * requests (24%)"), redrawn at most every half second, and only for a
 * person watching: stderr a terminal and no --json. Otherwise it writes
 * nothing, so piped and scripted output is the same as without it.
 */
#ifndef SL_UTIL_PROGRESS_H
#define SL_UTIL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_progress {
	const char *what;	/* "replay" */
	const char *unit;	/* what is counted: "requests" unless set */
	size_t total;		/* what done counts up to */
	uint64_t next_ns;	/* CLOCK_MONOTONIC of the next redraw */
	bool on;		/* stderr a terminal, no --json */
	bool shown;		/* a line is on the terminal: clear it */
};

void sl_progress_start(struct sl_progress *p, const char *what, size_t total);
/* done of total; cheap between redraws (one clock read) */
void sl_progress_update(struct sl_progress *p, size_t done);
/* clears the line, so what follows starts at column 0 */
void sl_progress_end(struct sl_progress *p);

#endif /* SL_UTIL_PROGRESS_H */
