// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Attach and detach. The programs and maps are loaded once and pinned under
 * SL_PIN_DIR; every attachment (any device, XDP or TC) runs the same pinned
 * program on the same maps, so a client is counted per host. The devices
 * attached are kept in the pinned map sl_devices, which is how `detach` and
 * `status` know them, and the pins go when the last device is detached.
 */
#include <dirent.h>
#include <limits.h>
#include <linux/if_link.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "instance/btf_same.h"
#include "instance/build_id.h"
#include "util/log.h"
#include "util/clock.h"
#include "instance/loader.h"
#include "util/parse.h"
#include "instance/instance_maps.h"
#include "instance/pin_lock.h"
#include "instance/made_record.h"
#include "slicelimit.skel.h"

#define SL_PROG_XDP_PIN		SL_PIN_DIR "/prog_xdp"
#define SL_PROG_TC_PIN		SL_PIN_DIR "/prog_tc"
#define SL_PROG_CHECK_PIN	SL_PIN_DIR "/prog_check"
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

static int prog_id_of(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	return info.id;
}

/* A fresh load is this build's; without the record status says "unknown
 * build" and the next service start swaps the programs for the same ones:
 * harmless, so only a warning.
 */
static void record_fresh_build(void)
{
	struct sl_build_rec rec = {};

	sl_build_id(rec.id);
	if (sl_build_write(&rec))
		pr_warn("cannot record the build id as %s", SL_BUILD_PIN);
}

/* Pin the three programs; `what` names them in the error. A failure
 * unpins the ones this call pinned, in reverse order.
 */
static int pin_programs(struct slicelimit_bpf *skel, const char *what)
{
	int err;

	err = bpf_program__pin(skel->progs.sl_xdp, SL_PROG_XDP_PIN);
	if (err)
		goto err_report;
	err = bpf_program__pin(skel->progs.sl_tc, SL_PROG_TC_PIN);
	if (err)
		goto err_unpin_xdp;
	err = bpf_program__pin(skel->progs.sl_check, SL_PROG_CHECK_PIN);
	if (err)
		goto err_unpin_tc;
	return 0;

err_unpin_tc:
	bpf_program__unpin(skel->progs.sl_tc, SL_PROG_TC_PIN);
err_unpin_xdp:
	bpf_program__unpin(skel->progs.sl_xdp, SL_PROG_XDP_PIN);
err_report:
	pr_error("cannot pin the %s under %s: %s", what, SL_PIN_DIR,
		 strerror(-err));
	return err;
}

/* Which of the object's map pins exist before its load (bit i: the i-th
 * map), so that a failure after the load removes only the maps libbpf
 * pinned for this call, not those it reused.
 */
static __u64 map_pins_present(const struct bpf_object *obj)
{
	const struct bpf_map *map;
	__u64 present = 0;
	unsigned i = 0;

	bpf_object__for_each_map(map, obj) {
		const char *path = bpf_map__pin_path(map);

		if (i < 64 && path && !access(path, F_OK))
			present |= 1ULL << i;
		i++;
	}
	return present;
}

/* Unpin, last first, the maps of obj whose pin was not in PRESENT. */
static void unpin_new_maps(struct bpf_object *obj, __u64 present)
{
	struct bpf_map *map;
	unsigned i = 0;

	bpf_object__for_each_map(map, obj)
		i++;
	for (map = bpf_object__prev_map(obj, NULL); map;
	     map = bpf_object__prev_map(obj, map)) {
		i--;
		if (bpf_map__pin_path(map) && !(i < 64 && present >> i & 1))
			bpf_map__unpin(map, NULL);
	}
}

/* The programs pinned already: their fds (1), or none pinned (0). */
static int open_pinned_programs(int *xdp_fd, int *tc_fd)
{
	*xdp_fd = bpf_obj_get(SL_PROG_XDP_PIN);
	*tc_fd = bpf_obj_get(SL_PROG_TC_PIN);
	if (*xdp_fd >= 0 && *tc_fd >= 0 && !access(SL_PROG_CHECK_PIN, F_OK))
		return 1;
	if (*xdp_fd >= 0)
		close(*xdp_fd);
	if (*tc_fd >= 0)
		close(*tc_fd);
	*xdp_fd = *tc_fd = -1;
	return 0;
}

