// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The load: the programs and maps are loaded once and pinned under
 * SL_PIN_DIR; every attachment (any device, XDP or TC) runs the same pinned
 * program on the same maps, so a client is counted per host. Later loads
 * reuse the pins.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "instance/build_id.h"
#include "instance/instance_maps.h"
#include "instance/load.h"
#include "instance/loader.h"
#include "instance/pin_lock.h"
#include "util/log.h"
#include "slicelimit.skel.h"

int sl_prog_id(int fd)
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

/* unpinned in reverse order on failure */
int sl_pin_programs(struct slicelimit_bpf *skel, const char *what)
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

void sl_init_newcomers(struct slicelimit_bpf *skel)
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
	sl_init_newcomers(skel);
	err = sl_pin_programs(skel, "programs");
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

/* the HTTP check API's program, pinned with the others */
int sl_open_check_prog(void)
{
	int fd = bpf_obj_get(SL_PROG_CHECK_PIN);

	return fd < 0 ? -errno : fd;
}
