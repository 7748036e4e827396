// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The upgrade: this build's programs in place of another build's, on the
 * maps whose layout is unchanged, every recorded device moved over.
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "instance/btf_same.h"
#include "instance/build_id.h"
#include "instance/hook.h"
#include "instance/instance_maps.h"
#include "instance/load.h"
#include "instance/loader.h"
#include "util/clock.h"
#include "util/log.h"
#include "slicelimit.skel.h"

#define SL_MAX_UPGRADE_DEVICES	64

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

/* Would libbpf reuse the pinned map at PATH for MAP (its checks in
 * map_is_reuse_compat)? 1 yes, 0 no (WHY says what differs), -errno.
 */
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
	int err;

	if (rec->mode == SL_MODE_TC) {
		err = sl_hook_replace_tc(ifindex, rec->name, new_fd);
	} else if (sl_hook_xdp_prog_on(ifindex, rec->mode) == rec->prog_id) {
		err = sl_hook_replace_xdp(ifindex, rec->name, rec->mode, old_fd,
					  new_fd);
	} else {
		sl_hook_detach_xdp(ifindex, rec->name, old_fd, rec->mode);
		err = sl_hook_attach_xdp(ifindex, rec->name, new_fd, rec->mode);
	}
	if (err)
		return err;
	rec->prog_id = sl_prog_id(new_fd);
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
	    !sl_hook_xdp_prog_on(d->ifindex[i], d->recs[i].mode) &&
	    !sl_hook_attach_xdp(d->ifindex[i], d->recs[i].name, old_xdp,
				d->recs[i].mode))
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
	sl_init_newcomers(skel);
	err = swap_devices(skel, &devs, old_xdp, old_tc);
	if (err)
		goto err_restore;
	unlink(SL_PROG_XDP_PIN);
	unlink(SL_PROG_TC_PIN);
	unlink(SL_PROG_CHECK_PIN);
	err = sl_pin_programs(skel, "new programs");
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