/* The probation table's seed, once loaded; without it every new key
 * gets a state at once, as before probation.
 */
static void init_newcomers(struct slicelimit_bpf *skel)
{
	struct sl_maps m;
	int err;

	sl_maps_from_object(&m, skel->obj);
	err = sl_newcomers_init(&m);
	if (err)
		pr_warn("cannot set up the probation of new clients (%s): they get a state at their first packet",
			strerror(-err));
}

int sl_load_pinned(const struct sl_load_opts *opts, int *xdp_fd, int *tc_fd,
		   bool *loaded)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts,
		    .pin_root_path = SL_PIN_DIR);
	struct slicelimit_bpf *skel;
	bool had_pins;
	__u64 present;
	int err;

	*loaded = false;
	err = sl_require_bpffs();
	if (err)
		return err;
	if (open_pinned_programs(xdp_fd, tc_fd))
		return 0;

	if (mkdir(SL_PIN_DIR, 0700) && errno != EEXIST) {
		err = -errno;
		pr_error("cannot create %s: %s%s", SL_PIN_DIR, strerror(-err),
			 sl_privilege_hint(err));
		return err;
	}
	/* another user's directory would hold root's programs and maps */
	err = sl_pin_dir_check();
	if (err)
		return err;
	skel = slicelimit_bpf__open_opts(&open_opts);
	if (!skel) {
		err = -errno;
		pr_error("cannot open the BPF object: %s", strerror(-err));
		goto err_rmdir;
	}
	sl_size_state_maps(skel->obj, opts->clients);
	/* libbpf reuses maps pinned by name; EINVAL then usually means a
	 * pinned map was made with other sizes, worth a hint only then
	 */
	had_pins = access(SL_PIN_DIR "/sl_clients", F_OK) == 0;
	present = map_pins_present(skel->obj);
	/* a failed load unpins the maps it pinned itself */
	err = slicelimit_bpf__load(skel);
	if (err) {
		pr_error("cannot load the BPF programs: %s%s", strerror(-err),
			 err == -EINVAL && had_pins ?
			 " (maps pinned under " SL_PIN_DIR " may have other sizes: run 'slicelimit detach --all' first; -v shows libbpf's log)" :
			 err == -EPERM || err == -EACCES ? sl_privilege_hint(err) :
			 " (-v shows libbpf's log)");
		goto err_destroy;
	}
	init_newcomers(skel);
	err = pin_programs(skel, "programs");
	if (err)
		goto err_unpin_maps;
	*xdp_fd = dup(bpf_program__fd(skel->progs.sl_xdp));
	*tc_fd = dup(bpf_program__fd(skel->progs.sl_tc));
	record_fresh_build();
	pr_info("loaded and pinned under %s", SL_PIN_DIR);
	slicelimit_bpf__destroy(skel);
	*loaded = true;
	return 0;

err_unpin_maps:
	unpin_new_maps(skel->obj, present);
err_destroy:
	slicelimit_bpf__destroy(skel);
err_rmdir:
	rmdir(SL_PIN_DIR);	/* only if empty: never a partial state */
	return err;
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

