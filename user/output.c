// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Output shared by every command: JSON documents and usage text. */
#include <stdio.h>
#include "commands.h"
#include "common.h"

void sl_print_json(json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o,
		(sl_pretty ? JSON_C_TO_STRING_PRETTY : JSON_C_TO_STRING_PLAIN) |
		JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

int sl_usage(const char *help, bool error)
{
	fputs(help, error ? stderr : stdout);
	return error ? SL_EXIT_USAGE : SL_EXIT_OK;
}
