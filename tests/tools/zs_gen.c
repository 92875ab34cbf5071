/* SPDX-License-Identifier: BSD-3-Clause */
/* zs-gen: writes a synthetic zeek-spy recording, for tests and benchmarks.
 *
 * It is a test tool, not a recorder: no process is attached. It lays out, in
 * a simulated target heap, Zeek interpreter objects exactly as the chosen
 * built-in layout describes them (Func with its std::string name, kind and
 * bodies vector; Body entries; Stmt objects whose Obj::location leads to a
 * Location with its NUL-terminated file name), stores those objects as
 * snapshot regions, and writes stacks and samples drawn from a fixed set of
 * distinct stacks with a skewed, seeded distribution. Because it knows the
 * ground truth it can write the folded output the converter must produce
 * (--expect). With --native it wraps the script frames in the C++ frames
 * of a --native recording of Zeek 8.2 (zs_gen_native.c), and knows what the
 * converter shows of them by default and with --interpreter-frames.
 * With --off-cpu it writes what the BPF sampler writes (format 7): runs of
 * samples taken off the CPU among the on-CPU ones, and knows what the
 * converter's on-CPU view (--view cpu) must show (--expect-cpu).
 *
 *   zs-gen -o rec.zspy --samples 200000 --stacks 1000 --seed 7 --expect rec.folded
 *   zeek-spy-convert --no-cache -f folded -o - rec.zspy | sort | diff - <(sort rec.folded)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <zstd.h>

#include "zs_format.h"
#include "zs_gen_native.h"
#include "zs_hex.h"
#include "zs_layout.h"
#include "zs_resolver.h"
#include "zs_writer.h"

static const char PROG[] = "zs-gen";

enum {
    MAX_DEPTH = 6,
    MAX_BODIES = 2,
    MAX_OMIT = 16,
    PID = 4242,
};

/* ---- deterministic randomness (splitmix64) ---------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rng_below(rng *r, uint64_t n) { return n ? rng_next(r) % n : 0; }

static double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

/* ---- the script world the recording describes ------------------------- */

typedef struct body_spec {
    const char *file;
    int first_line;
    int nstmts;
} body_spec;

typedef struct func_spec {
    const char *name;
    int builtin;
    int event; /* an entry point: only events start a stack */
    int nbodies;
    body_spec bodies[MAX_BODIES];
} func_spec;

/* Modelled on Zeek's base scripts. connection_state_remove has two bodies in
 * two files, as in a real Zeek; one name is longer than libstdc++'s 15-char
 * small-string buffer so both std::string forms are exercised. */
static const func_spec WORLD[] = {
    {"connection_state_remove", 0, 1, 2,
     {{"base/protocols/http/main.zeek", 329, 12}, {"base/protocols/conn/main.zeek", 290, 15}}},
    {"http_request", 0, 1, 1, {{"base/protocols/http/main.zeek", 222, 18}}},
    {"http_reply", 0, 1, 1, {{"base/protocols/http/main.zeek", 245, 20}}},
    {"http_header", 0, 1, 1, {{"base/protocols/http/main.zeek", 268, 25}}},
    {"dns_request", 0, 1, 1, {{"base/protocols/dns/main.zeek", 398, 10}}},
    {"new_connection", 0, 1, 1, {{"base/protocols/conn/main.zeek", 250, 6}}},
    {"ssl_established", 0, 1, 1, {{"base/protocols/ssl/main.zeek", 321, 14}}},
    {"HTTP::set_state", 0, 0, 1, {{"base/protocols/http/main.zeek", 180, 30}}},
    {"HTTP::code_in_range", 0, 0, 1, {{"base/protocols/http/main.zeek", 170, 4}}},
    {"HTTP::build_url", 0, 0, 1, {{"base/protocols/http/utils.zeek", 40, 12}}},
    {"Conn::set_conn", 0, 0, 1, {{"base/protocols/conn/main.zeek", 200, 35}}},
    {"Conn::conn_state", 0, 0, 1, {{"base/protocols/conn/main.zeek", 150, 40}}},
    {"DNS::set_session", 0, 0, 1, {{"base/protocols/dns/main.zeek", 300, 45}}},
    {"Site::is_local_addr", 0, 0, 1, {{"base/utils/site.zeek", 120, 3}}},
    {"Log::write", 0, 0, 1, {{"base/frameworks/logging/main.zeek", 590, 8}}},
    {"SSL::set_session", 0, 0, 1, {{"base/protocols/ssl/main.zeek", 180, 20}}},
    {"Files::describe", 0, 0, 1, {{"base/frameworks/files/main.zeek", 480, 10}}},
    {"id_string", 0, 0, 1, {{"base/utils/conn-ids.zeek", 20, 4}}},
    {"SumStats::observe_with_threshold", 0, 0, 1, {{"base/frameworks/sumstats/main.zeek", 410, 22}}},
    {"fmt", 1, 0, 0, {{0}}},
    {"to_lower", 1, 0, 0, {{0}}},
    {"split_string", 1, 0, 0, {{0}}},
    {"Log::__write", 1, 0, 0, {{0}}},
    {"network_time", 1, 0, 0, {{0}}},
    {"md5_hash", 1, 0, 0, {{0}}},
};
enum { NFUNCS = sizeof WORLD / sizeof WORLD[0] };

/* --odd-names: the same world under names and paths a recording may carry
 * from a real process, for the converter's escaping and path
 * normalization: XML/JSON metacharacters, control bytes, bytes that are
 * not UTF-8, valid non-ASCII UTF-8, and one script reached by several
 * spellings ("./", "//", "././"), as @load ./x leaves them in Zeek. No ';'
 * or newline: the folded format rewrites those. */
static const struct {
    int func, body; /* body -1: the name */
    const char *text;
} ODD[] = {
    {3, -1, "http_<header> & \"quoted\" 'x'"},
    {9, -1, "HTTP::build_url\x01\x7f\tctl"},
    {19, -1, "fmt]]>\xff\xfe<!--"},
    {16, -1, "Files::d\xc3\xa9scribe\xe2\x86\x92\xe2\x9c\x93"},
    {0, 1, "./base//protocols/conn/./main.zeek"},
    {13, 0, "././base/utils/site.zeek"},
    {4, 0, "base/protocols/dns/<main>&\".zeek"},
};