static int attach_xdp(int ifindex, const char *dev, int prog_fd,
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

static int detach_xdp(int ifindex, const char *dev, int prog_fd,
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
static bool has_clsact(int ifindex)
{
	struct bpf_tc_hook hook;

	tc_hook_init(&hook, ifindex);
	if (bpf_tc_hook_create(&hook))
		return true;	/* -EEXIST; or it cannot be asked: say yes */
	destroy_clsact(ifindex);
	return false;
}

static int attach_tc(int ifindex, const char *dev, int prog_fd)
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
static int detach_tc(int ifindex)
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

static void warn_clients_ignored(const struct sl_maps *m, unsigned clients)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (!bpf_obj_get_info_by_fd(m->clients, &info, &len) &&
	    info.max_entries != sl_client_table_entries(clients, m->nr_cpus))
		pr_warn("--clients %u ignored: the client table was created for %u clients (by an earlier attach or rules apply); detach --all, then attach --clients first to resize it",
			clients, sl_clients_of_table(info.max_entries,
						     m->nr_cpus));
}

/* A failure leaves nothing of this call: a device attached is detached,
 * and pins this call made (nothing was loaded before) are removed.
 */
int sl_attach(const char *dev, enum sl_attach_mode mode,
	      const struct sl_load_opts *opts)
{
	struct sl_device rec = {};
	struct sl_maps m;
	int ifindex, xdp_fd = -1, tc_fd = -1, prog_fd, err;
	bool loaded;
	__u32 key;

	ifindex = if_nametoindex(dev);
	if (!ifindex) {
		pr_error("%s: no such device (ip link shows the devices)", dev);
		return -ENODEV;
	}
	err = sl_load_pinned(opts, &xdp_fd, &tc_fd, &loaded);
	if (err)
		return err;
	err = sl_maps_open_pinned(&m);
	if (err) {
		pr_error("cannot open the maps pinned under %s: %s", SL_PIN_DIR,
			 strerror(-err));
		goto err_progs;
	}
	if (opts->clients)
		warn_clients_ignored(&m, opts->clients);
	key = ifindex;
	if (!bpf_map_lookup_elem(m.devices, &key, &rec)) {
		pr_error("%s: already attached (mode %s); detach it first", dev,
			 sl_mode_name(rec.mode));
		err = -EEXIST;
		goto err_maps;
	}

	prog_fd = mode == SL_MODE_TC ? tc_fd : xdp_fd;
	err = mode == SL_MODE_TC ? attach_tc(ifindex, dev, prog_fd) :
				   attach_xdp(ifindex, dev, prog_fd, mode);
	if (err)
		goto err_maps;
	memset(&rec, 0, sizeof(rec));
	snprintf(rec.name, sizeof(rec.name), "%s", dev);
	rec.mode = mode;
	rec.prog_id = prog_id_of(prog_fd);
	if (bpf_map_update_elem(m.devices, &key, &rec, 0)) {
		err = -errno;
		pr_error("%s: attached, but cannot record it: %s", dev,
			 strerror(errno));
		goto err_detach;
	}
	sl_maps_close(&m);
	close(xdp_fd);
	close(tc_fd);
	return 0;

err_detach:
	/* unrecorded, it could not be found again: off the device */
	if (mode == SL_MODE_TC)
		detach_tc(ifindex);
	else
		detach_xdp(ifindex, dev, prog_fd, mode);
err_maps:
	sl_maps_close(&m);
err_progs:
	close(xdp_fd);
	close(tc_fd);
	if (loaded)
		sl_unpin_if_unused();
	return err;
}

/* Detach one recorded device; a device that has disappeared (its
 * namespace or link deleted) is simply forgotten.
 */
/* The XDP program on a device, in the mode we attached it in (0: none),
 * or -errno when the device cannot be asked (out of file descriptors...).
 */
static long long xdp_prog_on(__u32 ifindex, unsigned mode)
{
	__u32 id = 0;
	int err;

	err = bpf_xdp_query_id(ifindex, mode == SL_MODE_XDP ? XDP_FLAGS_DRV_MODE :
					XDP_FLAGS_SKB_MODE, &id);
	return err ? err : (long long)id;
}

/* Detach one recorded device; a device that has disappeared (its
 * namespace or link deleted) is simply forgotten. An XDP detach is
 * checked on the device: libxdp can report success, or "not there", when
 * it failed (out of file descriptors, say), and a program left behind on
 * unpinned maps could not be found again.
 */
static int detach_one(const struct sl_maps *m, __u32 ifindex,
		      const struct sl_device *rec)
{
	char name[IF_NAMESIZE];
	const char *found;
	long long on;
	int err = 0, fd;

	/* "no such device" is gone; failing to ask (no file descriptor for
	 * the socket, say) is not
	 */
	found = if_indextoname(ifindex, name);
	if (!found && errno != ENXIO && errno != ENODEV) {
		err = -errno;
		pr_error("%s: cannot look the device up: %s", rec->name,
			 strerror(-err));
		return err;
	}
	if (found && !strcmp(name, rec->name)) {
		if (rec->mode == SL_MODE_TC) {
			err = detach_tc(ifindex);
			if (err == -ENOENT || (err == -EINVAL && !has_clsact(ifindex)))
				err = 0;	/* already gone from the device */
		} else {
			fd = bpf_obj_get(SL_PROG_XDP_PIN);
			if (fd >= 0) {
				detach_xdp(ifindex, rec->name, fd, rec->mode);
				close(fd);
			}
			/* a single program libxdp did not take off: directly */
			if (xdp_prog_on(ifindex, rec->mode) == rec->prog_id)
				bpf_xdp_detach(ifindex, rec->mode == SL_MODE_XDP ?
					       XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE,
					       NULL);
			on = xdp_prog_on(ifindex, rec->mode);
			err = on < 0 ? (int)on : on == rec->prog_id ? -EBUSY : 0;
		}
		if (err) {
			pr_error("%s: cannot detach: %s", rec->name,
				 strerror(-err));
			return err;
		}
	}
	bpf_map_delete_elem(m->devices, &ifindex);
	return 0;
}

static bool devices_empty(const struct sl_maps *m)
{
	__u32 key;

	return bpf_map_get_next_key(m->devices, NULL, &key) != 0;
}

int sl_detach(const char *dev)
{
	struct sl_device rec;
	struct sl_maps m;
	__u32 key, next;
	void *prev = NULL;
	int err;

	err = sl_require_bpffs();
	if (err)
		return err;
	err = sl_maps_open_pinned(&m);
	if (err == -ENOENT) {
		pr_error("%s: not attached (nothing is pinned under %s)", dev,
			 SL_PIN_DIR);
		return err;
	}
	if (err) {
		pr_error("cannot open the pins under %s: %s%s", SL_PIN_DIR,
			 strerror(-err), sl_privilege_hint(err));
		return err;
	}
	err = -ENOENT;
	while (!bpf_map_get_next_key(m.devices, prev, &next)) {
		if (!bpf_map_lookup_elem(m.devices, &next, &rec) &&
		    !strcmp(rec.name, dev)) {
			err = detach_one(&m, next, &rec);
			break;
		}
		key = next;
		prev = &key;
	}
	if (err == -ENOENT)
		pr_error("%s: not attached ('slicelimit status' lists the devices)",
			 dev);
	if (!err && devices_empty(&m)) {
		sl_maps_close(&m);
		return sl_unpin_all();
	}
	sl_maps_close(&m);
	return err;
}

bool sl_maps_has_device(const struct sl_maps *m, const char *dev)
{
	struct sl_device rec;
	__u32 key, next;
	void *prev = NULL;
	bool found = false;

	while (!found && !bpf_map_get_next_key(m->devices, prev, &next)) {
		found = !bpf_map_lookup_elem(m->devices, &next, &rec) &&
			!strcmp(rec.name, dev);
		key = next;
		prev = &key;
	}
	return found;
}

bool sl_is_attached(const char *dev)
{
	struct sl_maps m;
	bool found;

	if (sl_maps_open_pinned(&m))
		return false;
	found = sl_maps_has_device(&m, dev);
	sl_maps_close(&m);
	return found;
}

int sl_unpin_if_unused(void)
{
	struct sl_maps m;
	bool unused;

	if (sl_maps_open_pinned(&m))
		return 0;
	unused = devices_empty(&m);
	sl_maps_close(&m);
	return unused ? sl_unpin_all() : 0;
}

int sl_detach_all(void)
{
	struct sl_device rec;
	struct sl_maps m;
	__u32 key;
	int err;

	err = sl_require_bpffs();
	if (err)
		return err;
	if (sl_maps_open_pinned(&m)) {
		sl_unpin_all();	/* a partial pin dir: clean it */
		pr_error("nothing is attached (nothing is pinned under %s)",
			 SL_PIN_DIR);
		return -ENOENT;
	}
	if (devices_empty(&m)) {
		sl_maps_close(&m);
		/* rules applied before any attach: their pins go all the same */
		err = sl_unpin_all();
		pr_error("nothing is attached%s", err ? "" :
			 " (the pins of rules applied without a device are removed)");
		return -ENOENT;
	}
	while (!bpf_map_get_next_key(m.devices, NULL, &key)) {
		if (bpf_map_lookup_elem(m.devices, &key, &rec))
			break;
		err = detach_one(&m, key, &rec);
		if (err) {
			sl_maps_close(&m);
			return err;
		}
	}
	sl_maps_close(&m);
	return sl_unpin_all();
}

int sl_open_check_prog(void)
{
	int fd = bpf_obj_get(SL_PROG_CHECK_PIN);

	return fd < 0 ? -errno : fd;
}

int sl_unpin_all(void)
{
	char path[512];
	struct dirent *e;
	DIR *d;
	int err = 0;

	/* a service's instance outlives a device detached under it (--force) */
	if (sl_service_holds_pins()) {
		pr_warn("the pins under %s stay: a service holds them", SL_PIN_DIR);
		return 0;
	}
	d = opendir(SL_PIN_DIR);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", SL_PIN_DIR, e->d_name);
		if (unlink(path))
			err = -errno;
	}
	closedir(d);
	if (rmdir(SL_PIN_DIR) && !err)
		err = -errno;
	if (err)
		pr_error("cannot remove the pins under %s: %s", SL_PIN_DIR,
			 strerror(-err));
	else
		pr_info("unpinned %s", SL_PIN_DIR);
	return err;
}

