/* SPDX-License-Identifier: BSD-3-Clause */
#include "targets/rec_discover.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "targets/rec_file_id.h"
#include "targets/rec_inspect.h"
#include "zs_grow.h"

typedef enum judgement { NOT_ZEEK, ZEEK, UNINSPECTABLE, GAVE_UP } judgement;

/* One judgement per executable: a byte for each file of the host, where
 * rec_inspect_cache keeps the whole answer for the few zeeks. */
typedef struct verdict {
    rec_file_id file;
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
    int cancel_fd;
};

rec_discover *rec_discover_new(void) { return calloc(1, sizeof(rec_discover)); }

void rec_discover_free(rec_discover *d)
{
    if (d)
        free(d->known);
    free(d);
}

size_t rec_discover_parsed(const rec_discover *d) { return d->parsed; }
void rec_discover_set_cancel(rec_discover *d, int fd) { d->cancel_fd = fd; }

static judgement judge(const char *exe, pid_t pid, int cancel_fd)
{
    char real[4096], shown[4200];
    ssize_t n = readlink(exe, real, sizeof real - 1);
    real[n > 0 ? n : 0] = '\0';
    snprintf(shown, sizeof shown, "pid %d (%s)", (int)pid, real);
    rec_inspect_request req = {.path = exe, .shown = shown, .real_path = real,
                               .syms = {"version", "call_stack", "_ZN4zeek6detail10call_stackE"},
                               .nsyms = 3, .cancel_fd = cancel_fd};
    rec_inspect_verdict v;
    zs_error err = {0};
    if (rec_inspect(&req, &v, &err))
        return err.code == ZS_E_EXE_REFUSED ? UNINSPECTABLE : err.code == ZS_E_TARGET ? GAVE_UP : NOT_ZEEK;
    if (v.elf_rc)
        return v.elf_err.code == ZS_E_EXE_REFUSED ? UNINSPECTABLE : NOT_ZEEK;
    return v.syms[0].found && (v.syms[1].found || v.syms[2].found) ? ZEEK : NOT_ZEEK;
}

static int is_candidate(rec_discover *d, pid_t pid)
{
    char exe[64];
    struct stat st;
    snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
    if (stat(exe, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    for (size_t i = 0; i < d->n; i++)
        if (rec_file_id_same(&d->known[i].file, &st))
            return d->known[i].is != NOT_ZEEK;
    if (d->n >= CACHE_MAX)
        d->n = 0;
    if (zs_grow(&d->known, &d->cap, d->n + 1, sizeof *d->known, 64))
        return 0;
    judgement is = judge(exe, pid, d->cancel_fd);
    if (is == GAVE_UP) /* told to stop: no verdict */
        return 0;
    d->parsed++;
    d->known[d->n++] = (verdict){rec_file_id_of(&st), is};
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