/* ---- the simulated target heap ----------------------------------------- */

static const uint64_t HEAP_BASE = 0x55d4c3a10000ULL;
static const uint64_t VTABLE_BASE = 0x55d4c1e2a000ULL;

typedef struct heap {
    uint8_t *mem;
    size_t len, cap;
    rng garbage;
} heap;

/* A new object of size bytes, 16-aligned like malloc, filled with garbage
 * (the padding and members the profiler never reads stay garbage, as in a
 * real process). Exits on out-of-memory: this is a test tool. */
static uint64_t heap_alloc(heap *h, size_t size)
{
    size_t at = (h->len + 15) & ~(size_t)15;
    /* a malloc header's worth of gap keeps objects from touching */
    at += 16;
    if (at + size > h->cap) {
        size_t cap = h->cap ? h->cap : 1 << 16;
        while (at + size > cap)
            cap *= 2;
        uint8_t *m = realloc(h->mem, cap);
        if (!m) {
            fprintf(stderr, "%s: error: out of memory\n", PROG);
            exit(1);
        }
        h->mem = m;
        h->cap = cap;
    }
    for (size_t i = h->len; i < at + size; i++)
        h->mem[i] = (uint8_t)rng_next(&h->garbage);
    h->len = at + size;
    return HEAP_BASE + at;
}

static uint8_t *heap_at(heap *h, uint64_t addr) { return h->mem + (addr - HEAP_BASE); }

static void put_uint(heap *h, uint64_t addr, uint64_t v, int size)
{
    uint8_t *p = heap_at(h, addr);
    for (int i = 0; i < size; i++)
        p[i] = (uint8_t)(v >> (8 * i)); /* x86_64: little endian */
}

static void put_u64(heap *h, uint64_t addr, uint64_t v) { put_uint(h, addr, v, 8); }

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static int imax(int a, int b) { return a > b ? a : b; }

/* ---- objects and the snapshot regions that describe them -------------- */

typedef struct region {
    uint64_t addr;
    size_t len;
} region;

typedef struct file_obj {
    const char *name;
    uint64_t addr;
    int emitted;
} file_obj;

typedef struct stmt_obj {
    uint64_t addr; /* the Stmt; its Location is the next allocation */
    uint64_t loc;
    file_obj *file;
    int line;
    int emitted;
} stmt_obj;

typedef struct body_obj {
    const body_spec *spec;
    int last_line;
    stmt_obj list; /* the body's StmtList, spanning the body */
    size_t nstmts;
    stmt_obj *stmts; /* one per line first_line+1 .. */
} body_obj;

typedef struct func_obj {
    const func_spec *spec;
    uint64_t addr;
    uint64_t name_heap; /* 0 when the name is in the small-string buffer */
    uint64_t bodies_addr;
    body_obj bodies[MAX_BODIES];
    int omit;
    int emitted;
} func_obj;

typedef struct world {
    const zs_layout *l;
    heap heap;
    file_obj files[NFUNCS * MAX_BODIES];
    size_t nfiles;
    func_obj funcs[NFUNCS];
    func_spec specs[NFUNCS]; /* WORLD, or its --odd-names variant */
    size_t func_size, stmt_size, loc_size;
} world;

static file_obj *intern_file(world *w, const char *name)
{
    for (size_t i = 0; i < w->nfiles; i++)
        if (!strcmp(w->files[i].name, name))
            return &w->files[i];
    file_obj *f = &w->files[w->nfiles++];
    size_t n = strlen(name) + 1;
    f->name = name;
    f->addr = heap_alloc(&w->heap, n);
    memcpy(heap_at(&w->heap, f->addr), name, n);
    return f;
}

/* An Obj-derived statement with its own Location {file, line, last}. */
static void make_stmt(world *w, stmt_obj *s, file_obj *file, int first, int last)
{
    const zs_layout *l = w->l;
    s->file = file;
    s->line = first;
    s->addr = heap_alloc(&w->heap, w->stmt_size);
    s->loc = heap_alloc(&w->heap, w->loc_size);
    put_u64(&w->heap, s->addr, VTABLE_BASE + 0x100);
    put_u64(&w->heap, s->addr + (uint64_t)l->obj_location, s->loc);
    if (l->location_filename >= 8) /* Zeek 3.0: Location has a vtable */
        put_u64(&w->heap, s->loc, VTABLE_BASE + 0x200);
    put_u64(&w->heap, s->loc + (uint64_t)l->location_filename, file->addr);
    put_uint(&w->heap, s->loc + (uint64_t)l->location_first_line, (uint32_t)first, 4);
    put_uint(&w->heap, s->loc + (uint64_t)l->location_last_line, (uint32_t)last, 4);
}

