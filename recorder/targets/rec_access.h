/* SPDX-License-Identifier: BSD-3-Clause */
/* Why a process cannot be traced or read, in words for the user, and
 * whether the recorder sees the host's pids. */
#ifndef REC_ACCESS_H
#define REC_ACCESS_H

#include <stddef.h>
#include <sys/types.h>

/* Why the kernel refused this process access to pid (to trace it, to read
 * /proc/PID/exe or its memory: one check), as advice for the user who got
 * the refusal: without the privilege, how to get it; with it (CAP_SYS_PTRACE
 * effective), what else refuses (another tracer, Yama's ptrace_scope 3, a
 * user or PID namespace, a security module). One phrase, no newline. */
void rec_access_denied_why(pid_t pid, char *buf, size_t len);

/* Whether this process sees the host's PID namespace (where pid 2 is the
 * kernel's kthreadd), not a container's, whose pids differ from the host's. */
int rec_access_host_pids(void);
/* Whether this process is in the initial user namespace, whose uid map is
 * the whole range: a capability held elsewhere counts only inside. */
int rec_access_host_user_ns(void);

#endif