/* ---- upgrade: this build's programs in place of another build's ---- */

#define SL_MAX_UPGRADE_DEVICES	64

/* Would libbpf reuse the pinned map at PATH for MAP (its checks in
 * map_is_reuse_compat)? 1 yes, 0 no (WHY says what differs), -errno.
 */
/* The pinned map's value type (its BTF, from the kernel) against this
 * build's: the same size can hold other fields. A pin without BTF, or
 * whose BTF cannot be read, is not known to match.
 */
static bool same_value_type(const struct bpf_map_info *info,
			    const struct bpf_object *obj,
			    const struct bpf_map *map)
{
	const struct btf *ours = bpf_object__btf(obj);
	struct btf *theirs;
	bool same;

	if (!ours || !bpf_map__btf_value_type_id(map))
		return true;	/* nothing of ours to compare: sizes decide */
	if (!info->btf_id || !info->btf_value_type_id)
		return false;
	theirs = btf__load_from_kernel_by_id(info->btf_id);
	if (!theirs)
		return false;
	same = sl_btf_same_type(theirs, info->btf_value_type_id, ours,
				bpf_map__btf_value_type_id(map));
	btf__free(theirs);
	return same;
}

static int pin_reusable(const struct bpf_object *obj,
			const struct bpf_map *map, const char *path,
			char *why, size_t len)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	int fd = bpf_obj_get(path), err = 0;

	if (fd < 0)
		return -errno;
	why[0] = '\0';
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen))
		err = -errno;
	else if (info.type != bpf_map__type(map))
		snprintf(why, len, "type %u -> %u", info.type, bpf_map__type(map));
	else if (info.key_size != bpf_map__key_size(map))
		snprintf(why, len, "key size %u -> %u", info.key_size,
			 bpf_map__key_size(map));
	else if (info.value_size != bpf_map__value_size(map))
		snprintf(why, len, "value size %u -> %u", info.value_size,
			 bpf_map__value_size(map));
	else if (info.max_entries != bpf_map__max_entries(map))
		snprintf(why, len, "max_entries %u -> %u", info.max_entries,
			 bpf_map__max_entries(map));
	else if (info.map_flags != bpf_map__map_flags(map))
		snprintf(why, len, "flags %#x -> %#x", info.map_flags,
			 bpf_map__map_flags(map));
	else if (!same_value_type(&info, obj, map))
		snprintf(why, len, "value type (BTF) changed");
	close(fd);
	return err ? err : !why[0];
}

