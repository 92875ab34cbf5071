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

int rec_cpu_current(rec_cpu *c)
{
    char buf[1024];
    if (c->stat_fd < 0)
        return -1;
    ssize_t n = pread(c->stat_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: count
     * fields from the last ')'. "processor" is field 39. */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    for (int field = 2; field < 39; field++) {
        p = strchr(p + 1, ' ');
        if (!p)
            return -1;
    }
    char *end;
    long cpu = strtol(p + 1, &end, 10);
    return end == p + 1 || cpu < 0 || cpu >= CPU_SETSIZE ? -1 : (int)cpu;
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