static void make_func(world *w, func_obj *f, const func_spec *spec)
{
    const zs_layout *l = w->l;
    heap *h = &w->heap;
    f->spec = spec;
    f->addr = heap_alloc(h, w->func_size);
    put_u64(h, f->addr, VTABLE_BASE + (spec->builtin ? 0x40 : 0x80));
    put_uint(h, f->addr + (uint64_t)l->func_kind,
             spec->builtin ? (uint64_t)l->func_kind_builtin : 0, l->func_kind_size);

    /* libstdc++ std::string {data, size, {local[16] | capacity}} */
    uint64_t str = f->addr + (uint64_t)l->func_name;
    size_t n = strlen(spec->name);
    uint64_t data;
    if (n <= 15) {
        data = str + 16;
    } else {
        data = f->name_heap = heap_alloc(h, n + 1);
        put_u64(h, str + 16, n);
    }
    memcpy(heap_at(h, data), spec->name, n + 1);
    put_u64(h, str + (uint64_t)l->string_data, data);
    put_u64(h, str + (uint64_t)l->string_size, n);

    uint64_t vec = f->addr + (uint64_t)l->func_bodies;
    if (spec->nbodies == 0) {
        put_u64(h, vec + (uint64_t)l->vector_begin, 0);
        put_u64(h, vec + (uint64_t)l->vector_end, 0);
        put_u64(h, vec + 16, 0);
        return;
    }
    size_t bytes = (size_t)spec->nbodies * (size_t)l->body_size;
    f->bodies_addr = heap_alloc(h, bytes);
    memset(heap_at(h, f->bodies_addr), 0, bytes);
    put_u64(h, vec + (uint64_t)l->vector_begin, f->bodies_addr);
    put_u64(h, vec + (uint64_t)l->vector_end, f->bodies_addr + bytes);
    put_u64(h, vec + 16, f->bodies_addr + bytes);
    for (int b = 0; b < spec->nbodies; b++) {
        body_obj *bo = &f->bodies[b];
        const body_spec *bs = &spec->bodies[b];
        file_obj *file = intern_file(w, bs->file);
        bo->spec = bs;
        bo->last_line = bs->first_line + bs->nstmts + 1; /* the closing brace */
        make_stmt(w, &bo->list, file, bs->first_line, bo->last_line);
        put_u64(h, f->bodies_addr + (uint64_t)b * (uint64_t)l->body_size + (uint64_t)l->body_stmts,
                bo->list.addr);
        bo->nstmts = (size_t)bs->nstmts;
        bo->stmts = calloc(bo->nstmts, sizeof *bo->stmts);
        if (!bo->stmts) {
            fprintf(stderr, "%s: error: out of memory\n", PROG);
            exit(1);
        }
        for (size_t i = 0; i < bo->nstmts; i++) {
            int line = bs->first_line + 1 + (int)i;
            make_stmt(w, &bo->stmts[i], file, line, line);
        }
    }
}

static void world_init(world *w, const zs_layout *l, uint64_t seed, int odd_names)
{
    memset(w, 0, sizeof *w);
    memcpy(w->specs, WORLD, sizeof WORLD);
    for (size_t i = 0; odd_names && i < sizeof ODD / sizeof ODD[0]; i++) {
        if (ODD[i].body < 0)
            w->specs[ODD[i].func].name = ODD[i].text;
        else
            w->specs[ODD[i].func].bodies[ODD[i].body].file = ODD[i].text;
    }
    w->l = l;
    w->heap.garbage.s = seed ^ 0x5eedULL;
    /* Real sizes where the design brief gives them, never less than what
     * the members the layout names need. */
    w->func_size = round_up((size_t)imax(112, imax(l->func_name + 32, imax(l->func_bodies + 24,
                                                       l->func_kind + l->func_kind_size))), 16);
    w->stmt_size = round_up((size_t)imax(48, l->obj_location + 8), 16);
    int loc_need = imax(l->location_filename + 8,
                        imax(l->location_first_line + 4, l->location_last_line + 4));
    w->loc_size = round_up((size_t)loc_need + (l->location_filename >= 8 ? 24 : 0), 16);
    for (int i = 0; i < NFUNCS; i++)
        make_func(w, &w->funcs[i], &w->specs[i]);
}

/* ---- writing snapshot regions ------------------------------------------ */

static int snap(world *w, zs_writer *wr, uint64_t addr, size_t len, zs_error *err)
{
    return zs_writer_snapshot(wr, PID, addr, heap_at(&w->heap, addr), len, err);
}

/* The resolver reads a C string in 64-byte aligned chunks up to the chunk
 * holding the NUL: the region covers exactly those chunks. */
static int snap_file(world *w, zs_writer *wr, file_obj *f, zs_error *err)
{
    if (f->emitted)
        return 0;
    f->emitted = 1;
    uint64_t end = round_up(f->addr + strlen(f->name) + 1, 64);
    return snap(w, wr, f->addr, (size_t)(end - f->addr), err);
}

static int snap_stmt(world *w, zs_writer *wr, stmt_obj *s, zs_error *err)
{
    if (s->emitted)
        return 0;
    s->emitted = 1;
    return snap(w, wr, s->addr, w->stmt_size, err) || snap(w, wr, s->loc, w->loc_size, err) ||
           snap_file(w, wr, s->file, err);
}

static int snap_func(world *w, zs_writer *wr, func_obj *f, zs_error *err)
{
    if (f->emitted || f->omit)
        return 0;
    f->emitted = 1;
    if (snap(w, wr, f->addr, w->func_size, err))
        return -1;
    if (f->name_heap && snap(w, wr, f->name_heap, strlen(f->spec->name) + 1, err))
        return -1;
    if (f->spec->nbodies &&
        snap(w, wr, f->bodies_addr, (size_t)f->spec->nbodies * (size_t)w->l->body_size, err))
        return -1;
    for (int b = 0; b < f->spec->nbodies; b++)
        if (snap_stmt(w, wr, &f->bodies[b].list, err))
            return -1;
    return 0;
}

/* ---- stacks ------------------------------------------------------------- */

typedef struct gframe {
    int func;
    int body;
    int stmt; /* index in the body, -1: no statement (BiFs) */
} gframe;

typedef struct gstack {
    int n;
    gframe f[MAX_DEPTH];
    double weight;
    uint64_t count;
    uint64_t off; /* of count, the samples taken off the CPU (--off-cpu) */
    int64_t id; /* -1 until its first sample writes the stack record */
} gstack;

static int pick(rng *r, int want_event, int want_builtin)
{
    int candidates[NFUNCS], n = 0;
    for (int i = 0; i < NFUNCS; i++)
        if (WORLD[i].event == want_event && WORLD[i].builtin == want_builtin)
            candidates[n++] = i;
    return candidates[rng_below(r, (uint64_t)n)];
}

static gframe script_frame(rng *r, int func)
{
    gframe g = {func, 0, -1};
    g.body = (int)rng_below(r, (uint64_t)WORLD[func].nbodies);
    g.stmt = (int)rng_below(r, (uint64_t)WORLD[func].bodies[g.body].nstmts);
    return g;
}

