#include "rec_discover.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rec_inspect.h"

typedef enum judgement { NOT_ZEEK, ZEEK, UNINSPECTABLE } judgement;

/* An executable is the same file while its inode, size and mtime are: a
 * binary rewritten in place (same inode) is judged again. */
typedef struct verdict {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    judgement is;
} verdict;

/* Distinct executables remembered; beyond it the cache starts over (a host
 * does not run that many different programs; a churn of rebuilt binaries
 * must not grow it forever). */
enum { CACHE_MAX = 8192 };

struct rec_discover {
    verdict *known;
    size_t n, cap;
    size_t parsed;
};

rec_discover *rec_discover_new(void) { return calloc(1, sizeof(rec_discover)); }

void rec_discover_free(rec_discover *d)
{
    if (d)
        free(d->known);
    free(d);
}

size_t rec_discover_parsed(const rec_discover *d) { return d->parsed; }

static judgement judge(const char *exe, pid_t pid)
{
    char real[4096], shown[4200];
    ssize_t n = readlink(exe, real, sizeof real - 1);
    real[n > 0 ? n : 0] = '\0';
    snprintf(shown, sizeof shown, "pid %d (%s)", (int)pid, real);
    rec_inspect_request req = {.path = exe, .shown = shown, .real_path = real,
                               .syms = {"version", "call_stack", "_ZN4zeek6detail10call_stackE"},
                               .nsyms = 3};
    rec_inspect_verdict v;
    zs_error err = {0};
    if (rec_inspect(&req, &v, &err))
        return err.code == ZS_E_EXE_REFUSED ? UNINSPECTABLE : NOT_ZEEK;
    if (v.elf_rc)
        return v.elf_err.code == ZS_E_EXE_REFUSED ? UNINSPECTABLE : NOT_ZEEK;
    return v.syms[0].found && (v.syms[1].found || v.syms[2].found) ? ZEEK : NOT_ZEEK;
}

static int same_file(const verdict *v, const struct stat *st)
{
    return v->dev == st->st_dev && v->ino == st->st_ino && v->size == st->st_size &&
           v->mtime.tv_sec == st->st_mtim.tv_sec && v->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static int is_candidate(rec_discover *d, pid_t pid)
{
    char exe[64];
    struct stat st;
    snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
    if (stat(exe, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    for (size_t i = 0; i < d->n; i++)
        if (same_file(&d->known[i], &st))
            return d->known[i].is != NOT_ZEEK;
    if (d->n >= CACHE_MAX)
        d->n = 0;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        verdict *v = realloc(d->known, cap * sizeof *v);
        if (!v)
            return 0;
        d->known = v;
        d->cap = cap;
    }
    judgement is = judge(exe, pid);
    d->parsed++;
    d->known[d->n++] = (verdict){st.st_dev, st.st_ino, st.st_size, st.st_mtim, is};
    return is != NOT_ZEEK;
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
        if (pid != getpid() && is_candidate(d, pid))
            pids[n++] = pid;
    }
    closedir(dir);
    return n;
}
