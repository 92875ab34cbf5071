/* SPDX-License-Identifier: BSD-3-Clause */
/* zeek-spy-convert --info: what is in a recording, in a few lines. */
#ifndef CONV_INFO_H
#define CONV_INFO_H

#include <stdio.h>

/* Describes each recording; a bad one gets an error line and the rest are
 * still described. Returns the number of recordings that could not be read. */
int conv_info(char **paths, int n, FILE *out);

#endif