static void random_stack(rng *r, gstack *s)
{
    memset(s, 0, sizeof *s);
    s->id = -1;
    s->n = 1 + (int)rng_below(r, MAX_DEPTH);
    s->f[0] = script_frame(r, pick(r, 1, 0));
    for (int i = 1; i < s->n; i++) {
        if (i == s->n - 1 && rng_below(r, 10) < 3)
            s->f[i] = (gframe){pick(r, 0, 1), 0, -1};
        else
            s->f[i] = script_frame(r, pick(r, 0, 0));
    }
}

static int same_stack(const gstack *a, const gstack *b)
{
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++)
        if (a->f[i].func != b->f[i].func || a->f[i].body != b->f[i].body ||
            a->f[i].stmt != b->f[i].stmt)
            return 0;
    return 1;
}

static uint64_t stack_hash(const gstack *s)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)s->n;
    for (int i = 0; i < s->n; i++) {
        h = (h ^ (uint64_t)s->f[i].func) * 1099511628211ULL;
        h = (h ^ (uint64_t)s->f[i].body) * 1099511628211ULL;
        h = (h ^ (uint64_t)(s->f[i].stmt + 1)) * 1099511628211ULL;
    }
    return h;
}

/* K distinct stacks, the first of them the empty stack. */
static gstack *make_stacks(rng *r, size_t k)
{
    size_t nslots = 16;
    while (nslots < 2 * k)
        nslots *= 2;
    gstack *stacks = calloc(k, sizeof *stacks);
    size_t *slots = calloc(nslots, sizeof *slots); /* index + 1 */
    if (!stacks || !slots) {
        fprintf(stderr, "%s: error: out of memory\n", PROG);
        exit(1);
    }
    stacks[0].id = -1;
    size_t n = 1, tries = 0;
    while (n < k) {
        if (++tries > 100 * k + 100000) {
            fprintf(stderr, "%s: error: could not make %zu distinct stacks\n", PROG, k);
            exit(2);
        }
        random_stack(r, &stacks[n]);
        size_t j = stack_hash(&stacks[n]) & (nslots - 1);
        int dup = 0;
        for (; slots[j]; j = (j + 1) & (nslots - 1))
            if (same_stack(&stacks[slots[j] - 1], &stacks[n]))
                dup = 1;
        if (dup)
            continue;
        slots[j] = n + 1;
        n++;
    }
    free(slots);
    /* Zipf-like weights over a seeded ranking of the stacks. */
    size_t *rank = malloc(k * sizeof *rank);
    if (!rank)
        exit(1);
    for (size_t i = 0; i < k; i++)
        rank[i] = i;
    for (size_t i = k; i > 1; i--) {
        size_t j = (size_t)rng_below(r, i), t = rank[i - 1];
        rank[i - 1] = rank[j];
        rank[j] = t;
    }
    for (size_t i = 0; i < k; i++)
        stacks[rank[i]].weight = 1.0 / pow((double)(i + 1), 1.1);
    free(rank);
    return stacks;
}

