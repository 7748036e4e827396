// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A program onto a device and off it, XDP or TC, and the names of the
 * attach modes.
 */
#include <linux/if_link.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "instance/hook.h"
#include "instance/loader.h"
#include "instance/made_record.h"
#include "util/log.h"
#include "util/parse.h"

/* Our TC filter: a fixed handle and priority, so detach finds it. */
#define SL_TC_HANDLE		0x51
#define SL_TC_PRIORITY		0x51

static const char *const mode_names[] = { "xdp", "xdp-generic", "tc" };

const char *sl_mode_name(unsigned mode)
{
	return sl_name_of(mode_names, 3, mode);
}

int sl_parse_mode(const char *s, enum sl_attach_mode *mode)
{
	unsigned v;

	if (sl_parse_name(s, sl_mode_name, 3, &v))
		return -EINVAL;
	*mode = v;
	return 0;
}

/* libxdp needs CAP_SYS_ADMIN (it crashes without it, in
 * xdp_program__attach_multi): say so before calling it.
 */
static bool have_cap_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32));
}

int sl_hook_attach_xdp(int ifindex, const char *dev, int prog_fd,
		       enum sl_attach_mode mode)
{
	enum xdp_attach_mode xmode = mode == SL_MODE_XDP ? XDP_MODE_NATIVE :
							    XDP_MODE_SKB;
	struct xdp_multiprog *mp;
	struct xdp_program *xp;
	bool had_dir;
	__u32 id = 0;
	int err;

	if (!have_cap_sys_admin()) {
		pr_error("%s: attaching XDP (libxdp) needs CAP_SYS_ADMIN; run as root or grant it, or use --mode tc",
			 dev);
		return -EPERM;
	}
	if (!bpf_xdp_query_id(ifindex, 0, &id) && id) {
		pr_error("%s already has an XDP program (id %u): detach it first, or use --mode tc",
			 dev, id);
		return -EBUSY;
	}
	xp = xdp_program__from_fd(prog_fd);
	err = libxdp_get_error(xp);
	if (err) {
		pr_error("%s: libxdp cannot use the program: %s", dev,
			 strerror(-err));
		return err;
	}
	had_dir = !access(sl_xdp_dir(), F_OK);
	err = xdp_program__attach(xp, ifindex, xmode, 0);
	if (err) {
		pr_error("%s: cannot attach in %s mode: %s%s", dev,
			 sl_mode_name(mode), strerror(-err),
			 mode == SL_MODE_XDP ?
			 " (the driver may lack native XDP: try --mode xdp-generic or --mode tc)" : "");
		xdp_program__close(xp);
		return err;
	}
	/* libxdp prefers its multi-program dispatcher; where that cannot load
	 * it attaches our program alone. Both work; say which one we got.
	 */
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (!libxdp_get_error(mp) && mp) {
		if (xdp_multiprog__is_legacy(mp))
			pr_info("%s: libxdp dispatcher unavailable; attached as a single XDP program",
				dev);
		else
			pr_info("%s: attached through the libxdp dispatcher", dev);
		xdp_multiprog__close(mp);
	}
	xdp_program__close(xp);
	if (!had_dir && !access(sl_xdp_dir(), F_OK))
		sl_made_xdp_dir();
	return 0;
}

int sl_hook_detach_xdp(int ifindex, const char *dev, int prog_fd,
		       enum sl_attach_mode mode)
{
	enum xdp_attach_mode xmode = mode == SL_MODE_XDP ? XDP_MODE_NATIVE :
							    XDP_MODE_SKB;
	struct xdp_program *xp;
	int err;

	xp = xdp_program__from_fd(prog_fd);
	err = libxdp_get_error(xp);
	if (!err) {
		err = xdp_program__detach(xp, ifindex, xmode, 0);
		xdp_program__close(xp);
	}
	sl_made_tidy_xdp_dir();
	return err;
}

