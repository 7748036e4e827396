/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SL_SERVICE_H
#define SL_SERVICE_H

/* Run the service until SIGTERM/SIGINT; 0 or -errno. */
int sl_service_run(const char *config_path);

#endif /* SL_SERVICE_H */