static size_t draw(rng *r, const double *cdf, size_t k)
{
    double u = rng_unit(r) * cdf[k - 1];
    size_t lo = 0, hi = k - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* ---- what the converter must show --------------------------------------- */

typedef struct resolved {
    char name[256];
    char key[512]; /* function identity and line: what the converter interns */
} resolved;

static void resolve(const world *w, const gframe *g, resolved *out)
{
    const func_obj *f = &w->funcs[g->func];
    const func_spec *s = f->spec;
    if (f->omit) {
        snprintf(out->name, sizeof out->name, "[unresolved 0x%" PRIx64 "]", f->addr);
        snprintf(out->key, sizeof out->key, "%s\x1f\x1f" "0\x1f" "0", out->name);
    } else if (s->builtin) {
        snprintf(out->name, sizeof out->name, "%s", s->name);
        snprintf(out->key, sizeof out->key, "%s\x1f\x1f" "0\x1f" "0", out->name);
    } else {
        const body_obj *b = &f->bodies[g->body];
        char file[256]; /* as the converter shows it: one spelling per script */
        snprintf(file, sizeof file, "%s", b->spec->file);
        zs_path_normalize(file);
        if (s->nbodies > 1)
            snprintf(out->name, sizeof out->name, "%.120s %.120s:%d", s->name, file, b->spec->first_line);
        else
            snprintf(out->name, sizeof out->name, "%s", s->name);
        snprintf(out->key, sizeof out->key, "%s\x1f%.200s\x1f%d\x1f%d", out->name, file,
                 b->spec->first_line, b->stmts[g->stmt].line);
    }
}

typedef struct folded_line {
    char *key;
    char *text;
    uint64_t count;
} folded_line;

static int by_key(const void *a, const void *b)
{
    return strcmp(((const folded_line *)a)->key, ((const folded_line *)b)->key);
}

static int by_text(const void *a, const void *b)
{
    int c = strcmp(((const folded_line *)a)->text, ((const folded_line *)b)->text);
    if (c)
        return c;
    uint64_t x = ((const folded_line *)a)->count, y = ((const folded_line *)b)->count;
    return x < y ? -1 : x > y;
}

/* The native frames under a stack's innermost script frame (--native). */
static gen_native_part tail_of(const gstack *s)
{
    return gen_native_tail(WORLD[s->f[s->n - 1].func].builtin, stack_hash(s));
}

/* The folded text of stack s with --native: the script frames in their
 * native frames, all of them shown (keep: --interpreter-frames) or, as the
 * converter shows them by default, without the interpreter between the
 * script frames and at the start of the tail. */
static void native_text(const world *w, const gstack *s, int keep, char *text, size_t cap)
{
    text[0] = '\0';
    if (s->n == 0) {
        gen_native_names(GN_TRIGGER, 0, text, cap);
        return;
    }
    gen_native_names(GN_ENTRY, 0, text, cap);
    for (int j = 0; j < s->n; j++) {
        resolved r;
        resolve(w, &s->f[j], &r);
        size_t len = strlen(text);
        snprintf(text + len, cap - len, ";%s", r.name);
        if (j + 1 < s->n && keep)
            gen_native_names(GN_PLUMBING, 0, text, cap);
    }
    gen_native_names(tail_of(s), !keep, text, cap);
}

/* What the summary's split line must say with --native: a sample is the
 * script's when its innermost frame is a script frame once the
 * interpreter is hidden, native under scripts when some native frame is
 * left under one, native outside scripts without script frames. */
static void print_split(const gstack *stacks, size_t k, int keep, const char *label)
{
    uint64_t part[3] = {0}, total = 0;
    for (size_t i = 0; i < k; i++) {
        const gstack *s = &stacks[i];
        int where = s->n == 0 ? 2 : !keep && gen_native_all_interpreter(tail_of(s)) ? 0 : 1;
        part[where] += s->count;
        total += s->count;
    }
    double t = total ? (double)total : 1;
    fprintf(stderr, "%s: split %s: script %.1f %%, native under scripts %.1f %%, native outside scripts %.1f %%\n",
            PROG, label, 100.0 * (double)part[0] / t, 100.0 * (double)part[1] / t,
            100.0 * (double)part[2] / t);
}

/* Distinct raw stacks that resolve to the same functions and lines (frames
 * of an omitted Func) are one stack in the converter's profile. native:
 * with the native frames, all of them (keep) or as shown by default.
 * on_cpu: the on-CPU samples only (--view cpu), else all of them. */
static int write_expect(const world *w, const gstack *stacks, size_t k, const char *path, int native,
                        int keep, int on_cpu, char *top_leaf, size_t top_size, uint64_t *top_count)
{
    folded_line *lines = calloc(k, sizeof *lines);
    size_t n = 0;
    if (!lines)
        return -1;
    for (size_t i = 0; i < k; i++) {
        uint64_t count = stacks[i].count - (on_cpu ? stacks[i].off : 0);
        if (!count)
            continue;
        size_t cap = 64 + (size_t)stacks[i].n * 800 + (native ? 32768 : 0);
        char *key = malloc(cap), *text = malloc(cap);
        if (!key || !text)
            return -1;
        key[0] = text[0] = '\0';
        if (stacks[i].n == 0) {
            strcpy(key, "empty_call_stack");
            strcpy(text, "empty_call_stack");
        }
        for (int j = 0; j < stacks[i].n; j++) {
            resolved r;
            resolve(w, &stacks[i].f[j], &r);
            strcat(key, j ? "\x1e" : "");
            strcat(key, r.key);
            strcat(text, j ? ";" : "");
            strcat(text, r.name);
        }
        if (native) { /* the text with its native frames is the key's end */
            native_text(w, &stacks[i], keep, text, cap);
            strcat(key, "\x1d");
            strcat(key, text);
        }
        lines[n++] = (folded_line){key, text, count};
    }
    qsort(lines, n, sizeof *lines, by_key);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !strcmp(lines[m - 1].key, lines[i].key)) {
            lines[m - 1].count += lines[i].count;
            free(lines[i].key);
            free(lines[i].text);
        } else {
            lines[m++] = lines[i];
        }
    }
    qsort(lines, m, sizeof *lines, by_text);

    /* The leaf with the most samples: what pprof -top must list first. */
    *top_count = 0;
    top_leaf[0] = '\0';
    for (size_t i = 0; i < m; i++) {
        const char *leaf = strrchr(lines[i].text, ';');
        leaf = leaf ? leaf + 1 : lines[i].text;
        uint64_t sum = 0;
        for (size_t j = 0; j < m; j++) {
            const char *l2 = strrchr(lines[j].text, ';');
            if (!strcmp(l2 ? l2 + 1 : lines[j].text, leaf))
                sum += lines[j].count;
        }
        if (sum > *top_count) {
            *top_count = sum;
            snprintf(top_leaf, top_size, "%s", leaf);
        }
    }

    int rc = 0;
    if (path) {
        FILE *f = fopen(path, "w");
        if (!f) {
            fprintf(stderr, "%s: error: %s: %s\n", PROG, path, strerror(errno));
            rc = -1;
        } else {
            for (size_t i = 0; i < m; i++)
                fprintf(f, "%s %" PRIu64 "\n", lines[i].text, lines[i].count);
            if (fclose(f) != 0)
                rc = -1;
        }
    }
    for (size_t i = 0; i < m; i++) {
        free(lines[i].key);
        free(lines[i].text);
    }
    free(lines);
    return rc;
}

/* ---- the recording ------------------------------------------------------ */

typedef struct options {
    const char *output;
    const char *expect;
    uint64_t samples;
    uint64_t stacks;
    uint64_t seed;
    int seeded;
    double rate_hz;
    uint64_t flush_every;
    const char *zeek_version;
    const char *omit[MAX_OMIT];
    int nomit;
    int no_trailer;
    int odd_names;
    int native;
    const char *expect_kept;
    const char *damage;
    const char *node; /* the process's cluster node */
    uint64_t off_cpu_pct; /* --off-cpu: about this share of samples off the CPU */
    int off_cpu;
    const char *sampler; /* the header's; default ptrace, bpf with --off-cpu */
    const char *expect_cpu;
} options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s -o FILE [options]\n"
            "Write a synthetic zeek-spy recording (a test tool; no process is involved).\n\n"
            "  -o, --output FILE            the recording to create (must not exist)\n"
            "      --samples N              samples to write (default 1000000)\n"
            "      --stacks K               distinct stacks incl. the empty one (default 1000)\n"
            "      --seed S                 seed for everything, recording id included\n"
            "                               (default: content seed 1, random recording id)\n"
            "      --rate HZ                sampling rate in the header (default 250)\n"
            "      --flush-every N          samples per zstd frame (default: one second's)\n"
            "      --zeek-version V         lay objects out for V's built-in layout (default 3.0.1)\n"
            "      --expect FILE            write the folded output the converter must produce\n"
            "      --omit-snapshot-for NAME leave that Func out of the snapshot (repeatable)\n"
            "      --no-trailer             end without a trailer, like a killed recorder\n"
            "      --node NAME              the process's cluster node (default worker-1)\n"
            "      --off-cpu PCT            about PCT %% of the samples taken off the CPU, in\n"
            "                               runs of 1-8 of one stack (half of them the empty\n"
            "                               one), as the BPF sampler writes them (format 7)\n"
            "      --sampler NAME           the header's sampler (default ptrace; bpf with\n"
            "                               --off-cpu)\n"
            "      --expect-cpu FILE        the folded output the converter must produce\n"
            "                               with --view cpu (on-CPU samples only)\n"
            "      --odd-names              hostile names and paths: <&\"', control bytes,\n"
            "                               non-UTF-8 bytes, ./ and // in script paths\n"
            "      --native                 native (C++) frames around the script frames, as\n"
            "                               a --native recording of Zeek 8.2 has them\n"
            "      --expect-interpreter-frames FILE\n"
            "                               with --native: the folded output the converter\n"
            "                               must produce with --interpreter-frames\n"
            "      --damage KIND            then damage the file: magic (not our magic),\n"
            "                               version (a newer format version), frame (flip\n"
            "                               bytes inside a later zstd frame; its offset is\n"
            "                               printed on stdout)\n",
            PROG);
}

