/* SPDX-License-Identifier: BSD-3-Clause */
/* The sandbox a forked child enters before it parses input written by
 * anyone (executables, shared libraries, their DWARF and unwind tables):
 * root becomes nobody, no new privileges, a system-call filter, resource
 * limits, and death with the recorder. A parser bug then owns nothing. */
#ifndef REC_SANDBOX_H
#define REC_SANDBOX_H

#include <sys/resource.h>

typedef struct rec_sandbox_limits {
    int cpu_seconds;       /* 0: none (a helper that lives as long as the recording) */
    rlim_t address_space;  /* bytes; 0: none */
    rlim_t open_files;
    int nice;              /* normal scheduling at this nice value, whatever the
                              recorder's (which may be real-time) */
} rec_sandbox_limits;

/* Keeps stdin/out/err (as /dev/null) and the descriptors in keep; 0 when
 * the child may go on parsing, -1 when it must exit at once. */
int rec_sandbox_enter(const rec_sandbox_limits *lim, const int *keep, int nkeep);

#endif
