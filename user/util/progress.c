// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "util/clock.h"
#include "util/log.h"
#include "util/progress.h"

#define REDRAW_NS	500000000ull	/* twice a second */

void sl_progress_start(struct sl_progress *p, const char *what, size_t total)
{
	memset(p, 0, sizeof(*p));
	p->what = what;
	p->total = total;
	/* a run shorter than the first redraw shows nothing */
	p->on = !sl_json && isatty(STDERR_FILENO);
	if (p->on)
		p->next_ns = sl_now_mono_ns() + REDRAW_NS;
}

void sl_progress_update(struct sl_progress *p, size_t done)
{
	uint64_t t;

	if (!p || !p->on)
		return;
	t = sl_now_mono_ns();
	if (t < p->next_ns)
		return;
	p->next_ns = t + REDRAW_NS;
	/* \r and erase-to-end: the line is redrawn in place */
	fprintf(stderr, "\r%s: %zu/%zu %s (%zu%%)\033[K", p->what, done,
		p->total, p->unit ? p->unit : "requests",
		p->total ? done * 100 / p->total : 100);
	fflush(stderr);
	p->shown = true;
}

void sl_progress_end(struct sl_progress *p)
{
	if (!p || !p->shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->shown = false;
}
