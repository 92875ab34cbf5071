/* Output files are written to a temporary file beside the target and renamed
 * into place, so a reader never sees half a profile and an interrupted
 * converter leaves the previous output intact. */
#ifndef CONV_OUTPUT_H
#define CONV_OUTPUT_H

#include <stdio.h>

#include "zs_error.h"

typedef struct conv_output {
    FILE *file;
    char *path;
    char *tmp; /* NULL when writing to stdout */
} conv_output;

/* path "-" means stdout. */
int conv_output_open(conv_output *o, const char *path, zs_error *err);
/* Flushes, syncs and renames; closes o in every case. */
int conv_output_commit(conv_output *o, zs_error *err);
/* Removes the temporary file. */
void conv_output_discard(conv_output *o);

#endif
