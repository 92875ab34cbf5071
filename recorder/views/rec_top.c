/* SPDX-License-Identifier: BSD-3-Clause */
#include "views/rec_top.h"
#include "base/rec_constants.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frames/rec_memory.h"
#include "views/rec_top_term.h"
#include "views/rec_top_view.h"
#include "zs_grow.h"
#include "zs_intern.h"
#include "zs_resolver.h"

enum {
    KEY_POLL_NS = 50000000,  /* q is seen within this, or at the next tick if later */
    PLAIN_ROWS = 20,         /* functions per snapshot when stdout is not a terminal */
    EMPTY_FN = 0,            /* the pseudo-function of samples with no script frame */
};
#define SECOND_NS 1000000000ULL

/* A (pid, func, stmt) seen in a sample, and the function it was named as:
 * a Func with several bodies (an event's handlers) is one function per
 * body, and the same name in two processes is one function. */
typedef struct pair {
    uint64_t func, stmt;
    pid_t pid;
    uint32_t fn;
    uint32_t inlined_fn; /* a ZAM frame's innermost inlined function; NO_FN: none */
} pair;

enum { NO_FN = UINT32_MAX };

typedef struct fn {
    char *name;               /* printable ASCII: it comes from the target's memory */
    char *where;              /* "file:line" of the running body, "" for BiFs */
    uint64_t self, total;     /* since start */
    uint64_t wself, wtotal;   /* in the window */
    uint64_t stamp;           /* the last sample that counted it in total */
} fn;

struct rec_top {
    unsigned window_len;      /* --top-window */
    unsigned nb;              /* seconds kept: the window's and the one under way */
    int quiet;
    pair *pairs;              /* by id */
    size_t npairs, pairs_cap;
    zs_intern pair_index;     /* (pid, func, stmt) -> pair */
    zs_intern name_index;     /* name -> fn */
    fn *fns;
    size_t nfns, fns_cap;
    uint32_t *ring;           /* fns_cap x nb x {self, total}: the window per second */
    uint64_t *ring_samples;   /* nb */
    uint64_t *skipped_at;     /* nb: the session's skipped count as each second began */
    uint64_t stamp, samples, wsamples;
    pid_t pid;                /* the one process sampled, 0 once there are several */
    int seen_any;
    char version[64];
    uint64_t start_ns, sec, next_draw_ns, next_key_ns;
    int begun;
    rec_term term;
    rec_top_row *rows;
    size_t rows_cap;
    rec_top_text text;
    char scratch_dir[4096];
    char scratch_path[4200];
};

static uint64_t pair_hash(pid_t pid, const zs_frame *f)
{
    return zs_mix64(f->func ^ zs_mix64(f->stmt ^ ((uint64_t)(uint32_t)pid << 40)));
}

static int same_pair(const void *ctx, uint32_t id, const void *key)
{
    const pair *p = &((const rec_top *)ctx)->pairs[id], *k = key;
    return p->func == k->func && p->stmt == k->stmt && p->pid == k->pid;
}

static uint64_t name_hash(const char *s)
{
    return zs_fnv1a(ZS_FNV_SEED, s, strlen(s));
}

static int same_name(const void *ctx, uint32_t id, const void *key)
{
    return strcmp(((const rec_top *)ctx)->fns[id].name, key) == 0;
}

/* Room for one more function: fns, and its row of the ring (nb seconds of
 * {self, total}), which starts at zero. */
static int grow_fns(rec_top *t)
{
    size_t row = t->nb * 2 * sizeof *t->ring;
    size_t cap = t->fns_cap, ring_cap = t->fns_cap;
    if (zs_grow(&t->fns, &cap, t->nfns + 1, sizeof *t->fns, 128) ||
        zs_grow(&t->ring, &ring_cap, cap, row, 128))
        return -1;
    memset((char *)t->ring + t->fns_cap * row, 0, (cap - t->fns_cap) * row);
    t->fns_cap = cap;
    return 0;
}

/* A copy that cannot drive the terminal: the names come from the target's
 * memory, and an escape sequence there must not reach the screen. */
