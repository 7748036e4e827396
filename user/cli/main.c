// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* slicelimit: all of the command line is sl_main (cli/dispatch.c), which the argv
 * fuzzer calls too; main is only the process around it.
 */
#include "cli/commands.h"

int main(int argc, char **argv)
{
	return sl_main(argc, argv);
}
