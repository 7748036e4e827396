// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/log.h"
#include "instance/made_record.h"
#include "instance/pinned_record.h"

#define SL_MADE_CLSACT	64

struct sl_made {
	__u32 clsact[SL_MADE_CLSACT];	/* ifindexes; 0: a free slot */
	__u32 xdp_dir;			/* libxdp's directory is ours */
	__u32 pad;
};

static void made_read(struct sl_made *m)
{
	sl_pinned_record_read(SL_MADE_PIN, m, sizeof(*m));	/* none: zeros */
}

static void made_write(const struct sl_made *m)
{
	/* without it, a detach leaves what the attach made: said, not fatal */
	if (sl_pinned_record_write(SL_MADE_PIN, "sl_made", m, sizeof(*m)))
		pr_warn("cannot record what the attach made as %s", SL_MADE_PIN);
}

void sl_made_clsact(int ifindex)
{
	struct sl_made m;
	unsigned i;

	made_read(&m);
	for (i = 0; i < SL_MADE_CLSACT; i++)
		if (m.clsact[i] == (__u32)ifindex)
			return;
	for (i = 0; i < SL_MADE_CLSACT && m.clsact[i]; i++)
		;
	if (i == SL_MADE_CLSACT)
		return;		/* no room: the qdisc stays at detach */
	m.clsact[i] = ifindex;
	made_write(&m);
}

bool sl_made_take_clsact(int ifindex)
{
	struct sl_made m;
	unsigned i;

	made_read(&m);
	for (i = 0; i < SL_MADE_CLSACT; i++) {
		if (m.clsact[i] != (__u32)ifindex)
			continue;
		m.clsact[i] = 0;
		made_write(&m);
		return true;
	}
	return false;
}

const char *sl_xdp_dir(void)
{
	const char *d = getenv("LIBXDP_BPFFS");

	return d && *d ? d : "/sys/fs/bpf/xdp";
}

void sl_made_xdp_dir(void)
{
	struct sl_made m;

	made_read(&m);
	if (m.xdp_dir)
		return;
	m.xdp_dir = 1;
	made_write(&m);
}

void sl_made_tidy_xdp_dir(void)
{
	struct sl_made m;

	made_read(&m);
	if (!m.xdp_dir)
		return;
	/* only when empty: another program's dispatcher may be in it */
	if (rmdir(sl_xdp_dir()) && errno != ENOENT)
		return;
	m.xdp_dir = 0;
	made_write(&m);
}