static int parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || *s == '-' || v < min || v > max) {
        fprintf(stderr, "%s: error: %s: '%s' is not a number in %" PRIu64 "..%" PRIu64 "\n", PROG,
                opt, s, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'},  {"samples", required_argument, 0, 1},
        {"stacks", required_argument, 0, 2},    {"seed", required_argument, 0, 3},
        {"rate", required_argument, 0, 4},      {"flush-every", required_argument, 0, 5},
        {"zeek-version", required_argument, 0, 6}, {"expect", required_argument, 0, 7},
        {"omit-snapshot-for", required_argument, 0, 8}, {"no-trailer", no_argument, 0, 9},
        {"damage", required_argument, 0, 10},  {"odd-names", no_argument, 0, 11},
        {"native", no_argument, 0, 12},         {"expect-interpreter-frames", required_argument, 0, 13},
        {"node", required_argument, 0, 14},    {"off-cpu", required_argument, 0, 15},
        {"sampler", required_argument, 0, 16}, {"expect-cpu", required_argument, 0, 17},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    o->samples = 1000000;
    o->stacks = 1000;
    o->seed = 1;
    o->rate_hz = 250;
    o->zeek_version = "3.0.1";
    o->node = "worker-1";
    int c;
    uint64_t v;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case 1: if (parse_u64("--samples", optarg, 0, 1ULL << 40, &o->samples)) return -1; break;
        case 2: if (parse_u64("--stacks", optarg, 1, 1 << 22, &o->stacks)) return -1; break;
        case 3: if (parse_u64("--seed", optarg, 0, UINT64_MAX, &o->seed)) return -1; o->seeded = 1; break;
        case 4:
            if (parse_u64("--rate", optarg, 1, 100000, &v)) return -1;
            o->rate_hz = (double)v;
            break;
        case 5: if (parse_u64("--flush-every", optarg, 1, 1ULL << 32, &o->flush_every)) return -1; break;
        case 6: o->zeek_version = optarg; break;
        case 7: o->expect = optarg; break;
        case 8:
            if (o->nomit == MAX_OMIT) {
                fprintf(stderr, "%s: error: too many --omit-snapshot-for\n", PROG);
                return -1;
            }
            o->omit[o->nomit++] = optarg;
            break;
        case 9: o->no_trailer = 1; break;
        case 11: o->odd_names = 1; break;
        case 14: o->node = optarg; break;
        case 15:
            if (parse_u64("--off-cpu", optarg, 0, 100, &o->off_cpu_pct)) return -1;
            o->off_cpu = 1;
            break;
        case 16: o->sampler = optarg; break;
        case 17: o->expect_cpu = optarg; break;
        case 12: o->native = 1; break;
        case 13: o->expect_kept = optarg; break;
        case 10:
            if (strcmp(optarg, "magic") && strcmp(optarg, "version") && strcmp(optarg, "frame")) {
                fprintf(stderr, "%s: error: --damage: '%s' is not magic, version or frame\n", PROG,
                        optarg);
                return -1;
            }
            o->damage = optarg;
            break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (!o->output || optind != argc) {
        usage(stderr);
        return -1;
    }
    if (o->expect_kept && !o->native) {
        fprintf(stderr, "%s: error: --expect-interpreter-frames needs --native\n", PROG);
        return -1;
    }
    if (!o->flush_every)
        o->flush_every = (uint64_t)o->rate_hz;
    if (!o->sampler)
        o->sampler = o->off_cpu ? "bpf" : "ptrace";
    return 0;
}

static int write_header(zs_writer *wr, const options *o, zs_error *err)
{
    char id[33], rate[32];
    uint8_t rnd[16];
    if (o->seeded) {
        /* Everything that changes the content changes the id: the
         * converter's cache key is the id and the file size. */
        uint64_t h = o->seed ^ 0x1d1d1d1dULL;
        h = h * 31 + o->samples;
        h = h * 31 + o->stacks;
        h = h * 31 + (uint64_t)o->rate_hz;
        h = h * 31 + o->flush_every;
        h = h * 31 + (uint64_t)o->no_trailer;
        h = h * 31 + (uint64_t)o->odd_names;
        h = h * 31 + (uint64_t)o->native * 7;
        h = h * 31 + (o->off_cpu ? o->off_cpu_pct + 1 : 0);
        const char *parts[MAX_OMIT + 3] = {o->zeek_version, o->damage, o->sampler};
        for (int i = 0; i < o->nomit; i++)
            parts[i + 3] = o->omit[i];
        for (int i = 0; i < o->nomit + 3; i++)
            for (const char *c = parts[i] ? parts[i] : ""; *c; c++)
                h = h * 131 + (uint8_t)*c;
        rng r = {h};
        for (int i = 0; i < 16; i++)
            rnd[i] = (uint8_t)rng_next(&r);
    } else if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        return zs_fail(err, ZS_E_IO, "getrandom failed");
    }
    zs_hex(id, sizeof id, rnd, sizeof rnd);
    snprintf(rate, sizeof rate, "%g", o->rate_hz);
    /* Fixed, not the build's version: golden recordings must not change. */
    zs_kv kv[] = {
        {"recorder_version", "zs-gen-1"},
        {"host", "gen-host"},
        {"start_wall_ns", "1700000000000000000"},
        {"start_mono_ns", "1000000000"},
        {"rate_hz", rate},
        {"recording_id", id},
        {"mode", "ptrace"},
        {"sampler", o->sampler},
    };
    return zs_writer_header(wr, kv, sizeof kv / sizeof kv[0], err);
}

