/* SPDX-License-Identifier: BSD-3-Clause */
/* Why the kernel refuses this process access to another: advice that fits
 * the user who got the refusal. */
#include "targets/rec_access.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The value of a "Key:" line of /proc/WHO/status, or "" when there is none. */
static void status_value(const char *who, const char *key, char *out, size_t len)
{
    char path[64], line[256];
    size_t klen = strlen(key);
    snprintf(path, sizeof path, "/proc/%s/status", who);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen))
            continue;
        const char *v = line + klen + strspn(line + klen, " \t");
        snprintf(out, len, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    if (f)
        fclose(f);
}

/* The first line of a small file, or "" when it cannot be read. */
static void first_line(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f && fgets(out, (int)len, f))
        out[strcspn(out, "\n")] = '\0';
    if (f)
        fclose(f);
}

/* CAP_SYS_PTRACE (bit 19) in this process's effective set. */
static int can_trace_any(void)
{
    char caps[32];
    status_value("self", "CapEff:", caps, sizeof caps);
    return (strtoull(caps, NULL, 16) >> 19) & 1;
}

/* Kernel.yama.ptrace_scope, or -1 without Yama. */
static int yama_scope(void)
{
    char v[16];
    first_line("/proc/sys/kernel/yama/ptrace_scope", v, sizeof v);
    return v[0] ? atoi(v) : -1;
}

int rec_access_host_user_ns(void)
{
    char map[128];
    unsigned long inside = 1, outside = 1, count = 0;
    first_line("/proc/self/uid_map", map, sizeof map);
    return sscanf(map, "%lu %lu %lu", &inside, &outside, &count) == 3 && inside == 0 && outside == 0 &&
           count == 4294967295UL;
}

int rec_access_host_pids(void)
{
    char name[32];
    status_value("2", "Name:", name, sizeof name);
    return !strcmp(name, "kthreadd");
}

void rec_access_denied_why(pid_t pid, char *buf, size_t len)
{
    char who[32], tracer[32], comm[64] = "", path[64];
    snprintf(who, sizeof who, "%d", (int)pid);
    status_value(who, "TracerPid:", tracer, sizeof tracer);
    int scope = yama_scope();
    if (atoi(tracer) > 0) {
        snprintf(path, sizeof path, "/proc/%s/comm", tracer);
        first_line(path, comm, sizeof comm);
        snprintf(buf, len, "pid %d is traced already, by pid %s (%s): one tracer at a time; detach "
                 "that one (a debugger, strace, another recorder) first", (int)pid, tracer,
                 comm[0] ? comm : "?");
    } else if (scope == 3) {
        snprintf(buf, len, "kernel.yama.ptrace_scope is 3: no process may trace another until the "
                 "next boot");
    } else if (!can_trace_any() && geteuid() != 0) {
        snprintf(buf, len, "run as root or with CAP_SYS_PTRACE%s",
                 scope == 1   ? " (kernel.yama.ptrace_scope is 1: without it only a process's own "
                                "children can be traced)"
                 : scope == 2 ? " (kernel.yama.ptrace_scope is 2: no process can be traced without it)"
                              : "");
    } else if (!can_trace_any()) {
        snprintf(buf, len, "the recorder runs as root but without CAP_SYS_PTRACE (a container or a "
                 "service's sandbox dropped it): grant it (docker run --cap-add=SYS_PTRACE; "
                 "AmbientCapabilities=CAP_SYS_PTRACE), or run the recorder on the host");
    } else if (!rec_access_host_user_ns()) {
        snprintf(buf, len, "the recorder has CAP_SYS_PTRACE only in its own user namespace (a "
                 "container's), and pid %d is outside it: run the recorder on the host", (int)pid);
    } else if (!rec_access_host_pids()) {
        snprintf(buf, len, "the recorder has CAP_SYS_PTRACE, but runs in a container (a PID namespace "
                 "of its own), whose runtime does not let it trace pid %d: run the recorder on the "
                 "host, with the host's pid of zeek", (int)pid);
    } else {
        snprintf(buf, len, "the recorder has CAP_SYS_PTRACE, yet the kernel refused: a security "
                 "module (Landlock, AppArmor, SELinux: the audit log says which) or a sandbox around "
                 "the recorder forbids tracing pid %d; run the recorder on the host, outside any "
                 "sandbox", (int)pid);
    }
}
