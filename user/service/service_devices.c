// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The devices a service run holds: attached by it, or adopted from a run
 * before it; given back, last first, when a start or a reload fails, and
 * at the stop unless the config keeps them attached.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "instance/loader.h"
#include "util/log.h"
#include "service/service_run.h"

/* Attach what the config names and is not attached yet, and note in st
 * how this run holds each device. One it holds already keeps how it came:
 * a reload must not turn "attached" into "adopted". A failure detaches
 * again the devices this call attached, last first; st is unchanged.
 */
int sl_run_attach_devices(const struct sl_service_config *cfg,
			  struct sl_service_state *st)
{
	struct sl_service_device held[SL_MAX_DEVICES] = {};
	struct sl_load_opts lo = { .clients = cfg->clients };
	bool fresh[SL_MAX_DEVICES] = {};
	enum sl_service_how how;
	unsigned i;
	int err;

	for (i = 0; i < cfg->nr_devices; i++) {
		const struct sl_config_device *d = &cfg->devices[i];

		how = sl_service_device_how(st, d->name);
		if (sl_is_attached(d->name)) {
			if (how == SL_SERVICE_NONE) {
				how = SL_SERVICE_ADOPTED;
				pr_notice("%s: already attached: adopted", d->name);
			}
		} else {
			err = sl_attach(d->name, d->mode, &lo);
			if (err)
				goto err_detach;
			fresh[i] = true;
			how = SL_SERVICE_ATTACHED;
			pr_notice("%s: attached (%s)", d->name, sl_mode_name(d->mode));
		}
		snprintf(held[i].name, sizeof(held[i].name), "%s", d->name);
		held[i].how = how;
	}
	memcpy(st->dev, held, sizeof(held));
	st->nr_devices = cfg->nr_devices;
	return 0;

err_detach:
	while (i--)
		if (fresh[i])
			sl_detach(cfg->devices[i].name);
	return err;
}

/* A start that fails takes back the devices this run attached, last
 * first; not those it adopted: they were running before it.
 */
void sl_run_detach_attached(const struct sl_service_state *st)
{
	unsigned i;

	for (i = st->nr_devices; i--;)
		if (st->dev[i].how == SL_SERVICE_ATTACHED)
			sl_detach(st->dev[i].name);
}

/* A reload that failed after attaching: the devices it attached go
 * again, and the service holds what it held before (st = before, its
 * counters kept), so that the stop finds every device it must detach.
 */
void sl_run_put_back_devices(struct sl_service_state *st,
			     const struct sl_service_state *before)
{
	unsigned i;

	for (i = st->nr_devices; i--;) {
		if (st->dev[i].how != SL_SERVICE_ATTACHED ||
		    sl_service_device_how(before, st->dev[i].name) != SL_SERVICE_NONE)
			continue;
		if (!sl_detach(st->dev[i].name))
			pr_notice("%s: detached again (the reload failed)",
				  st->dev[i].name);
	}
	memcpy(st->dev, before->dev, sizeof(st->dev));
	st->nr_devices = before->nr_devices;
}

/* root's part of the stop: by the service itself, or by its monitor */
void sl_run_stop_devices(struct sl_run *r)
{
	unsigned i;

	/* no service holds the devices from here on */
	sl_service_state_unpin();
	if (!r->cfg.keep_attached) {
		for (i = 0; i < r->cfg.nr_devices; i++)
			if (!sl_detach(r->cfg.devices[i].name))
				pr_notice("%s: detached", r->cfg.devices[i].name);
		if (access(SL_PIN_DIR, F_OK))
			pr_notice("unpinned %s", SL_PIN_DIR);
		else if (!sl_unpin_if_unused() && access(SL_PIN_DIR, F_OK))
			pr_notice("unpinned %s", SL_PIN_DIR);
	} else {
		pr_warn("keep_attached: the programs stay attached and enforcing");
	}
}
