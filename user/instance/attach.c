// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Attach: the pinned program onto one more device (loading and pinning it
 * first if nothing is pinned), recorded in the pinned map sl_devices,
 * which is how `detach` and `status` know the devices.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "instance/hook.h"
#include "instance/instance_maps.h"
#include "instance/load.h"
#include "instance/loader.h"
#include "util/log.h"

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
	err = mode == SL_MODE_TC ? sl_hook_attach_tc(ifindex, dev, prog_fd) :
				   sl_hook_attach_xdp(ifindex, dev, prog_fd, mode);
	if (err)
		goto err_maps;
	memset(&rec, 0, sizeof(rec));
	snprintf(rec.name, sizeof(rec.name), "%s", dev);
	rec.mode = mode;
	rec.prog_id = sl_prog_id(prog_fd);
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
		sl_hook_detach_tc(ifindex);
	else
		sl_hook_detach_xdp(ifindex, dev, prog_fd, mode);
err_maps:
	sl_maps_close(&m);
err_progs:
	close(xdp_fd);
	close(tc_fd);
	if (loaded)
		sl_unpin_if_unused();
	return err;
}
