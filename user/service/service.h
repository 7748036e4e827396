/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SL_SERVICE_SERVICE_H
#define SL_SERVICE_SERVICE_H

struct sl_service_user;

/* Run the service until SIGTERM/SIGINT, as USER once it attached (unless
 * USER is root); 0 or -errno.
 */
int sl_service_run(const char *config_path, const struct sl_service_user *user);

#endif /* SL_SERVICE_SERVICE_H */
