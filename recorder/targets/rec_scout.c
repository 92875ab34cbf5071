/* SPDX-License-Identifier: BSD-3-Clause */
#include "targets/rec_scout.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "targets/rec_discover.h"
#include "zs_grow.h"

enum { MAX_CANDIDATES = 1024 }; /* zeeks running at once that one scan considers */

/* A process seen by a scan: inspected once, whatever the verdict, for as
 * long as it lives (a pid used again by a new process is a new one). */
typedef struct known {
    pid_t pid;
    unsigned long long started; /* /proc/PID/stat's starttime */
    int seen;                   /* in the latest scan */
} known;

/* A start time no process has: the entry of one to be inspected again. */
#define NOT_STARTED (~0ULL)

struct rec_scout {
    const rec_layout_choice *choice;
    uint64_t interval_ns;
    rec_discover *discover;
    rec_inspect_cache *cache;
    int cancel[2];              /* written once: the thread must stop */
    pthread_t thread;
    int running;
    known *known;               /* the thread's own (or the caller's before start) */
    size_t nknown, known_cap;
    pthread_mutex_t lock;       /* guards the finds */
    rec_scout_find *finds;      /* a queue: taken from head */
    size_t head, nfinds, finds_cap;
    atomic_size_t waiting;      /* finds not taken yet, read without the lock */
    atomic_uint_fast64_t parsed, cached;
};

static unsigned long long start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold anything */
    unsigned long long t = 0;
    /* Fields after the name: state is the 3rd of the line, starttime the 22nd. */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                     &t) != 1)
        return 0;
    return t;
}

/* 1 when pid (started at `started`) was seen before; else remembers it. */
static int seen_before(rec_scout *sc, pid_t pid, unsigned long long started)
{
    for (size_t i = 0; i < sc->nknown; i++) {
        if (sc->known[i].pid == pid) {
            int same = sc->known[i].started == started;
            sc->known[i].started = started;
            sc->known[i].seen = 1;
            return same;
        }
    }
    if (zs_grow(&sc->known, &sc->known_cap, sc->nknown + 1, sizeof *sc->known, 64))
        return 1; /* no memory: not inspected now, tried again next scan */
    sc->known[sc->nknown++] = (known){pid, started, 1};
    return 0;
}

/* A process caught in the middle of its exec: looked at again next scan. */
static void look_again(rec_scout *sc, pid_t pid)
{
    for (size_t i = 0; i < sc->nknown; i++)
        if (sc->known[i].pid == pid)
            sc->known[i].started = NOT_STARTED;
}

/* Forgets the processes the latest scan did not see: gone, so that their
 * memory is not kept for the recorder's life. */
static void forget_unseen(rec_scout *sc)
{
    size_t kept = 0;
    for (size_t i = 0; i < sc->nknown; i++) {
        if (sc->known[i].seen) {
            sc->known[i].seen = 0;
            sc->known[kept++] = sc->known[i];
        }
    }
    sc->nknown = kept;
}

static void hand_over(rec_scout *sc, const rec_scout_find *f)
{
    pthread_mutex_lock(&sc->lock);
    if (sc->head && sc->head == sc->nfinds) /* all taken: start over */
        sc->head = sc->nfinds = 0;
    if (zs_grow(&sc->finds, &sc->finds_cap, sc->nfinds + 1, sizeof *sc->finds, 4) == 0) {
        sc->finds[sc->nfinds++] = *f;
        atomic_fetch_add(&sc->waiting, 1);
    }
    pthread_mutex_unlock(&sc->lock);
}

