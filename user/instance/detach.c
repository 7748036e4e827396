// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Detach and unpin: the program off a recorded device, or off all of
 * them, and the pins removed when the last device goes (unless a service
 * holds them).
 */
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "instance/hook.h"
#include "instance/instance_maps.h"
#include "instance/load.h"
#include "instance/loader.h"
#include "instance/pin_lock.h"
#include "util/log.h"

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
			err = sl_hook_detach_tc(ifindex);
			if (err == -ENOENT ||
			    (err == -EINVAL && !sl_hook_has_clsact(ifindex)))
				err = 0;	/* already gone from the device */
		} else {
			fd = bpf_obj_get(SL_PROG_XDP_PIN);
			if (fd >= 0) {
				sl_hook_detach_xdp(ifindex, rec->name, fd, rec->mode);
				close(fd);
			}
			/* a single program libxdp did not take off: directly */
			if (sl_hook_xdp_prog_on(ifindex, rec->mode) == rec->prog_id)
				bpf_xdp_detach(ifindex, rec->mode == SL_MODE_XDP ?
					       XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE,
					       NULL);
			on = sl_hook_xdp_prog_on(ifindex, rec->mode);
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
