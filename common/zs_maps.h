/* SPDX-License-Identifier: BSD-3-Clause */
/* One line of /proc/PID/maps, parsed one way for every reader of it (the
 * load bias of a PIE, the modules sent to the unwinder, the unwinder's code
 * ranges):
 *
 *   7f93bc08000-7f93bd5e000 r-xp 00026000 fe:00 332835     /usr/lib/libc.so.6
 *
 * The path is everything after the inode and the blanks that pad it: it may
 * hold spaces, ends in " (deleted)" when the file was removed, is a name in
 * brackets for the kernel's own mappings ([heap], [stack], [vdso]) and is
 * empty for anonymous memory. */
#ifndef ZS_MAPS_H
#define ZS_MAPS_H

#include <stddef.h>
#include <stdint.h>

typedef struct zs_maps_line {
    uint64_t start, end;  /* the mapping is [start, end) */
    char perms[5];        /* "r-xp": read, write, execute, p(rivate) or s(hared) */
    uint64_t offset;      /* of start in the file */
    unsigned dev_major, dev_minor;
    uint64_t inode;       /* 0: no file */
    const char *path;     /* into the line, not copied; runs to the line's end */
    size_t path_len;
} zs_maps_line;

/* Parses the len bytes of line (one trailing '\n' allowed). 0, or -1 when
 * they are not a maps line (*out is then undefined). */
int zs_maps_parse(const char *line, size_t len, zs_maps_line *out);

#endif
