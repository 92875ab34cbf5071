/* SPDX-License-Identifier: BSD-3-Clause */
#include "push/conv_watch.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "push/conv_push.h"
#include "zs_grow.h"
#include "zs_reader.h"

#define RETRY_FIRST_S 20
#define RETRY_MAX_S 600

/* A part whose push failed: tried again after `delay` seconds, from
 * RETRY_FIRST_S and doubling up to RETRY_MAX_S, so that a back end that
 * refuses it (or is down for hours) gets a try and the journal a line every
 * 10 minutes, not every look. */
typedef struct failing {
    char *path;
    time_t next;
    unsigned delay;
    int seen; /* still in the directory at this look */
} failing;

typedef struct failures {
    failing *v;
    size_t n, cap;
} failures;

static failing *find_failing(failures *f, const char *path)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->v[i].path, path))
            return &f->v[i];
    return NULL;
}

static void note_failure(failures *f, const char *path, time_t now)
{
    failing *e = find_failing(f, path);
    if (!e) {
        char *copy = strdup(path);
        if (!copy || zs_grow(&f->v, &f->cap, f->n + 1, sizeof *f->v, 16)) {
            free(copy);
            return; /* out of memory: tried at every look */
        }
        e = &f->v[f->n++];
        *e = (failing){copy, 0, RETRY_FIRST_S, 1};
    } else {
        e->delay = e->delay * 2 > RETRY_MAX_S ? RETRY_MAX_S : e->delay * 2;
    }
    e->next = now + e->delay;
}

/* Forgets the parts pushed since, or gone from the directory. */
static void forget_settled(failures *f, int (*pushed)(const char *))
{
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (f->v[i].seen && !pushed(f->v[i].path)) {
            f->v[i].seen = 0;
            f->v[k++] = f->v[i];
        } else {
            free(f->v[i].path);
        }
    }
    f->n = k;
}

static volatile sig_atomic_t stop_watching;
static void on_stop(int sig) { stop_watching = sig; }

/* Whether the recorder finished path: its trailer is there. */
static int finished(const char *path)
{
    zs_error err = {0};
    zs_reader *r = zs_reader_open(path, &err);
    zs_record rec;
    int trailer = 0;
    while (r && zs_reader_next(r, &rec, &err) > 0)
        trailer |= rec.type == ZS_REC_TRAILER;
    zs_reader_close(r);
    return trailer;
}

typedef enum { HELD, NOT_HELD, UNKNOWN } holding;

/* Whether any process has st's file open, from every /proc/PID/fd. A
 * directory that cannot be read (another user's, without root) leaves it
 * UNKNOWN: a part that may still be written is never pushed on a guess. */
static holding held_open(const struct stat *st)
{
    DIR *proc = opendir("/proc");
    if (!proc)
        return UNKNOWN;
    holding h = NOT_HELD;
    struct dirent *p;
    while (h == NOT_HELD && (p = readdir(proc))) {
        if (p->d_name[0] < '1' || p->d_name[0] > '9')
            continue;
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%.20s/fd", p->d_name);
        DIR *fds = opendir(dir);
        if (!fds) {
            if (errno != ENOENT) /* ENOENT: it exited meanwhile */
                h = UNKNOWN;
            continue;
        }
        struct dirent *f;
        while (h == NOT_HELD && (f = readdir(fds))) {
            char fd[128];
            struct stat o;
            snprintf(fd, sizeof fd, "%s/%.40s", dir, f->d_name);
            if (f->d_name[0] != '.' && stat(fd, &o) == 0 && o.st_dev == st->st_dev &&
                o.st_ino == st->st_ino)
                h = HELD;
        }
        closedir(fds);
    }
    closedir(proc);
    return h;
}

static int marked_pushed(const char *path)
{
    char marker[PATH_MAX + 16];
    return conv_push_marked(path, marker, sizeof marker);
}

/* Whether path is ready to push: not marked, and finished or abandoned. */
static int ready(const char *path)
{
    struct stat st;
    if (marked_pushed(path) || stat(path, &st) != 0)
        return 0;
    holding h = held_open(&st);
    if (h == HELD)
        return 0; /* being written: not read at all */
    return finished(path) || h == NOT_HELD;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The paths of the recordings (*.zspy) in dir, in name order; NULL with
 * *n 0 when there are none. */
static char **recordings_in(const char *dir, size_t *n, zs_error *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        zs_fail(err, ZS_E_IO, "--watch %s: %s", dir, strerror(errno));
        return NULL;
    }
    char **names = NULL;
    size_t cap = 0;
    struct dirent *e;
    *n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".zspy"))
            continue;
        char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, e->d_name) < 0 ||
            zs_grow(&names, &cap, *n + 1, sizeof *names, 64)) {
            free(path);
            break; /* out of memory: the rest at the next look */
        }
        names[(*n)++] = path;
    }
    closedir(d);
    if (*n)
        qsort(names, *n, sizeof *names, by_name);
    return names;
}

int conv_watch(const char *prog, const char *dir, double every_s, int quiet, conv_watch_push push,
               void *ctx)
{
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    failures failed = {0};
    int rc = 0;
    while (!stop_watching) {
        zs_error err = {0};
        size_t n = 0;
        char **names = recordings_in(dir, &n, &err);
        if (err.code) {
            zs_error_print(prog, &err);
            rc = 1;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            failing *f = find_failing(&failed, names[i]);
            time_t now = time(NULL);
            if (f)
                f->seen = 1;
            err = (zs_error){0};
            if (!stop_watching && (!f || now >= f->next) && ready(names[i]) &&
                push(ctx, names[i], &err)) {
                zs_error_print(prog, &err);
                note_failure(&failed, names[i], now);
                if ((f = find_failing(&failed, names[i])) && !quiet)
                    fprintf(stderr, "%s: %s: tried again in %u s\n", prog, names[i], f->delay);
            }
            free(names[i]);
        }
        free(names);
        forget_settled(&failed, marked_pushed);
        for (int t = 0; t < (int)(every_s * 10 + 0.5) && !stop_watching; t++)
            usleep(100000);
    }
    for (size_t i = 0; i < failed.n; i++)
        free(failed.v[i].path);
    free(failed.v);
    if (rc == 0 && !quiet)
        fprintf(stderr, "%s: stopped watching on signal %d\n", prog, (int)stop_watching);
    return rc;
}