static void append_name(char *list, size_t len, const char *name)
{
	size_t used = strlen(list);

	snprintf(list + used, len - used, "%s%s", used ? "," : "", name);
}

/* One device onto the new program. TC and a single XDP program are
 * replaced in one step (the kernel swaps them atomically); under the
 * libxdp dispatcher the old program is detached and the new one attached,
 * a moment in which packets pass unlimited.
 */
static int swap_device(__u32 ifindex, struct sl_device *rec, int old_fd,
		       int new_fd)
{
	__u32 flags = rec->mode == SL_MODE_XDP ? XDP_FLAGS_DRV_MODE :
						  XDP_FLAGS_SKB_MODE;
	int err;

	if (rec->mode == SL_MODE_TC) {
		LIBBPF_OPTS(bpf_tc_opts, tc, .handle = SL_TC_HANDLE,
			    .priority = SL_TC_PRIORITY, .prog_fd = new_fd,
			    .flags = BPF_TC_F_REPLACE);
		struct bpf_tc_hook hook;

		tc_hook_init(&hook, ifindex);
		err = bpf_tc_attach(&hook, &tc);
		if (err)
			pr_error("%s: cannot replace the TC program: %s",
				 rec->name, strerror(-err));
	} else if (xdp_prog_on(ifindex, rec->mode) == rec->prog_id) {
		LIBBPF_OPTS(bpf_xdp_attach_opts, xo, .old_prog_fd = old_fd);

		err = bpf_xdp_attach(ifindex, new_fd, flags | XDP_FLAGS_REPLACE,
				     &xo);
		if (err)
			pr_error("%s: cannot replace the XDP program: %s",
				 rec->name, strerror(-err));
	} else {
		detach_xdp(ifindex, rec->name, old_fd, rec->mode);
		err = attach_xdp(ifindex, rec->name, new_fd, rec->mode);
	}
	if (err)
		return err;
	rec->prog_id = prog_id_of(new_fd);
	return 0;
}