long long sl_hook_xdp_prog_on(__u32 ifindex, unsigned mode)
{
	__u32 id = 0;
	int err;

	err = bpf_xdp_query_id(ifindex, mode == SL_MODE_XDP ? XDP_FLAGS_DRV_MODE :
			       XDP_FLAGS_SKB_MODE, &id);
	return err ? err : (long long)id;
}

static void tc_hook_init(struct bpf_tc_hook *hook, int ifindex)
{
	memset(hook, 0, sizeof(*hook));
	hook->sz = sizeof(*hook);
	hook->ifindex = ifindex;
	hook->attach_point = BPF_TC_INGRESS;
}

/* The clsact qdisc goes with both its hooks. */
static void destroy_clsact(int ifindex)
{
	struct bpf_tc_hook hook;

	tc_hook_init(&hook, ifindex);
	hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
	bpf_tc_hook_destroy(&hook);
}

/* Has the device a clsact qdisc? Asked by making one: if that works
 * there was none, and the one made goes again.
 */
bool sl_hook_has_clsact(int ifindex)
{
	struct bpf_tc_hook hook;

	tc_hook_init(&hook, ifindex);
	if (bpf_tc_hook_create(&hook))
		return true;	/* -EEXIST; or it cannot be asked: say yes */
	destroy_clsact(ifindex);
	return false;
}

int sl_hook_attach_tc(int ifindex, const char *dev, int prog_fd)
{
	LIBBPF_OPTS(bpf_tc_opts, tc, .handle = SL_TC_HANDLE,
		    .priority = SL_TC_PRIORITY, .prog_fd = prog_fd);
	struct bpf_tc_hook hook;
	bool made;
	int err;

	tc_hook_init(&hook, ifindex);
	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST) {
		pr_error("%s: cannot create the clsact qdisc: %s", dev,
			 strerror(-err));
		return err;
	}
	made = !err;
	err = bpf_tc_attach(&hook, &tc);
	if (err) {
		pr_error("%s: cannot attach at TC ingress: %s", dev,
			 strerror(-err));
		if (made)
			destroy_clsact(ifindex);
		return err;
	}
	if (made)
		sl_made_clsact(ifindex);
	return 0;
}

/* Our filter off the device, and the clsact qdisc with it when an
 * attach of ours created it: a detach leaves the device as it was.
 */
int sl_hook_detach_tc(int ifindex)
{
	LIBBPF_OPTS(bpf_tc_opts, tc, .handle = SL_TC_HANDLE,
		    .priority = SL_TC_PRIORITY);
	struct bpf_tc_hook hook;
	int err;

	tc_hook_init(&hook, ifindex);
	err = bpf_tc_detach(&hook, &tc);
	if ((!err || err == -ENOENT) && sl_made_take_clsact(ifindex))
		destroy_clsact(ifindex);
	return err;
}

/* TC and a single XDP program are replaced in one step: the kernel swaps
 * them atomically, no packet passes unlimited.
 */
int sl_hook_replace_tc(__u32 ifindex, const char *dev, int new_fd)
{
	LIBBPF_OPTS(bpf_tc_opts, tc, .handle = SL_TC_HANDLE,
		    .priority = SL_TC_PRIORITY, .prog_fd = new_fd,
		    .flags = BPF_TC_F_REPLACE);
	struct bpf_tc_hook hook;
	int err;

	tc_hook_init(&hook, ifindex);
	err = bpf_tc_attach(&hook, &tc);
	if (err)
		pr_error("%s: cannot replace the TC program: %s", dev,
			 strerror(-err));
	return err;
}

int sl_hook_replace_xdp(__u32 ifindex, const char *dev, unsigned mode,
			int old_fd, int new_fd)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, xo, .old_prog_fd = old_fd);
	__u32 flags = mode == SL_MODE_XDP ? XDP_FLAGS_DRV_MODE :
					    XDP_FLAGS_SKB_MODE;
	int err;

	err = bpf_xdp_attach(ifindex, new_fd, flags | XDP_FLAGS_REPLACE, &xo);
	if (err)
		pr_error("%s: cannot replace the XDP program: %s", dev,
			 strerror(-err));
	return err;
}