static int write_process(zs_writer *wr, const options *o, const zs_layout *l, zs_error *err)
{
    char *layout = zs_layout_format(l);
    if (!layout)
        return zs_fail(err, ZS_E_NOMEM, "layout text");
    zs_kv kv[] = {
        {"exe", "/usr/local/zeek/bin/zeek"},
        {"build_id", "5a1d0c0ffee0ddba11c0ffee5eed0123456789ab"},
        {"zeek_version", o->zeek_version},
        {"layout", layout},
        {"layout_source", "builtin"},
        {"ns_pid", "4242"},
        {"node", o->node},
    };
    int rc = zs_writer_process(wr, PID, kv, sizeof kv / sizeof kv[0], err);
    free(layout);
    return rc;
}

/* The frames of s, outermost first; with native, each script frame in the
 * place of its ScriptFunc::Invoke among the native frames. How many. */
static size_t stack_frames(const world *w, const gstack *s, int native, zs_frame *frames)
{
    size_t n = 0;
    if (native)
        n += gen_native_frames(s->n ? GN_ENTRY : GN_TRIGGER, frames + n);
    for (int i = 0; i < s->n; i++) {
        const func_obj *f = &w->funcs[s->f[i].func];
        frames[n].func = f->addr;
        frames[n++].stmt = s->f[i].stmt >= 0 ? f->bodies[s->f[i].body].stmts[s->f[i].stmt].addr : 0;
        if (native && i + 1 < s->n)
            n += gen_native_frames(GN_PLUMBING, frames + n);
    }
    if (native && s->n)
        n += gen_native_frames(tail_of(s), frames + n);
    return n;
}

static int write_stack(world *w, zs_writer *wr, gstack *s, uint64_t id, int native, zs_error *err)
{
    zs_frame frames[MAX_DEPTH * (GEN_NATIVE_MAX_PART + 1) + GEN_NATIVE_MAX_PART];
    size_t n = stack_frames(w, s, native, frames);
    s->id = (int64_t)id;
    if (zs_writer_stack(wr, id, PID, frames, n, err))
        return -1;
    /* As the recorder does: every object of a new stack goes into the
     * snapshot once, right after the stack is first seen. */
    for (int i = 0; i < s->n; i++) {
        func_obj *f = &w->funcs[s->f[i].func];
        if (snap_func(w, wr, f, err))
            return -1;
        if (s->f[i].stmt >= 0 && snap_stmt(w, wr, &f->bodies[s->f[i].body].stmts[s->f[i].stmt], err))
            return -1;
    }
    return 0;
}

/* ---- bad input for the converter's error paths -------------------------- */

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    uint8_t *b = n > 0 ? malloc((size_t)n) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Rewrites path damaged: the first frame re-made with another magic or a
 * newer version, or a later frame with bytes flipped in its middle. */
static int damage(const char *path, const char *kind)
{
    size_t len, first;
    uint8_t *data = slurp(path, &len);
    if (!data || ZSTD_isError(first = ZSTD_findFrameCompressedSize(data, len)))
        return -1;
    FILE *out = NULL;
    int rc = -1;
    if (!strcmp(kind, "frame")) {
        size_t at = 0, frames[64], nframes = 0;
        while (at < len && nframes < 64) {
            frames[nframes++] = at;
            size_t n = ZSTD_findFrameCompressedSize(data + at, len - at);
            if (ZSTD_isError(n))
                goto out;
            at += n;
        }
        if (nframes < 3) {
            fprintf(stderr, "%s: error: --damage frame needs a recording of 3 frames or more\n",
                    PROG);
            goto out;
        }
        size_t victim = nframes / 2;
        size_t end = victim + 1 < nframes ? frames[victim + 1] : len;
        size_t mid = (frames[victim] + end) / 2;
        for (size_t i = mid - 4; i < mid + 4; i++)
            data[i] ^= 0x5a;
        printf("%zu\n", frames[victim]);
    } else {
        unsigned long long size = ZSTD_getFrameContentSize(data, first);
        if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR)
            goto out;
        uint8_t *raw = malloc((size_t)size), *z = malloc(ZSTD_compressBound((size_t)size));
        if (!raw || !z || ZSTD_isError(ZSTD_decompress(raw, (size_t)size, data, first))) {
            free(raw);
            free(z);
            goto out;
        }
        if (!strcmp(kind, "magic"))
            memcpy(raw, "ZSPYREX\n", ZS_MAGIC_LEN);
        else
            raw[ZS_MAGIC_LEN] = ZS_FORMAT_VERSION + 1; /* a one-byte varint */
        size_t n = ZSTD_compress(z, ZSTD_compressBound((size_t)size), raw, (size_t)size, 3);
        free(raw);
        if (ZSTD_isError(n)) {
            free(z);
            goto out;
        }
        uint8_t *rest = data + first;
        size_t nrest = len - first;
        if (!(out = fopen(path, "wb")) || fwrite(z, 1, n, out) != n ||
            fwrite(rest, 1, nrest, out) != nrest) {
            free(z);
            goto out;
        }
        free(z);
        rc = fclose(out);
        out = NULL;
        goto out;
    }
    if ((out = fopen(path, "wb")) && fwrite(data, 1, len, out) == len) {
        rc = fclose(out);
        out = NULL;
    }