static char *printable(const char *s)
{
    char *c = strdup(s ? s : "");
    for (char *p = c; p && *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
    return c;
}

/* The function called name, added if new. */
static int intern(rec_top *t, const char *name, const char *file, int line, uint32_t *out)
{
    char *n = printable(name);
    if (!n)
        return -1;
    uint64_t h = name_hash(n);
    int64_t known = zs_intern_find(&t->name_index, h, same_name, t, n);
    if (known >= 0) {
        free(n);
        *out = (uint32_t)known;
        return 0;
    }
    char where[4200] = "";
    if (file && file[0] && line)
        snprintf(where, sizeof where, "%s:%d", file, line);
    else if (file && file[0]) /* a function ZAM inlined: its first line is not known */
        snprintf(where, sizeof where, "%s", file);
    size_t nl = strlen(name), wl = strlen(where);
    if (wl && nl > wl && strcmp(name + nl - wl, where) == 0)
        where[0] = '\0'; /* a handler body: its name says where it is */
    char *w = printable(where);
    if (!w || grow_fns(t) || zs_intern_add(&t->name_index, h, (uint32_t)t->nfns)) {
        free(n);
        free(w);
        return -1;
    }
    t->fns[t->nfns] = (fn){.name = n, .where = w};
    *out = (uint32_t)t->nfns++;
    return 0;
}

/* Names a pair seen for the first time, from live memory: the target runs
 * again by now, and a running frame's Func and statement are not freed. */
static int add_pair(rec_top *t, const rec_target *target, const zs_frame *f, uint64_t hash,
                    uint32_t *out, uint32_t *inlined)
{
    if (zs_grow(&t->pairs, &t->pairs_cap, t->npairs + 1, sizeof *t->pairs, 1024))
        return -1;
    pid_t pid = target->pid;
    zs_memory mem = rec_live_memory(&pid);
    zs_frame_info fi;
    if (zs_resolve_frame(&mem, &target->layout, f, &fi))
        return -1;
    int rc = intern(t, fi.name, fi.file, fi.start_line, out);
    *inlined = NO_FN;
    if (rc == 0 && fi.ninlined) /* a function ZAM inlined: its own row, as without ZAM */
        rc = intern(t, fi.inlined[fi.ninlined - 1].func, fi.inlined[fi.ninlined - 1].file, 0, inlined);
    zs_frame_info_free(&fi);
    if (rc || zs_intern_add(&t->pair_index, hash, (uint32_t)t->npairs))
        return -1;
    t->pairs[t->npairs++] = (pair){.func = f->func, .stmt = f->stmt, .pid = target->pid, .fn = *out,
                                   .inlined_fn = *inlined};
    return 0;
}

static uint32_t *bucket(const rec_top *t, uint32_t id, uint64_t sec)
{
    return &t->ring[((size_t)id * t->nb + (size_t)(sec % t->nb)) * 2];
}

/* Counts id once in this sample's total. */
static void count_total(rec_top *t, uint32_t id, uint64_t w)
{
    fn *f = &t->fns[id];
    if (f->stamp == t->stamp)
        return; /* recursion: already counted in this sample */
    f->stamp = t->stamp;
    f->total += w;
    f->wtotal += w;
    bucket(t, id, t->sec)[1] += (uint32_t)w;
}

int rec_top_sample(rec_top *t, const rec_target *target, const zs_frame *frames, size_t n,
                   uint64_t weight, zs_error *err)
{
    uint32_t inner = EMPTY_FN;
    t->stamp++;
    for (size_t k = 0; k < n; k++) {
        const zs_frame *f = &frames[k];
        pair key = {.func = f->func, .stmt = f->stmt, .pid = target->pid};
        uint64_t h = pair_hash(target->pid, f);
        int64_t at = zs_intern_find(&t->pair_index, h, same_pair, t, &key);
        uint32_t id, inlined;
        if (at >= 0) {
            id = t->pairs[at].fn;
            inlined = t->pairs[at].inlined_fn;
        } else if (add_pair(t, target, f, h, &id, &inlined)) {
            return zs_fail(err, ZS_E_NOMEM, "--top");
        }
        count_total(t, id, weight);
        inner = id;
        if (inlined != NO_FN) {
            count_total(t, inlined, weight);
            inner = inlined;
        }
    }
    if (n == 0)
        count_total(t, EMPTY_FN, weight);
    fn *f = &t->fns[inner];
    f->self += weight;
    f->wself += weight;
    bucket(t, inner, t->sec)[0] += (uint32_t)weight;
    t->samples += weight;
    t->wsamples += weight;
    t->ring_samples[t->sec % t->nb] += weight;
    if (!t->seen_any) {
        t->seen_any = 1;
        t->pid = target->pid;
        snprintf(t->version, sizeof t->version, "%s", target->zeek_version);
    } else if (t->pid != target->pid) {
        t->pid = 0;
    }
    return 0;
}

/* Moves the window on to second sec: the seconds that fall out of it are
 * subtracted and their buckets reused. */
static void roll(rec_top *t, uint64_t sec, uint64_t skipped)
{
    for (uint64_t steps = 0; t->sec < sec && steps < t->nb; steps++) {
        uint64_t s = ++t->sec;
        for (size_t id = 0; id < t->nfns; id++) {
            uint32_t *b = bucket(t, (uint32_t)id, s);
            t->fns[id].wself -= b[0];
            t->fns[id].wtotal -= b[1];
            b[0] = b[1] = 0;
        }
        t->wsamples -= t->ring_samples[s % t->nb];
        t->ring_samples[s % t->nb] = 0;
        t->skipped_at[s % t->nb] = skipped;
    }
    t->sec = sec > t->sec ? sec : t->sec; /* a gap longer than the window: all of it cleared */
}

static int by_heat(const void *a, const void *b)
{
    const rec_top_row *x = a, *y = b;
    if (x->wself != y->wself)
        return x->wself < y->wself ? 1 : -1;
    if (x->wtotal != y->wtotal)
        return x->wtotal < y->wtotal ? 1 : -1;
    if (x->self != y->self)
        return x->self < y->self ? 1 : -1;
    return strcmp(x->name, y->name);
}

static void draw(rec_top *t, uint64_t now, const rec_stats *st)
{
    if (zs_grow(&t->rows, &t->rows_cap, t->nfns, sizeof *t->rows, 128))
        return; /* a snapshot missed, the next one may fit */
    size_t nrows = 0;
    for (size_t id = 0; id < t->nfns; id++) {
        const fn *f = &t->fns[id];
        if (f->total)
            t->rows[nrows++] = (rec_top_row){f->name, f->where, f->wself, f->wtotal, f->self, f->total};
    }
    qsort(t->rows, nrows, sizeof *t->rows, by_heat);
    int height, width;
    rec_term_size(&t->term, &height, &width);
    size_t shown = height ? (height > 6 ? (size_t)height - 6 : 0) : PLAIN_ROWS;
    uint64_t oldest = t->sec + 1 >= t->nb ? t->sec + 1 - t->nb : 0;
    uint64_t from = t->start_ns + oldest * SECOND_NS;
    rec_top_header h = {
        .pid = t->pid, .version = t->version,
        .elapsed_s = (double)(now - t->start_ns) / 1e9,
        .window_s = now > from ? (double)(now - from) / 1e9 : 0,
        .window_len = t->window_len,
        .wsamples = t->wsamples, .samples = t->samples,
        .wskipped = st->skipped - t->skipped_at[oldest % t->nb], .skipped = st->skipped,
        .stops = st->window.count,
        .stop_p50_us = rec_hist_quantile_us(&st->window, 0.5),
        .stop_p99_us = rec_hist_quantile_us(&st->window, 0.99),
        .keys = t->term.raw,
    };
    if (rec_top_format(&t->text, &h, t->rows, nrows < shown ? nrows : shown, width, height) == 0)
        rec_term_show(&t->term, t->text.buf, t->text.len);
}

int rec_top_idle(rec_top *t, uint64_t now_ns, const rec_stats *st)
{
    if (!t->begun)
        return 0;
    if (now_ns >= t->next_key_ns) {
        t->next_key_ns = now_ns + KEY_POLL_NS;
        for (int c; (c = rec_term_key(&t->term)) >= 0;)
            if (c == 'q' || c == 'Q')
                return 1;
    }
    if (now_ns >= t->next_draw_ns) {
        roll(t, (now_ns - t->start_ns) / SECOND_NS, st->skipped);
        draw(t, now_ns, st);
        t->next_draw_ns += SECOND_NS;
        if (t->next_draw_ns <= now_ns) /* the recorder was held up: no catching up */
            t->next_draw_ns = now_ns + SECOND_NS;
    }
    return 0;
}

/* --top without -o: a recording nobody asked to keep, in a directory of
 * its own (the output refuses existing files and symlinks, and rotated
 * parts land next to it). */
static int make_scratch(rec_top *t, zs_error *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(t->scratch_dir, sizeof t->scratch_dir, "%s/zeek-spy-top-XXXXXX",
             tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(t->scratch_dir)) {
        t->scratch_dir[0] = '\0';
        return zs_fail(err, ZS_E_OUTPUT, "--top: cannot make a temporary directory in %s",
                       tmp && tmp[0] ? tmp : "/tmp");
    }
    snprintf(t->scratch_path, sizeof t->scratch_path, "%s/top.zspy", t->scratch_dir);
    return 0;
}

static void remove_scratch(rec_top *t)
{
    DIR *d = t->scratch_dir[0] ? opendir(t->scratch_dir) : NULL;
    if (!d)
        return;
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            removed += unlinkat(dirfd(d), e->d_name, 0) == 0;
    closedir(d);
    rmdir(t->scratch_dir);
    if (removed && !t->quiet)
        fprintf(stderr, "%s: --top without -o: the recording was not kept\n", REC_PROG);
}

rec_top *rec_top_new(unsigned window_s, int scratch, int quiet, zs_error *err)
{
    rec_top *t = calloc(1, sizeof *t);
    if (!t) {
        zs_fail(err, ZS_E_NOMEM, "--top");
        return NULL;
    }
    t->window_len = window_s;
    t->nb = window_s + 1;
    t->quiet = quiet;
    t->ring_samples = calloc(t->nb, sizeof *t->ring_samples);
    t->skipped_at = calloc(t->nb, sizeof *t->skipped_at);
    uint32_t empty;
    if (!t->ring_samples || !t->skipped_at || intern(t, "empty_call_stack", "", 0, &empty)) {
        zs_fail(err, ZS_E_NOMEM, "--top");
        rec_top_free(t);
        return NULL;
    }
    if (scratch && make_scratch(t, err)) {
        rec_top_free(t);
        return NULL;
    }
    rec_term_init(&t->term);
    return t;
}

const char *rec_top_scratch_path(const rec_top *t)
{
    return t && t->scratch_path[0] ? t->scratch_path : NULL;
}

void rec_top_begin(rec_top *t, uint64_t now_ns)
{
    t->start_ns = now_ns;
    t->next_draw_ns = now_ns + SECOND_NS;
    t->next_key_ns = now_ns;
    t->begun = 1;
    rec_term_begin(&t->term);
}

void rec_top_end(rec_top *t)
{
    if (t)
        rec_term_end(&t->term);
}

void rec_top_free(rec_top *t)
{
    if (!t)
        return;
    rec_top_end(t);
    remove_scratch(t);
    for (size_t i = 0; i < t->nfns; i++) {
        free(t->fns[i].name);
        free(t->fns[i].where);
    }
    free(t->fns);
    free(t->ring);
    free(t->ring_samples);
    free(t->skipped_at);
    free(t->pairs);
    zs_intern_free(&t->pair_index);
    zs_intern_free(&t->name_index);
    free(t->rows);
    free(t->text.buf);
    free(t);
}