/* The pins moved aside for a reset: back in place (RESTORE, on a failed
 * upgrade; the new map libbpf pinned there, if any, goes) or removed.
 */
static void moved_aside(struct slicelimit_bpf *skel, bool restore)
{
	char aside[PATH_MAX];
	struct bpf_map *map;

	bpf_object__for_each_map(map, skel->obj) {
		const char *path = bpf_map__pin_path(map);

		if (!path)
			continue;
		snprintf(aside, sizeof(aside), "%s__aside", path);
		if (access(aside, F_OK))
			continue;
		if (restore) {
			unlink(path);
			rename(aside, path);
		} else {
			unlink(aside);
		}
	}
}

/* Is an upgrade due? 1: the pinned programs are another build's (rec->id
 * is this build's, rec->from theirs), 0: nothing loaded or this build's
 * already, -errno.
 */
static int upgrade_due(struct sl_build_rec *rec)
{
	struct sl_build_rec old = {};
	int err;

	sl_build_id(rec->id);
	if (access(SL_PROG_XDP_PIN, F_OK))
		return 0;	/* nothing loaded: the ordinary load will */
	err = sl_build_read(&old);
	if (err && err != -ENOENT) {
		/* out of fds, say: not a reason to swap the programs */
		pr_error("cannot read the build id pinned as %s: %s",
			 SL_BUILD_PIN, strerror(-err));
		return err;
	}
	if (!err && !memcmp(old.id, rec->id, sizeof(rec->id)))
		return 0;	/* this build's already */
	memcpy(rec->from, old.id, sizeof(rec->from));
	return 1;
}

struct upgrade_devices {
	struct sl_device recs[SL_MAX_UPGRADE_DEVICES];
	__u32 ifindex[SL_MAX_UPGRADE_DEVICES];
	unsigned nr;
};

/* The devices to move over, read before any pin changes, and the size of
 * the client table (*clients, unless it names one already).
 */