static int cancelled(const rec_scout *sc)
{
    struct pollfd p = {sc->cancel[0], POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

static void scan(rec_scout *sc)
{
    pid_t pids[MAX_CANDIDATES];
    size_t n = rec_discover_scan(sc->discover, pids, MAX_CANDIDATES);
    rec_target_inspector how = {sc->cache, sc->cancel[0]};
    rec_scout_find *f = malloc(sizeof *f);
    if (!f)
        return;
    for (size_t i = 0; i < n && !cancelled(sc); i++) {
        if (seen_before(sc, pids[i], start_time(pids[i])))
            continue;
        memset(f, 0, sizeof *f);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        f->ok = rec_target_open(pids[i], sc->choice, &how, &f->target, &f->why) == 0 &&
                rec_target_check(&f->target, &how, &f->why) == 0;
        f->target.pid = pids[i];
        if (!f->ok && f->why.code == ZS_E_STARTING) {
            look_again(sc, pids[i]);
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        f->inspect_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ULL + (uint64_t)t1.tv_nsec -
                        (uint64_t)t0.tv_nsec;
        if (!cancelled(sc))
            hand_over(sc, f);
    }
    free(f);
    forget_unseen(sc);
    uint64_t hits, runs;
    rec_inspect_cache_counts(sc->cache, &hits, &runs);
    atomic_store(&sc->parsed, runs + rec_discover_parsed(sc->discover));
    atomic_store(&sc->cached, hits);
}

static void *scout_main(void *arg)
{
    rec_scout *sc = arg;
    /* Housekeeping, not sampling: yield to zeek and to the sampling thread. */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
    for (;;) {
        struct pollfd p = {sc->cancel[0], POLLIN, 0};
        int r = poll(&p, 1, (int)(sc->interval_ns / 1000000));
        if (r > 0 || (r < 0 && errno != EINTR))
            return NULL;
        scan(sc);
    }
}

rec_scout *rec_scout_new(const rec_layout_choice *choice, uint64_t interval_ns, zs_error *err)
{
    rec_scout *sc = calloc(1, sizeof *sc);
    if (!sc) {
        zs_fail(err, ZS_E_NOMEM, "discovery");
        return NULL;
    }
    sc->choice = choice;
    sc->interval_ns = interval_ns;
    sc->cancel[0] = sc->cancel[1] = -1;
    pthread_mutex_init(&sc->lock, NULL);
    if (!(sc->discover = rec_discover_new()) || !(sc->cache = rec_inspect_cache_new()) ||
        pipe2(sc->cancel, O_CLOEXEC) != 0) {
        rec_scout_free(sc);
        zs_fail(err, ZS_E_NOMEM, "discovery");
        return NULL;
    }
    if (sc->cancel[0] == 0) { /* started without stdin: 0 means "none" to the inspector */
        sc->cancel[0] = fcntl(0, F_DUPFD_CLOEXEC, 3);
        close(0);
    }
    rec_discover_set_cancel(sc->discover, sc->cancel[0]);
    return sc;
}

void rec_scout_scan_now(rec_scout *sc) { scan(sc); }

int rec_scout_start(rec_scout *sc, zs_error *err)
{
    pthread_attr_t attr;
    struct sched_param normal = {.sched_priority = 0};
    sigset_t all, old;
    pthread_attr_init(&attr);
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
    pthread_attr_setschedparam(&attr, &normal);
    /* Every signal stays with the sampling thread. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&sc->thread, &attr, scout_main, sc);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return zs_fail(err, ZS_E_NOMEM, "discovery thread: %s", strerror(rc));
    sc->running = 1;
    return 0;
}

int rec_scout_next(rec_scout *sc, rec_scout_find *out)
{
    if (atomic_load(&sc->waiting) == 0)
        return 0;
    pthread_mutex_lock(&sc->lock);
    int got = sc->head < sc->nfinds;
    if (got) {
        *out = sc->finds[sc->head++];
        atomic_fetch_sub(&sc->waiting, 1);
    }
    pthread_mutex_unlock(&sc->lock);
    return got;
}

void rec_scout_counts(const rec_scout *sc, uint64_t *parsed, uint64_t *cached)
{
    *parsed = atomic_load(&sc->parsed);
    *cached = atomic_load(&sc->cached);
}

void rec_scout_free(rec_scout *sc)
{
    if (!sc)
        return;
    if (sc->running) {
        ssize_t w = write(sc->cancel[1], "x", 1);
        (void)w;
        pthread_join(sc->thread, NULL);
    }
    if (sc->cancel[0] >= 0) {
        close(sc->cancel[0]);
        close(sc->cancel[1]);
    }
    rec_discover_free(sc->discover);
    rec_inspect_cache_free(sc->cache);
    pthread_mutex_destroy(&sc->lock);
    free(sc->known);
    free(sc->finds);
    free(sc);
}
