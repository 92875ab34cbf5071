#include "rec_discover.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zs_elf.h"

typedef struct verdict {
    dev_t dev;
    ino_t ino;
    int is_zeek;
} verdict;

struct rec_discover {
    verdict *known;
    size_t n, cap;
};

rec_discover *rec_discover_new(void) { return calloc(1, sizeof(rec_discover)); }

void rec_discover_free(rec_discover *d)
{
    if (d)
        free(d->known);
    free(d);
}

static int judge(const char *exe)
{
    zs_elf_symbol syms[3] = {{"version"}, {"call_stack"}, {"_ZN4zeek6detail10call_stackE"}};
    zs_elf_info info;
    if (zs_elf_lookup(exe, syms, 3, &info, NULL))
        return 0;
    return syms[0].found && (syms[1].found || syms[2].found);
}

static int is_zeek(rec_discover *d, pid_t pid)
{
    char exe[64];
    struct stat st;
    snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
    if (stat(exe, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->known[i].dev == st.st_dev && d->known[i].ino == st.st_ino)
            return d->known[i].is_zeek;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        verdict *v = realloc(d->known, cap * sizeof *v);
        if (!v)
            return 0;
        d->known = v;
        d->cap = cap;
    }
    int yes = judge(exe);
    d->known[d->n++] = (verdict){st.st_dev, st.st_ino, yes};
    return yes;
}

size_t rec_discover_scan(rec_discover *d, pid_t *pids, size_t max)
{
    DIR *dir = opendir("/proc");
    size_t n = 0;
    if (!dir)
        return 0;
    struct dirent *e;
    while ((e = readdir(dir)) && n < max) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid != getpid() && is_zeek(d, pid))
            pids[n++] = pid;
    }
    closedir(dir);
    return n;
}