static int read_devices(struct upgrade_devices *d, unsigned *clients)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info), key, *prev = NULL;
	int devices, table, err = 0;

	/* the two pins this needs, by name: an older build pinned fewer
	 * maps than this one opens as an instance (the lists', for one),
	 * and its upgrade must not need them
	 */
	devices = bpf_obj_get(SL_PIN_DIR "/sl_devices");
	if (devices < 0) {
		err = -errno;
		pr_error("cannot open the maps pinned under %s: %s", SL_PIN_DIR,
			 strerror(-err));
		return err;
	}
	if (bpf_obj_get_info_by_fd(devices, &info, &ilen) ||
	    info.value_size != sizeof(struct sl_device)) {
		pr_error("the pinned device list has another layout: cannot move the devices over; run 'slicelimit detach --all', then start again");
		err = -ESTALE;
		goto out;
	}
	d->nr = 0;
	while (d->nr < SL_MAX_UPGRADE_DEVICES &&
	       !bpf_map_get_next_key(devices, prev, &key)) {
		d->ifindex[d->nr] = key;
		prev = &d->ifindex[d->nr];
		if (!bpf_map_lookup_elem(devices, &key, &d->recs[d->nr]))
			d->nr++;
	}
	/* the client table keeps its size unless the config names one */
	memset(&info, 0, sizeof(info));
	ilen = sizeof(info);
	table = *clients ? -1 : bpf_obj_get(SL_PIN_DIR "/sl_clients");
	if (table >= 0) {
		if (!bpf_obj_get_info_by_fd(table, &info, &ilen))
			*clients = sl_clients_of_table(info.max_entries,
						       libbpf_num_possible_cpus());
		close(table);
	}
out:
	close(devices);
	return err;
}

/* A pin libbpf could not reuse is moved aside (NAME__aside: bpffs takes
 * no dot in a name), so that the load makes and pins a new map: its
 * content is lost, say which. Until the programs are swapped the old map
 * stays pinned aside, and goes back if anything fails (moved_aside).
 */
