// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include "cli/write_guard.h"
#include "util/log.h"
#include "instance/pin_lock.h"
#include "service/state.h"

static int write_begin(const char *what, bool force, bool rules)
{
	struct sl_service_state svc;
	int err = sl_writer_lock();

	if (err)
		return err;
	if (!sl_service_holds_pins())
		return 0;
	if (sl_service_state_read(&svc))
		svc = (struct sl_service_state){};
	if (force) {
		pr_warn("--force: %s changes what the service (pid %u) manages; 'slicelimit reload' puts %.*s back",
			what, svc.pid, (int)sizeof(svc.config), svc.config);
		return 0;
	}
	/* the file to edit: the rule file the service applies, for rules */
	if (rules && svc.rules[0])
		pr_error("%s: refused: the service (pid %u, config %.*s) manages this instance and applies the rule file %.*s; change %.*s and run 'slicelimit reload', or give --force",
			 what, svc.pid, (int)sizeof(svc.config), svc.config,
			 (int)sizeof(svc.rules), svc.rules,
			 (int)sizeof(svc.rules), svc.rules);
	else
		pr_error("%s: refused: the service (pid %u, config %.*s) manages this instance; change %.*s and run 'slicelimit reload', or give --force",
			 what, svc.pid, (int)sizeof(svc.config), svc.config,
			 (int)sizeof(svc.config), svc.config);
	sl_writer_unlock();
	return -EBUSY;
}

int sl_write_begin(const char *what, bool force)
{
	return write_begin(what, force, false);
}

int sl_write_begin_rules(const char *what, bool force)
{
	return write_begin(what, force, true);
}

void sl_write_end(void)
{
	sl_writer_unlock();
}