out:
    if (out)
        fclose(out);
    free(data);
    if (rc)
        fprintf(stderr, "%s: error: %s: could not damage the recording\n", PROG, path);
    return rc;
}

int main(int argc, char **argv)
{
    options o = {0};
    zs_error err = {0};
    if (parse_args(argc, argv, &o))
        return 2;
    const zs_layout *l = zs_layout_builtin(o.zeek_version);
    if (!l) {
        fprintf(stderr, "%s: error: no built-in layout for Zeek %s\n", PROG, o.zeek_version);
        return 2;
    }

    world *w = calloc(1, sizeof *w);
    if (!w)
        return 1;
    world_init(w, l, o.seed, o.odd_names);
    int status = 1;
    gstack *stacks = NULL;
    double *cdf = NULL;
    zs_writer *wr = NULL;
    for (int i = 0; i < o.nomit; i++) {
        int found = 0;
        for (int f = 0; f < NFUNCS; f++)
            if (!strcmp(w->specs[f].name, o.omit[i]))
                w->funcs[f].omit = found = 1;
        if (!found) {
            fprintf(stderr, "%s: error: --omit-snapshot-for: no function named '%s'\n", PROG, o.omit[i]);
            status = 2;
            goto out;
        }
    }

    rng r = {o.seed};
    size_t k = (size_t)o.stacks;
    stacks = make_stacks(&r, k);
    if (!(cdf = malloc(k * sizeof *cdf)))
        goto out;
    for (size_t i = 0; i < k; i++)
        cdf[i] = (i ? cdf[i - 1] : 0) + stacks[i].weight;

    if (!(wr = zs_writer_create(o.output, (uid_t)-1, (gid_t)-1, &err)))
        goto fail;
    if (write_header(wr, &o, &err) || write_process(wr, &o, l, &err) ||
        zs_writer_event(wr, 0, PID, ZS_EV_ATTACHED, 0, "", &err) ||
        (o.native && gen_native_write(wr, PID, &err)))
        goto fail;

    uint64_t period_us = (uint64_t)(1e6 / o.rate_hz), t = 0, skipped = 0, next_id = 0;
    if (!period_us)
        period_us = 1;
    uint64_t ten_seconds = (uint64_t)(10 * o.rate_hz);
    /* --off-cpu: a run of L (1 to 8, 4.5 on average) off-CPU samples of one
     * stack starts with probability p, so that a share f = 4.5p / (4.5p +
     * 1 - p) of the samples are off the CPU. */
    double f = (double)o.off_cpu_pct / 100, p_run = f < 1 ? f / (4.5 - 3.5 * f) : 1;
    uint64_t run_left = 0, off_total = 0;
    gstack *run = NULL;
    for (uint64_t i = 0; i < o.samples; i++) {
        t = i * period_us + rng_below(&r, period_us / 4 + 1);
        gstack *s;
        int off = 0;
        if (run_left) {
            s = run;
            off = 1;
            run_left--;
        } else {
            s = &stacks[draw(&r, cdf, k)];
            if (o.off_cpu && o.off_cpu_pct && rng_unit(&r) < p_run) {
                if (rng_below(&r, 2)) /* blocked outside the scripts, waiting for packets */
                    s = &stacks[0];
                run = s;
                off = 1;
                run_left = rng_below(&r, 8);
            }
        }
        if (s->id < 0 && write_stack(w, wr, s, next_id++, o.native, &err))
            goto fail;
        s->count++;
        s->off += (uint64_t)off;
        off_total += (uint64_t)off;
        if (zs_writer_sample(wr, t, (uint64_t)s->id, off, &err))
            goto fail;
        if (i && i % ten_seconds == 0 && rng_below(&r, 2)) {
            uint64_t lost = 1 + rng_below(&r, 3);
            skipped += lost;
            if (zs_writer_event(wr, t, 0, ZS_EV_SKIPPED, lost, "", &err))
                goto fail;
        }
        if ((i + 1) % o.flush_every == 0 && zs_writer_end_frame(wr, &err))
            goto fail;
    }
    if (zs_writer_event(wr, t, PID, ZS_EV_DETACHED, 0, "", &err))
        goto fail;
    if (o.no_trailer) {
        if (zs_writer_end_frame(wr, &err))
            goto fail;
        zs_writer_abandon(wr);
        wr = NULL;
    } else {
        int rc = zs_writer_close(wr, o.samples, skipped, t, &err);
        wr = NULL; /* freed even on failure */
        if (rc)
            goto fail;
    }
    if (o.damage && damage(o.output, o.damage))
        goto out;

    char top[256];
    uint64_t top_count;
    if ((o.expect_kept &&
         write_expect(w, stacks, k, o.expect_kept, 1, 1, 0, top, sizeof top, &top_count)) ||
        (o.expect_cpu &&
         write_expect(w, stacks, k, o.expect_cpu, o.native, 0, 1, top, sizeof top, &top_count)) ||
        write_expect(w, stacks, k, o.expect, o.native, 0, 0, top, sizeof top, &top_count))
        goto out;
    if (o.native) {
        print_split(stacks, k, 0, "by default");
        print_split(stacks, k, 1, "with --interpreter-frames");
    }
    uint64_t used = 0;
    for (size_t i = 0; i < k; i++)
        used += stacks[i].count > 0;
    fprintf(stderr,
            "%s: wrote %s: %" PRIu64 " samples (%" PRIu64 " off-CPU), %" PRIu64 " of %zu stacks used, "
            "Zeek %s layout; most frequent leaf: %s (%" PRIu64 " samples)\n",
            PROG, o.output, o.samples, off_total, used, k, o.zeek_version, top, top_count);
    status = 0;
    goto out;
fail:
    fprintf(stderr, "%s: error: %s\n", PROG, err.detail);
    if (wr) {
        zs_writer_abandon(wr);
        unlink(o.output);
    }
out:
    free(cdf);
    free(stacks);
    for (int f = 0; f < NFUNCS; f++)
        for (int b = 0; b < MAX_BODIES; b++)
            free(w->funcs[f].bodies[b].stmts);
    free(w->heap.mem);
    free(w);
    return status;
}
