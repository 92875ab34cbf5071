/* SPDX-License-Identifier: BSD-3-Clause */
#include "sampling/rec_cpu.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rec_cpu_open(rec_cpu *c, pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    c->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
    return c->stat_fd < 0 ? -1 : 0;
}

void rec_cpu_close(rec_cpu *c)
{
    if (c->stat_fd >= 0)
        close(c->stat_fd);
    c->stat_fd = -1;
}

/* Field `field` (1-based, as proc(5) counts) of a /proc/PID/stat line,
 * or NULL. The command name (field 2) may hold spaces and parentheses:
 * fields are counted from the last ')'. */
static const char *stat_field(const char *buf, int field)
{
    const char *p = strrchr(buf, ')');
    for (int at = 2; p && at < field; at++)
        p = strchr(p + 1, ' ');
    return p ? p + 1 : NULL;
}

int rec_cpu_current(rec_cpu *c)
{
    char buf[1024];
    if (c->stat_fd < 0)
        return -1;
    ssize_t n = pread(c->stat_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = stat_field(buf, 39); /* "processor" */
    if (!p)
        return -1;
    char *end;
    long cpu = strtol(p, &end, 10);
    return end == p || cpu < 0 || cpu >= CPU_SETSIZE ? -1 : (int)cpu;
}

uint64_t rec_cpu_time_ns(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *utime = stat_field(buf, 14), *stime = stat_field(buf, 15);
    long tick = sysconf(_SC_CLK_TCK);
    if (!utime || !stime || tick <= 0)
        return 0;
    unsigned long long ticks = strtoull(utime, NULL, 10) + strtoull(stime, NULL, 10);
    return (uint64_t)(ticks * (1000000000ULL / (unsigned long long)tick));
}

int rec_cpu_pinned(pid_t pid)
{
    cpu_set_t set;
    if (sched_getaffinity(pid, sizeof set, &set) != 0 || CPU_COUNT(&set) != 1)
        return -1;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &set))
            return i;
    return -1;
}

int rec_cpu_move_self(int cpu, const cpu_set_t *home)
{
    if (cpu < 0 || !CPU_ISSET(cpu, home) || cpu == sched_getcpu())
        return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0;
}