static int set_aside_changed_maps(struct slicelimit_bpf *skel,
				  struct sl_build_rec *rec)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, skel->obj) {
		const char *path = bpf_map__pin_path(map);
		char why[96], aside[PATH_MAX];
		int r;

		if (!path)
			continue;
		r = pin_reusable(skel->obj, map, path, why, sizeof(why));
		if (r == 1) {
			rec->maps_kept++;
		} else if (r == 0) {
			pr_warn("%s: layout changed (%s): reset, its content is lost",
				bpf_map__name(map), why);
			snprintf(aside, sizeof(aside), "%s__aside", path);
			if (rename(path, aside)) {
				r = -errno;
				pr_error("%s: cannot move the pin aside: %s",
					 path, strerror(-r));
				return r;
			}
			rec->maps_reset++;
			append_name(rec->reset_names, sizeof(rec->reset_names),
				    bpf_map__name(map));
		} else if (r != -ENOENT) {
			pr_error("%s: cannot inspect the pin: %s", path,
				 strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Every recorded device onto the loaded programs, its record updated. */
static int swap_devices(struct slicelimit_bpf *skel, struct upgrade_devices *d,
			int old_xdp, int old_tc)
{
	bool swapped[SL_MAX_UPGRADE_DEVICES] = {};
	struct sl_maps m;
	unsigned i;
	int err;

	err = sl_maps_open_pinned(&m);
	if (err) {
		pr_error("cannot open the maps after the load: %s", strerror(-err));
		return err;
	}
	for (i = 0; i < d->nr; i++) {
		struct sl_device *rec = &d->recs[i];
		int new_fd = rec->mode == SL_MODE_TC ?
			     bpf_program__fd(skel->progs.sl_tc) :
			     bpf_program__fd(skel->progs.sl_xdp);
		int old_fd = rec->mode == SL_MODE_TC ? old_tc : old_xdp;
		char name[IF_NAMESIZE];

		/* a device gone since is only forgotten, as detach does */
		if (!if_indextoname(d->ifindex[i], name) ||
		    strcmp(name, rec->name)) {
			bpf_map_delete_elem(m.devices, &d->ifindex[i]);
			continue;
		}
		err = swap_device(d->ifindex[i], rec, old_fd, new_fd);
		if (err)
			break;
		swapped[i] = true;
		bpf_map_update_elem(m.devices, &d->ifindex[i], rec, BPF_ANY);
	}
	/* the failed one: an XDP swap through libxdp detaches before it
	 * attaches, and may have left the device with no program at all
	 */
	if (err && d->recs[i].mode != SL_MODE_TC &&
	    !xdp_prog_on(d->ifindex[i], d->recs[i].mode) &&
	    !attach_xdp(d->ifindex[i], d->recs[i].name, old_xdp, d->recs[i].mode))
		pr_notice("%s: put back on the old program", d->recs[i].name);
	/* half way: the devices already swapped go back to the old programs,
	 * which stay pinned, on the maps the failed upgrade puts back
	 */
	while (err && i--) {
		struct sl_device *rec = &d->recs[i];
		int new_fd = rec->mode == SL_MODE_TC ?
			     bpf_program__fd(skel->progs.sl_tc) :
			     bpf_program__fd(skel->progs.sl_xdp);
		int old_fd = rec->mode == SL_MODE_TC ? old_tc : old_xdp;

		if (!swapped[i])
			continue;
		if (swap_device(d->ifindex[i], rec, new_fd, old_fd)) {
			pr_error("%s: runs this build's program on maps that are not pinned; detach and attach it again",
				 rec->name);
			continue;
		}
		bpf_map_update_elem(m.devices, &d->ifindex[i], rec, BPF_ANY);
		pr_notice("%s: put back on the old program", rec->name);
	}
	sl_maps_close(&m);
	return err;
}

static void report_upgrade(const struct sl_build_rec *rec, unsigned nr)
{
	char from[2 * SL_BUILD_ID_LEN + 1], to[2 * SL_BUILD_ID_LEN + 1];

	pr_notice("upgraded the loaded programs from build %.12s to %.12s on %u device%s: %u maps kept, %u reset%s%s",
		  memcmp(rec->from, (__u8[SL_BUILD_ID_LEN]){ 0 }, SL_BUILD_ID_LEN) ?
		  sl_build_id_hex(rec->from, from) : "unknown",
		  sl_build_id_hex(rec->id, to), nr, nr == 1 ? "" : "s",
		  rec->maps_kept, rec->maps_reset,
		  rec->maps_reset ? ": " : "", rec->reset_names);
}

int sl_upgrade_pinned(const struct sl_load_opts *opts, struct sl_build_rec *out)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts,
		    .pin_root_path = SL_PIN_DIR);
	struct upgrade_devices devs;
	struct sl_build_rec rec = {};
	struct slicelimit_bpf *skel;
	unsigned clients = opts->clients;
	int old_xdp, old_tc, err;

	memset(out, 0, sizeof(*out));
	err = upgrade_due(&rec);
	if (err <= 0)
		return err;
	err = read_devices(&devs, &clients);
	if (err)
		return err;

	old_xdp = bpf_obj_get(SL_PROG_XDP_PIN);
	old_tc = bpf_obj_get(SL_PROG_TC_PIN);
	skel = slicelimit_bpf__open_opts(&open_opts);
	if (!skel) {
		err = -errno;
		pr_error("cannot open the BPF object: %s", strerror(-err));
		goto err_old_progs;
	}
	sl_size_state_maps(skel->obj, clients);
	err = set_aside_changed_maps(skel, &rec);
	if (err)
		goto err_restore;
	err = slicelimit_bpf__load(skel);
	if (err) {
		pr_error("cannot load this build's programs: %s (-v shows libbpf's log); the running ones are unchanged",
			 strerror(-err));
		goto err_restore;
	}
	init_newcomers(skel);
	err = swap_devices(skel, &devs, old_xdp, old_tc);
	if (err)
		goto err_restore;
	unlink(SL_PROG_XDP_PIN);
	unlink(SL_PROG_TC_PIN);
	unlink(SL_PROG_CHECK_PIN);
	err = pin_programs(skel, "new programs");
	if (err)
		goto err_restore;
	rec.upgraded_ms = sl_now_tai_ms();
	if (sl_build_write(&rec))
		pr_warn("cannot record the build id as %s", SL_BUILD_PIN);
	*out = rec;
	moved_aside(skel, false);
	report_upgrade(&rec, devs.nr);
	slicelimit_bpf__destroy(skel);
	close(old_tc);
	close(old_xdp);
	return 0;

err_restore:
	moved_aside(skel, true);
	slicelimit_bpf__destroy(skel);
err_old_progs:
	if (old_tc >= 0)
		close(old_tc);
	if (old_xdp >= 0)
		close(old_xdp);
	return err;
}
