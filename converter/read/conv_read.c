/* SPDX-License-Identifier: BSD-3-Clause */
#include "read/conv_read.h"
#include "zs_grow.h"
#include "zs_bsearch.h"
#include "names/conv_demangle.h"
#include "names/conv_interpreter.h"
#include "names/conv_symver.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "zs_image.h"
#include "zs_intern.h"
#include "zs_layout.h"
#include "zs_reader.h"
#include "zs_resolver.h"

/* Bumped whenever resolution or naming changes, so old cache entries are not
 * served for a converter that would now produce different output. */
#define RESOLVER_GENERATION "r7" /* r2: normalized script paths; r3: native mappings;
                                   r4: native file:line and inlined frames;
                                   r5: the interpreter inside the innermost
                                   script frame hidden; r6: code without a
                                   symbol named after its module; r7: native
                                   names without their symbol versions */

/* Stack ids are dense from 0 in a recording; this bounds a hostile one. A
 * recording of more processes than this is not one a recorder wrote (each
 * part of a rotation lists only the processes alive in it). */
enum { MAX_STACK_ID = 1 << 24, MAX_PROCESSES = 4096 };
/* How long (recording time) a sample waits for its native frames at most. */
#define LATE_MAX_US (60 * 1000000ULL)

typedef struct raw_stack {
    uint32_t pid;
    uint32_t nframes;
    zs_frame *frames;
    uint64_t count;
    int defined;
    int keep;  /* its process passes the pid/node filter */
    int waits; /* STACK_WAITS: its samples' native frames may follow (NATIVE_LATE) */
    uint32_t resolved; /* its index in the profile's stacks, once resolved */
} raw_stack;

/* Zeek's network_time at a moment of the recording (NETTIME records). */
typedef struct nettime_point {
    uint64_t t_us;
    double network_time;
} nettime_point;

/* A Func as the resolver read it from the snapshot, once per address: a Func
 * stands in many frames of many stacks, and reading one means its name and
 * the location of every body. */
typedef struct known_func {
    int readable;
    zs_func_info info;
} known_func;

typedef struct process {
    uint32_t pid;
    zs_layout layout;
    int has_layout;
    char *node;
    zs_image *image;
    nettime_point *clock;
    size_t nclock, clock_cap;
    zs_load *load; /* LOAD records (format 8), in time order */
    size_t nload, load_cap;
    char **symbols;   /* native function names by SYMBOL id (format 2) */
    size_t nsymbols;
    /* How native names are shown (names/conv_symver.h): a recorder that wrote
     * them plain chose them (names_plain); an older one's keep their
     * version where keep_version[id] says so. */
    int names_plain;
    unsigned char *keep_version; /* by SYMBOL id, nsymbols of them */
    /* Format 3: modules and native locations by id (dense: the reader
     * checked their order). */
    zs_module *modules; /* strings owned */
    size_t nmodules, modules_cap;
    zs_native_location *locations;
    size_t nlocations, locations_cap;
    /* Their source lines (LINES records), by location: n from at in line. */
    struct loc_lines { uint32_t at, n; } *loc_lines;
    zs_native_line *line;
    size_t nline, line_cap;
    known_func *funcs; /* resolved so far, indexed by func_index */
    size_t nfuncs, funcs_cap;
    zs_intern func_index;
} process;

typedef struct pending_sample {
    uint64_t t_us;
    uint64_t stack_id;
    int off_cpu;
    int waiting; /* for its native frames (a NATIVE_LATE record) */
} pending_sample;

struct conv_reading {
    const char *path;
    zs_reader *reader;
    uint32_t format_version; /* 2 on: func 0 marks a native frame */
    int interpreter_frames;  /* keep the interpreter's own native frames */
    char key[256]; /* the cache key; "" when not asked for or too long */
    int at_end;
    int window, net_window; /* the filter has a time window; one in network time */
    int load_window;        /* it keeps samples by their second's load (--when) */
    /* Format 7: the sampler marks each sample on or off the CPU (the
     * header's sampler is not ptrace). cpu_view: off-CPU samples are left
     * out (--view cpu); key_cpu_view: the cache key was made for that view. */
    int marked, cpu_view, key_cpu_view;
    int names_plain; /* the header's native_names=plain: the recorder chose each name */
    const conv_filter *filter;
    raw_stack *stacks;
    size_t nstacks;   /* allocated entries */
    size_t ndefined;  /* STACK records seen: the next id must not exceed it */
    process *procs;
    size_t nprocs, procs_cap;
    conv_profile *profile;
    uint64_t first_us, last_us;
    int any_sample;
    /* Samples wait here, in recording order, until they are known for
     * good (settle()): in a window in network time, until their process's
     * clock has a point after them; a sample of a waiting stack, and every
     * one after it, until its native frames come (or the recording ends). */
    size_t nwaiting;
    pending_sample *pending;
    size_t npending, pending_head, pending_cap;
    /* When asked for: every kept sample as (t_us, raw stack id), turned
     * into (unix ns, profile stack) once the stacks are resolved. */
    conv_timeline *timeline;
    conv_read_observer observer; /* sees every record first (--info) */
    conv_read_process *totals;   /* per process, filled by conv_read_scan */
    conv_lane *scan_lane;        /* and their load, by conv_read_scan */
};
typedef struct conv_reading reading;

static process *find_process(reading *rd, uint32_t pid, int create)
{
    for (size_t i = 0; i < rd->nprocs; i++)
        if (rd->procs[i].pid == pid)
            return &rd->procs[i];
    if (!create || rd->nprocs == MAX_PROCESSES)
        return NULL;
    if (zs_grow(&rd->procs, &rd->procs_cap, rd->nprocs + 1, sizeof *rd->procs, 8))
        return NULL;
    process *p;
    p = &rd->procs[rd->nprocs];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    if (!(p->image = zs_image_new()))
        return NULL;
    rd->nprocs++;
    return p;
}

static int set_header(reading *rd, const zs_record *rec, zs_error *err)
{
    conv_meta *m = &rd->profile->meta;
    const zs_kv *kv = rec->header.items;
    size_t n = rec->header.count;
    const char *wall = zs_kv_get(kv, n, "start_wall_ns");
    const char *rate = zs_kv_get(kv, n, "rate_hz");
    if (conv_set_string(&m->host, zs_kv_get(kv, n, "host")) ||
        conv_set_string(&m->recorder_version, zs_kv_get(kv, n, "recorder_version")))
        return zs_fail(err, ZS_E_NOMEM, "%s: header", rd->path);
    m->start_wall_ns = wall ? strtoll(wall, NULL, 10) : 0;
    const char *names = zs_kv_get(kv, n, "native_names");
    rd->names_plain = names && !strcmp(names, "plain");
    /* Before format 7 every recording was the ptrace sampler's: wall-clock. */
    const char *sampler = zs_kv_get(kv, n, "sampler");
    const char *off_cpu = zs_kv_get(kv, n, "off_cpu");
    rd->marked = m->marked = rd->format_version < 7 || !sampler || !strcmp(sampler, "ptrace")
                                 ? CONV_UNMARKED
                             : off_cpu && !strcmp(off_cpu, "none") ? CONV_MARKED_CPU_ONLY
                                                                  : CONV_MARKED;
    double hz = rate ? strtod(rate, NULL) : 0;
    if (!(hz > 0 && hz <= 1e6))
        return zs_fail(err, ZS_E_CORRUPT, "%s: offset %" PRIu64 ": header has no valid rate_hz",
                       rd->path, rec->offset);
    m->period_ns = (int64_t)(1e9 / hz);
    return 0;
}

/* A vtable's address a PROCESS record gives under key (hex); 0 without. */
static int vtable_of(const reading *rd, const zs_record *rec, const char *key, uint64_t *out,
                     zs_error *err)
{
    const char *v = zs_kv_get(rec->process.items, rec->process.count, key);
    char *end;
    *out = 0;
    if (!v)
        return 0;
    errno = 0;
    *out = strtoull(v, &end, 16);
    if (!*v || *end || errno)
        return zs_fail(err, ZS_E_CORRUPT, "%s: offset %" PRIu64 ": process %u: %s '%.40s' is not "
                       "a hex address", rd->path, rec->offset, rec->process.pid, key, v);
    return 0;
}

static int add_process(reading *rd, const zs_record *rec, zs_error *err)
{
    process *p = find_process(rd, rec->process.pid, 1);
    if (!p)
        return zs_fail(err, ZS_E_CORRUPT, "%s: more than %d processes (or out of memory)", rd->path, MAX_PROCESSES);
    const char *layout = zs_kv_get(rec->process.items, rec->process.count, "layout");
    const char *version = zs_kv_get(rec->process.items, rec->process.count, "zeek_version");
    const char *node = zs_kv_get(rec->process.items, rec->process.count, "node");
    if (conv_append_unique(&rd->profile->meta.zeek_version, version) ||
        conv_set_string(&p->node, node && *node ? node : NULL))
        return zs_fail(err, ZS_E_NOMEM, "%s: header", rd->path);
    if (!layout)
        return zs_fail(err, ZS_E_CORRUPT, "%s: offset %" PRIu64 ": process %u has no layout",
                       rd->path, rec->offset, rec->process.pid);
    char source[512];
    snprintf(source, sizeof source, "%s: offset %" PRIu64 ": layout of process %u", rd->path,
             rec->offset, rec->process.pid);
    if (zs_layout_parse(layout, strlen(layout), source, &p->layout, err)) {
        err->code = ZS_E_CORRUPT;
        return -1;
    }
    if (vtable_of(rd, rec, "zam_body_vtable", &p->layout.zam.body_vtable_at, err) ||
        vtable_of(rd, rec, "zam_coalesced_vtable", &p->layout.zam.coalesced_vtable_at, err))
        return -1;
    p->has_layout = 1;
    return 0;
}

static int define_stack(reading *rd, const zs_record *rec, zs_error *err)
{
    uint64_t id = rec->stack.id;
    if (id >= MAX_STACK_ID || id > rd->ndefined)
        return zs_fail(err, ZS_E_CORRUPT,
                       "%s: offset %" PRIu64 ": stack id %" PRIu64 " out of sequence (ids are "
                       "dense from 0; %zu defined so far)",
                       rd->path, rec->offset, id, rd->ndefined);
    size_t had = rd->nstacks;
    if (zs_grow(&rd->stacks, &rd->nstacks, id + 1, sizeof *rd->stacks, 256))
        return zs_fail(err, ZS_E_NOMEM, "%s: stack table", rd->path);
    memset(rd->stacks + had, 0, (rd->nstacks - had) * sizeof *rd->stacks);
    raw_stack *s = &rd->stacks[id];
    if (s->defined)
        return zs_fail(err, ZS_E_CORRUPT, "%s: offset %" PRIu64 ": stack %" PRIu64 " defined twice",
                       rd->path, rec->offset, id);
    s->frames = malloc((rec->stack.nframes ? rec->stack.nframes : 1) * sizeof(zs_frame));
    if (!s->frames)
        return zs_fail(err, ZS_E_NOMEM, "%s: stack table", rd->path);
    memcpy(s->frames, rec->stack.frames, rec->stack.nframes * sizeof(zs_frame));
    s->nframes = (uint32_t)rec->stack.nframes;
    s->pid = rec->stack.pid;
    s->defined = 1;
    rd->ndefined++;
    process *p = find_process(rd, s->pid, 0);
    s->keep = conv_filter_keeps_process(rd->filter, s->pid, p ? p->node : NULL);
    return 0;
}

/* Zeek's network time at t_us, interpolated between the NETTIME points
 * around it; -1 when the recording has none for this process. */
static double network_time_at(const process *p, uint64_t t_us)
{
    if (!p || !p->nclock)
        return -1;
    /* The first point after t_us. */
    size_t lo = zs_upper_bound(p->clock, p->nclock, sizeof *p->clock, offsetof(nettime_point, t_us), t_us);
    if (lo == 0)
        return p->clock[0].network_time - (double)(p->clock[0].t_us - t_us) / 1e6;
    const nettime_point *a = &p->clock[lo - 1];
    if (lo == p->nclock)
        return a->network_time + (double)(t_us - a->t_us) / 1e6;
    const nettime_point *b = &p->clock[lo];
    double f = (double)(t_us - a->t_us) / (double)(b->t_us - a->t_us);
    return a->network_time + f * (b->network_time - a->network_time);
}

/* Counts a kept sample: the per-sample path of a conversion, kept small
 * enough to be inlined into count_sample. An off-CPU sample is counted as
 * one, and left out of the on-CPU view. */
static inline int count_kept(reading *rd, uint64_t t_us, uint64_t id, int off_cpu, zs_error *err)
{
    if (off_cpu && rd->marked) {
        rd->profile->meta.off_cpu++;
        if (rd->cpu_view)
            return 0;
    }
    rd->stacks[id].count++;
    if (rd->timeline && conv_timeline_add(rd->timeline, (int64_t)t_us, (uint32_t)id))
        return zs_fail(err, ZS_E_NOMEM, "%s: sample times", rd->path);
    if (!rd->any_sample)
        rd->first_us = t_us;
    rd->last_us = t_us;
    rd->any_sample = 1;
    rd->profile->meta.samples++;
    return 0;
}

/* Counts a sample of a kept process if the time window keeps it. */
static int take_sample(reading *rd, uint64_t t_us, uint64_t id, int off_cpu, zs_error *err)
{
    double offset = (double)t_us / 1e6;
    double wall = (double)rd->profile->meta.start_wall_ns / 1e9 + offset;
    double net = rd->net_window ? network_time_at(find_process(rd, rd->stacks[id].pid, 0), t_us) : -1;
    if (!conv_filter_keeps_time(rd->filter, offset, wall, net))
        return 0;
    if (rd->load_window) {
        const process *p = find_process(rd, rd->stacks[id].pid, 0);
        conv_load_second sec;
        if (!p || !conv_load_second_at(p->load, p->nload, t_us, &sec) ||
            !conv_when_keeps(&rd->filter->when, &sec))
            return 0;
    }
    return count_kept(rd, t_us, id, off_cpu, err);
}

/* Takes the waiting samples whose network time is known for good: their
 * process's clock has a point after them, and later points only come after
 * that one. At the end of the recording (final) every one is taken, on the
 * clock there is. In recording order, so that the result is the one a
 * second pass over a complete clock would give. */
static int settle(reading *rd, int final, zs_error *err)
{
    for (; rd->pending_head < rd->npending; rd->pending_head++) {
        const pending_sample *q = &rd->pending[rd->pending_head];
        const process *p = find_process(rd, rd->stacks[q->stack_id].pid, 0);
        if (!final && rd->net_window && !(p && p->nclock && p->clock[p->nclock - 1].t_us > q->t_us))
            break;
        if (!final && rd->load_window && !(p && p->nload && p->load[p->nload - 1].t_us >= q->t_us))
            break;
        /* A recorder waits for an unwind 3 s at most: a sample still
         * waiting a minute of samples later waits for nothing. */
        if (!final && q->waiting && rd->pending[rd->npending - 1].t_us - q->t_us < LATE_MAX_US)
            break;
        rd->nwaiting -= q->waiting != 0; /* at the end: its script frames, as written */
        if (take_sample(rd, q->t_us, q->stack_id, q->off_cpu, err))
            return -1;
    }
    if (rd->pending_head == rd->npending)
        rd->pending_head = rd->npending = 0;
    return 0;
}

static int wait_in_order(reading *rd, uint64_t t_us, uint64_t id, int off_cpu, zs_error *err)
{
    if (rd->npending == rd->pending_cap) {
        if (rd->pending_head > 0) { /* reuse the taken front */
            memmove(rd->pending, rd->pending + rd->pending_head,
                    (rd->npending - rd->pending_head) * sizeof *rd->pending);
            rd->npending -= rd->pending_head;
            rd->pending_head = 0;
        }
        if (zs_grow(&rd->pending, &rd->pending_cap, rd->npending + 1, sizeof *rd->pending, 1024))
            return zs_fail(err, ZS_E_NOMEM, "%s: samples waiting for network time", rd->path);
    }
    int waiting = rd->stacks[id].waits;
    rd->pending[rd->npending++] = (pending_sample){t_us, id, off_cpu, waiting};
    rd->nwaiting += waiting != 0;
    return settle(rd, 0, err);
}

static int undefined_stack(const reading *rd, const zs_record *rec, uint64_t id, zs_error *err)
{
    return zs_fail(err, ZS_E_CORRUPT, "%s: offset %" PRIu64 ": record refers to undefined stack %" PRIu64,
                   rd->path, rec->offset, id);
}

static int stack_waits(reading *rd, const zs_record *rec, zs_error *err)
{
    uint64_t id = rec->stack_waits.stack_id;
    if (id >= rd->nstacks || !rd->stacks[id].defined)
        return undefined_stack(rd, rec, id, err);
    rd->stacks[id].waits = 1;
    return 0;
}

/* A waiting sample's native frames: it is found by its process and time
 * among the samples waiting (one written in an earlier part of a rotated
 * recording is not there: the record is left aside). */
static int native_late(reading *rd, const zs_record *rec, zs_error *err)
{
    uint64_t id = rec->native_late.stack_id;
    if (id >= rd->nstacks || !rd->stacks[id].defined)
        return undefined_stack(rd, rec, id, err);
    if (rd->stacks[id].pid != rec->native_late.pid)
        return zs_fail(err, ZS_E_CORRUPT, "%s: offset %" PRIu64 ": native frames of pid %" PRIu32
                       " in a stack of pid %" PRIu32, rd->path, rec->offset, rec->native_late.pid,
                       rd->stacks[id].pid);
    for (size_t i = rd->pending_head; i < rd->npending; i++) {
        pending_sample *q = &rd->pending[i];
        if (q->waiting && q->t_us == rec->native_late.t_us &&
            rd->stacks[q->stack_id].pid == rec->native_late.pid) {
            q->stack_id = id;
            q->waiting = 0;
            rd->nwaiting--;
            return settle(rd, 0, err);
        }
    }
    return 0;
}

static int count_sample(reading *rd, const zs_record *rec, zs_error *err)
{
    uint64_t id = rec->sample.stack_id;
    if (id >= rd->nstacks || !rd->stacks[id].defined)
        return zs_fail(err, ZS_E_CORRUPT,
                       "%s: offset %" PRIu64 ": sample refers to undefined stack %" PRIu64,
                       rd->path, rec->offset, id);
    if (!rd->stacks[id].keep)
        return 0;
    if (rd->net_window || rd->load_window || rd->nwaiting || rd->stacks[id].waits)
        return wait_in_order(rd, rec->sample.t_us, id, rec->sample.off_cpu, err);
    if (rd->window)
        return take_sample(rd, rec->sample.t_us, id, rec->sample.off_cpu, err);
    return count_kept(rd, rec->sample.t_us, id, rec->sample.off_cpu, err);
}

static int add_load(reading *rd, const zs_record *rec, zs_error *err)
{
    process *p = find_process(rd, rec->load.pid, 1);
    if (!p)
        return zs_fail(err, ZS_E_CORRUPT, "%s: more than %d processes (or out of memory)", rd->path, MAX_PROCESSES);
    if (p->nload && p->load[p->nload - 1].t_us >= rec->load.t_us)
        return 0; /* out of order: keep the series in time order */
    if (zs_grow(&p->load, &p->load_cap, p->nload + 1, sizeof *p->load, 256))
        return zs_fail(err, ZS_E_NOMEM, "%s: load records", rd->path);
    p->load[p->nload++] = rec->load;
    return rd->npending ? settle(rd, 0, err) : 0;
}

static int add_nettime(reading *rd, const zs_record *rec, zs_error *err)
{
    process *p = find_process(rd, rec->nettime.pid, 1);
    if (!p)
        return zs_fail(err, ZS_E_CORRUPT, "%s: more than %d processes (or out of memory)", rd->path, MAX_PROCESSES);
    if (p->nclock && p->clock[p->nclock - 1].t_us > rec->nettime.t_us)
        return 0; /* out of order: keep the clock monotonic */
    if (zs_grow(&p->clock, &p->clock_cap, p->nclock + 1, sizeof *p->clock, 256))
        return zs_fail(err, ZS_E_NOMEM, "%s: network time", rd->path);
    p->clock[p->nclock++] = (nettime_point){rec->nettime.t_us, rec->nettime.network_time};
    return rd->npending ? settle(rd, 0, err) : 0;
}

static int add_snapshot(reading *rd, const zs_record *rec, zs_error *err)
{
    process *p = find_process(rd, rec->snapshot.pid, 1);
    if (!p)
        return zs_fail(err, ZS_E_CORRUPT, "%s: more than %d processes (or out of memory)", rd->path,
                       MAX_PROCESSES);
    if (zs_image_add(p->image, rec->snapshot.addr, rec->snapshot.data, rec->snapshot.len))
        return zs_fail(err, ZS_E_NOMEM, "%s: snapshot image", rd->path);
    return 0;
}

/* Native function ids are dense from 0 per process; a hostile file cannot
 * make the table larger than this. */
enum { MAX_SYMBOLS = 1 << 20 };

static int add_symbol(reading *rd, const zs_record *rec, zs_error *err)
{
    process *p = find_process(rd, rec->symbol.pid, 1);
    uint64_t id = rec->symbol.id;
    if (!p || id >= MAX_SYMBOLS)
        return zs_fail(err, ZS_E_CORRUPT, "%s: symbol id %" PRIu64 " out of range", rd->path, id);
    size_t had = p->nsymbols;
    if (zs_grow(&p->symbols, &p->nsymbols, id + 1, sizeof *p->symbols, 64))
        return zs_fail(err, ZS_E_NOMEM, "%s: symbols", rd->path);
    memset(p->symbols + had, 0, (p->nsymbols - had) * sizeof *p->symbols);
    free(p->symbols[id]);
    if (!(p->symbols[id] = strdup(rec->symbol.name)))
        return zs_fail(err, ZS_E_NOMEM, "%s: symbols", rd->path);
    return 0;
}

/* A hostile file cannot make the tables larger than these. */
enum { MAX_MODULES = 1 << 16, MAX_LOCATIONS = 1 << 22 };

static int add_module(reading *rd, const zs_record *rec, zs_error *err)
{
    process *p = find_process(rd, rec->module.pid, 1);
    const zs_module *m = &rec->module.m;
    if (!p || p->nmodules >= MAX_MODULES || m->id != p->nmodules)
        return zs_fail(err, ZS_E_CORRUPT, "%s: offset %" PRIu64 ": module %" PRIu64 " out of range",
                       rd->path, rec->offset, m->id);
    if (zs_grow(&p->modules, &p->modules_cap, p->nmodules + 1, sizeof *p->modules, 16))
        return zs_fail(err, ZS_E_NOMEM, "%s: modules", rd->path);
    zs_module copy = *m;
    copy.build_id = strdup(m->build_id);
    copy.path = strdup(m->path);
    if (!copy.build_id || !copy.path) {
        free((char *)copy.build_id);
        free((char *)copy.path);
        return zs_fail(err, ZS_E_NOMEM, "%s: modules", rd->path);
    }
    p->modules[p->nmodules++] = copy;
    return 0;
}

/* A location inside its module's range (module-relative address). */
static int add_location(reading *rd, const zs_record *rec, zs_error *err)
{
    process *p = find_process(rd, rec->location.pid, 1);
    const zs_native_location *l = &rec->location.l;
    if (!p || p->nlocations >= MAX_LOCATIONS || l->id != p->nlocations || l->module > p->nmodules)
        return zs_fail(err, ZS_E_CORRUPT, "%s: offset %" PRIu64 ": location %" PRIu64 " out of range",
                       rd->path, rec->offset, l->id);
    const zs_module *m = l->module ? &p->modules[l->module - 1] : NULL;
    if (m && l->address >= m->end - m->start)
        return zs_fail(err, ZS_E_CORRUPT,
                       "%s: offset %" PRIu64 ": location %" PRIu64 " lies outside its module",
                       rd->path, rec->offset, l->id);
    /* Two arrays of one capacity: loc_lines grows to what locations got. */
    size_t lines_cap = p->locations_cap;
    if (zs_grow(&p->locations, &p->locations_cap, p->nlocations + 1, sizeof *p->locations, 256) ||
        zs_grow(&p->loc_lines, &lines_cap, p->locations_cap, sizeof *p->loc_lines, 256))
        return zs_fail(err, ZS_E_NOMEM, "%s: locations", rd->path);
    p->loc_lines[p->nlocations] = (struct loc_lines){0, 0};
    p->locations[p->nlocations++] = *l;
    return 0;
}

enum { MAX_LINES = 1 << 24 }; /* source lines of all locations of a process */

/* The source lines of a location defined before (the reader checked),
 * once. */
static int add_lines(reading *rd, const zs_record *rec, zs_error *err)
{
    process *p = find_process(rd, rec->lines.pid, 1);
    const zs_native_lines *l = rec->lines.l;
    if (!p || l->location >= p->nlocations || p->loc_lines[l->location].n)
        return zs_fail(err, ZS_E_CORRUPT,
                       "%s: offset %" PRIu64 ": lines of location %" PRIu64 " unknown or given twice",
                       rd->path, rec->offset, l->location);
    if (p->nline + l->n > MAX_LINES)
        return zs_fail(err, ZS_E_CORRUPT, "%s: offset %" PRIu64 ": too many source lines",
                       rd->path, rec->offset);
    if (zs_grow(&p->line, &p->line_cap, p->nline + l->n, sizeof *p->line, 256))
        return zs_fail(err, ZS_E_NOMEM, "%s: source lines", rd->path);
    memcpy(p->line + p->nline, l->line, l->n * sizeof *l->line);
    p->loc_lines[l->location] = (struct loc_lines){(uint32_t)p->nline, (uint32_t)l->n};
    p->nline += l->n;
    return 0;
}

/* A native frame's name: its symbol without its version where the
 * recording leaves no doubt (names/conv_symver.h), demangled (conv_native_name). */
static zs_frame_info native_frame(const process *p, uint64_t id)
{
    const char *mangled = p && id < p->nsymbols ? p->symbols[id] : NULL;
    char *name = NULL;
    if (mangled) {
        int keep = p->names_plain || (p->keep_version && p->keep_version[id]);
        char *plain = conv_symver_shown(mangled, keep);
        name = plain ? conv_native_name(plain) : NULL;
        free(plain);
    } else {
        char buf[64];
        snprintf(buf, sizeof buf, "[native symbol %" PRIu64 "]", id);
        name = strdup(buf);
    }
    return (zs_frame_info){name, strdup(CONV_NATIVE_FILE), 0, 0, !mangled};
}

/* A native function: symbol's name (demangled) in file (a SYMBOL id too;
 * UINT64_MAX: not known). -1 on no memory. */
static int64_t native_function(conv_profile *prof, const process *p, uint64_t symbol,
                               uint64_t file, int *unresolved)
{
    zs_frame_info fi = native_frame(p, symbol);
    const char *source = p && file < p->nsymbols ? p->symbols[file] : NULL;
    *unresolved |= fi.unresolved;
    int64_t f = fi.name ? conv_profile_native_function(prof, fi.name, source) : -1;
    zs_frame_info_free(&fi);
    return f;
}

/* A format 3 native frame (a LOCATION id) as profile locations, appended
 * to locs (room for ZS_MAX_INLINE) outermost first: its symbol's function,
 * at its address in its module's mapping, then the functions inlined there
 * (from its LINES), each its own location marked inlined. The number
 * appended, -1 on no memory. */
static int native_locations(conv_profile *prof, const process *p, uint64_t id, uint32_t *locs,
                            int *unresolved)
{
    const zs_native_location *l = p && id < p->nlocations ? &p->locations[id] : NULL;
    const zs_module *m = l && l->module ? &p->modules[l->module - 1] : NULL;
    int64_t mapping = m ? conv_profile_mapping(prof, m->start, m->end, m->file_offset, m->path,
                                               m->build_id)
                        : -1;
    if (m && mapping < 0)
        return -1;
    uint64_t address = m ? m->start + l->address : l ? l->address : 0;
    struct loc_lines ll = l ? p->loc_lines[id] : (struct loc_lines){0, 0};
    const zs_native_line *lines = ll.n ? &p->line[ll.at] : NULL;
    /* lines run innermost first; the last is in the symbol's function. */
    for (uint32_t k = 0; k < (ll.n ? ll.n : 1); k++) {
        const zs_native_line *at = lines ? &lines[ll.n - 1 - k] : NULL;
        uint64_t symbol = k == 0 ? (l ? l->symbol : UINT64_MAX) : at->function;
        int64_t f = native_function(prof, p, symbol, at ? at->file : UINT64_MAX, unresolved);
        int64_t loc = f < 0 ? -1
                            : conv_profile_native_location(prof, (uint32_t)f, at ? (int)at->line : 0,
                                                           k > 0, (uint32_t)(mapping + 1), address);
        if (loc < 0)
            return -1;
        locs[k] = (uint32_t)loc;
    }
    return ll.n ? (int)ll.n : 1;
}

static void note_event(reading *rd, const zs_record *rec)
{
    if (rec->event.kind == ZS_EV_SKIPPED)
        rd->profile->meta.skipped += rec->event.value;
    else if (rec->event.kind == ZS_EV_TORN)
        rd->profile->meta.torn += rec->event.value;
}

static int add_resolved(reading *rd, raw_stack *s, uint32_t process, const uint32_t *locs,
                        uint32_t nlocs, zs_error *err)
{
    int64_t at = conv_profile_intern_stack(rd->profile, process, locs, nlocs, s->count);
    if (at < 0)
        return zs_fail(err, ZS_E_NOMEM, "%s: profile", rd->path);
    s->resolved = (uint32_t)at;
    return 0;
}

/* The Func at addr in p's snapshot, resolved the first time it is asked for:
 * *out is NULL when it cannot be read. 0, or -1 on no memory. */
static int func_of(process *p, const zs_memory *mem, uint64_t addr, const zs_func_info **out)
{
    uint64_t h = zs_mix64(addr); /* a bijection: the hash is the key */
    int64_t at = zs_intern_find(&p->func_index, h, NULL, NULL, NULL);
    if (at < 0) {
        if (zs_grow(&p->funcs, &p->funcs_cap, p->nfuncs + 1, sizeof *p->funcs, 64))
            return -1;
        known_func *k = &p->funcs[p->nfuncs];
        k->readable = zs_resolve_func(mem, &p->layout, addr, &k->info) == 0;
        if (zs_intern_add(&p->func_index, h, (uint32_t)p->nfuncs)) {
            if (k->readable)
                zs_func_info_free(&k->info);
            return -1;
        }
        at = (int64_t)p->nfuncs++;
    }
    *out = p->funcs[at].readable ? &p->funcs[at].info : NULL;
    return 0;
}

/* The instruction the functions ZAM inlined at frame i run: frames i+1...
 * that are such functions (the recorder writes them, Zeek 7.2 on), their
 * innermost's instruction; 0 when none follow. */
static uint64_t inlined_run(process *p, const zs_memory *mem, const raw_stack *s, uint32_t i)
{
    uint64_t inst = 0;
    for (uint32_t j = i + 1; j < s->nframes; j++) {
        const zs_frame *fr = &s->frames[j];
        const zs_func_info *f;
        if (zs_frame_is_native(fr) || !zs_stmt_is_zam(fr->stmt) || func_of(p, mem, fr->func, &f) ||
            !zs_zam_frame_is_inlined(mem, &p->layout, f, fr->stmt))
            break;
        inst = zs_stmt_zam_inst(fr->stmt);
    }
    return inst;
}

/* Whether frame i of s is the interpreter's plumbing: a native frame
 * between two script frames, where the recorder keeps the C++ that runs
 * between one script call and the next. first and last are the stack's
 * outermost and innermost script frames (first > last: none). */
static int is_plumbing(const raw_stack *s, uint32_t i, uint32_t first, uint32_t last)
{
    return i > first && i < last && zs_frame_is_native(&s->frames[i]);
}

/* The outermost and innermost script frame of s; first > last when it has
 * none, when the plumbing is kept, or in a recording of format 1 (no native
 * frames): nothing then lies between them. */
static void script_span(const reading *rd, const raw_stack *s, uint32_t *first, uint32_t *last)
{
    *first = 1;
    *last = 0;
    if (rd->interpreter_frames || rd->format_version < 2)
        return;
    for (uint32_t i = 0; i < s->nframes; i++) {
        if (zs_frame_is_native(&s->frames[i]))
            continue;
        if (*first > *last)
            *first = i;
        *last = i;
    }
}

/* Whether location k of locs is a function inlined into location k - 1:
 * the same PC, one pprof Location with it. */
static int inlined_at(const conv_profile *prof, const uint32_t *locs, uint32_t k)
{
    const conv_location *in = &prof->locations[locs[k]], *out = &prof->locations[locs[k - 1]];
    return in->inlined && in->mapping == out->mapping && in->address == out->address;
}

/* Drops the interpreter's own frames directly inside the innermost script
 * frame of locs (names/conv_interpreter.h: running its statements, evaluating
 * its expressions), up to the first native frame that is something else (a
 * BiF, a Val method, malloc), which stays with all it called: the time of
 * those frames is the script function's own. A PC is dropped whole or kept
 * whole: one where a value's destructor was inlined into NameExpr::Eval
 * keeps NameExpr::Eval, since a pprof Location is one PC with all its
 * functions, the same wherever the PC is. */
static void hide_interpreter_leaf(const conv_profile *prof, uint32_t *locs, uint32_t *nlocs)
{
    uint32_t script = *nlocs, end;
    for (uint32_t k = 0; k < *nlocs; k++)
        if (!conv_function_is_native(&prof->functions[prof->locations[locs[k]].function]))
            script = k;
    if (script == *nlocs)
        return; /* no script frame: all of it is native */
    for (end = script + 1; end < *nlocs; end++)
        if (!conv_is_interpreter_function(prof->functions[prof->locations[locs[end]].function].name))
            break;
    while (end < *nlocs && end > script + 1 && inlined_at(prof, locs, end))
        end--; /* back to the start of its PC */
    memmove(locs + script + 1, locs + end, (*nlocs - end) * sizeof *locs);
    *nlocs -= end - script - 1;
}

/* Resolves one raw stack into interned locations and adds it, without the
 * interpreter's own frames unless asked for. */
static int resolve_stack(reading *rd, raw_stack *s, uint32_t *locs, zs_error *err)
{
    conv_profile *prof = rd->profile;
    process *p = find_process(rd, s->pid, 0);
    int unresolved = 0;
    int64_t proc = conv_profile_process(prof, prof->meta.host, s->pid, p ? p->node : NULL);
    if (proc < 0)
        return zs_fail(err, ZS_E_NOMEM, "%s: profile", rd->path);
    if (s->nframes == 0) {
        int64_t f = conv_profile_function(prof, CONV_EMPTY_STACK, "", 0);
        int64_t l = f < 0 ? -1 : conv_profile_location(prof, (uint32_t)f, 0);
        if (l < 0)
            return zs_fail(err, ZS_E_NOMEM, "%s: profile", rd->path);
        locs[0] = (uint32_t)l;
        return add_resolved(rd, s, (uint32_t)proc, locs, 1, err);
    }
    zs_memory mem = {0};
    if (p)
        mem = zs_image_memory(p->image);
    uint32_t first, last, nlocs = 0;
    uint64_t run = 0; /* the instruction of the ZAM-inlined frames under way */
    script_span(rd, s, &first, &last);
    for (uint32_t i = 0; i < s->nframes; i++) {
        if (is_plumbing(s, i, first, last))
            continue;
        zs_frame_info fi;
        if (rd->format_version >= 3 && zs_frame_is_native(&s->frames[i])) {
            int added = native_locations(prof, p, s->frames[i].stmt, locs + nlocs, &unresolved);
            if (added < 0)
                return zs_fail(err, ZS_E_NOMEM, "%s: profile", rd->path);
            nlocs += (uint32_t)added;
            continue;
        }
        if (rd->format_version >= 2 && zs_frame_is_native(&s->frames[i])) {
            fi = native_frame(p, s->frames[i].stmt);
        } else if (p && p->has_layout) {
            const zs_func_info *f;
            if (func_of(p, &mem, s->frames[i].func, &f) ||
                zs_resolve_frame_of(&mem, &p->layout, f, &s->frames[i], &fi))
                return zs_fail(err, ZS_E_NOMEM, "%s: resolving", rd->path);
        } else { /* no process record, so no layout to read anything with */
            char name[64];
            snprintf(name, sizeof name, "[unresolved 0x%" PRIx64 "]", s->frames[i].func);
            fi = (zs_frame_info){strdup(name), strdup(""), 0, 0, 1};
        }
        unresolved |= fi.unresolved;
        int64_t f = !fi.name || !fi.file                  ? -1
                    : zs_frame_is_native(&s->frames[i]) ? conv_profile_native_function(prof, fi.name, NULL)
                                                        : conv_profile_function(prof, fi.name, fi.file,
                                                                                fi.start_line);
        /* A ZAM body's instruction in a function inlined into it: that
         * function is a frame of its own, as without ZAM (its first line is
         * not known: the instruction has only its own); in pprof, a Line of
         * the frame's Location, whether the instruction's locations name it
         * (fi.inlined) or the recorder wrote it as a frame (zam_inlined, a
         * run of them after their body's frame, all at the innermost's
         * instruction). */
        if (!fi.zam_inlined)
            run = p && p->has_layout && zs_stmt_is_zam(s->frames[i].stmt)
                      ? inlined_run(p, &mem, s, i) : 0;
        uint64_t inst = run ? run : fi.ninlined ? zs_stmt_zam_inst(s->frames[i].stmt) : 0;
        int64_t l = f < 0 ? -1
                    : inst ? conv_profile_zam_location(prof, (uint32_t)f, fi.line,
                                                       fi.zam_inlined && run, inst)
                           : conv_profile_location(prof, (uint32_t)f, fi.line);
        if (l >= 0)
            locs[nlocs++] = (uint32_t)l;
        for (size_t k = 0; l >= 0 && k < fi.ninlined && nlocs < ZS_MAX_FRAMES * ZS_MAX_INLINE; k++) {
            const zs_zam_line *in = &fi.inlined[k];
            f = conv_profile_function(prof, in->func, in->file ? in->file : "", 0);
            l = f < 0 ? -1 : conv_profile_zam_location(prof, (uint32_t)f, in->line, 1, inst);
            if (l >= 0)
                locs[nlocs++] = (uint32_t)l;
        }
        zs_frame_info_free(&fi);
        if (l < 0)
            return zs_fail(err, ZS_E_NOMEM, "%s: profile", rd->path);
    }
    if (!rd->interpreter_frames && rd->format_version >= 2)
        hide_interpreter_leaf(prof, locs, &nlocs);
    if (unresolved)
        prof->meta.unresolved += s->count;
    return add_resolved(rd, s, (uint32_t)proc, locs, nlocs, err);
}

/* Which of p's native names keep their version: those another function
 * of the same module would share without it. From the recording alone
 * (its LOCATIONs' names and modules; format 2's names, which have no
 * module), so that its names never depend on what else is converted. -1
 * when out of memory. */
static int versions_kept(const reading *rd, process *p)
{
    p->names_plain = rd->names_plain;
    if (p->names_plain || !p->nsymbols)
        return 0;
    size_t n = rd->format_version >= 3 ? p->nlocations : p->nsymbols, m = 0;
    const char **names = malloc((n ? n : 1) * sizeof *names);
    const char **modules = malloc((n ? n : 1) * sizeof *modules);
    size_t *ids = malloc((n ? n : 1) * sizeof *ids);
    unsigned char *keep = malloc(n ? n : 1);
    int rc = -1;
    if (!names || !modules || !ids || !keep || !(p->keep_version = calloc(p->nsymbols, 1)))
        goto out;
    for (size_t i = 0; i < n; i++) {
        const zs_native_location *l = rd->format_version >= 3 ? &p->locations[i] : NULL;
        uint64_t id = l ? l->symbol : i;
        if (id >= p->nsymbols || !p->symbols[id])
            continue;
        names[m] = p->symbols[id];
        modules[m] = l && l->module ? p->modules[l->module - 1].path : "";
        ids[m++] = (size_t)id;
    }
    if (conv_symver_shared(names, modules, m, keep))
        goto out;
    for (size_t i = 0; i < m; i++)
        p->keep_version[ids[i]] |= keep[i];
    rc = 0;
out:
    free(names);
    free(modules);
    free(ids);
    free(keep);
    return rc;
}

static int resolve_all(reading *rd, zs_error *err)
{
    /* Each native frame may stand for ZS_MAX_INLINE functions. */
    uint32_t *locs = malloc(ZS_MAX_FRAMES * ZS_MAX_INLINE * sizeof *locs);
    if (!locs)
        return zs_fail(err, ZS_E_NOMEM, "%s: resolving", rd->path);
    for (size_t i = 0; i < rd->nprocs; i++) {
        zs_image_seal(rd->procs[i].image);
        if (versions_kept(rd, &rd->procs[i])) {
            free(locs);
            return zs_fail(err, ZS_E_NOMEM, "%s: native names", rd->path);
        }
    }
    int rc = 0;
    for (size_t i = 0; i < rd->nstacks && rc == 0; i++)
        if (rd->stacks[i].defined && rd->stacks[i].count)
            rc = resolve_stack(rd, &rd->stacks[i], locs, err);
    free(locs);
    return rc;
}

static int dispatch(reading *rd, const zs_record *rec, zs_error *err)
{
    switch (rec->type) {
    case ZS_REC_NETTIME: return add_nettime(rd, rec, err);
    case ZS_REC_LOAD: return add_load(rd, rec, err);
    case ZS_REC_HEADER: return set_header(rd, rec, err);
    case ZS_REC_PROCESS: return add_process(rd, rec, err);
    case ZS_REC_STACK: return define_stack(rd, rec, err);
    case ZS_REC_SAMPLE: return count_sample(rd, rec, err);
    case ZS_REC_SAMPLES_OFF_CPU: return 0; /* the reader hands its samples out as ZS_REC_SAMPLE */
    case ZS_REC_SNAPSHOT: return add_snapshot(rd, rec, err);
    case ZS_REC_EVENT: note_event(rd, rec); return 0;
    case ZS_REC_TRAILER: return 0;
    case ZS_REC_SYMBOL: return add_symbol(rd, rec, err);
    case ZS_REC_MODULE: return add_module(rd, rec, err);
    case ZS_REC_LOCATION: return add_location(rd, rec, err);
    case ZS_REC_LINES: return add_lines(rd, rec, err);
    case ZS_REC_STACK_WAITS: return stack_waits(rd, rec, err);
    case ZS_REC_NATIVE_LATE: return native_late(rd, rec, err);
    }
    return 0; /* record types of later versions: nothing to do */
}

/* The key names the recording by its id and its size (a recording that is
 * still growing gets a new key), and what its profile shows: a profile with
 * the interpreter's plumbing, or of the on-CPU view, is not the default one. */
static int make_key(reading *rd, const zs_record *header, zs_error *err)
{
    struct stat st;
    const char *id = zs_kv_get(header->header.items, header->header.count, "recording_id");
    if (stat(rd->path, &st) != 0)
        return zs_fail(err, ZS_E_IO, "%s: cannot stat", rd->path);
    if (snprintf(rd->key, sizeof rd->key, "%s:%s:%lld%s%s", RESOLVER_GENERATION, id ? id : "?",
                 (long long)st.st_size, rd->interpreter_frames ? ":interpreter-frames" : "",
                 rd->key_cpu_view ? ":cpu-view" : "") >= (int)sizeof rd->key)
        rd->key[0] = '\0'; /* no key: not cached */
    return 0;
}

/* --view cpu on a recording whose samples are not marked on or off the CPU. */
static int refuse_cpu_view(const reading *rd, zs_error *err)
{
    return zs_fail(err, ZS_E_USAGE, "%s: recorded by the ptrace sampler: its samples are wall-clock "
                   "only; --view cpu needs a recording made with --sampler bpf", rd->path);
}

/* Shows rec to the observer, then takes it. */
static int take(reading *rd, const zs_record *rec, zs_error *err)
{
    if (rd->observer.see)
        rd->observer.see(rd->observer.ctx, rec);
    return dispatch(rd, rec, err);
}

conv_reading *conv_read_open(const char *path, unsigned flags, const conv_read_observer *observer,
                             zs_error *err)
{
    int want_key = (flags & CONV_READ_KEY) != 0;
    reading *rd = calloc(1, sizeof *rd);
    zs_record rec;
    if (!rd || !(rd->profile = conv_profile_new())) {
        free(rd);
        zs_fail(err, ZS_E_NOMEM, "%s: profile", path);
        return NULL;
    }
    rd->path = path;
    rd->interpreter_frames = (flags & CONV_READ_INTERPRETER_FRAMES) != 0;
    rd->key_cpu_view = (flags & CONV_READ_CPU_VIEW) != 0;
    if (observer)
        rd->observer = *observer;
    if (!(rd->reader = zs_reader_open(path, err)))
        goto fail;
    int got = zs_reader_next(rd->reader, &rec, err);
    rd->format_version = zs_reader_format_version(rd->reader);
    if (got < 0)
        goto fail;
    if (got == 0) {
        rd->at_end = 1;
        if (want_key) {
            zs_fail(err, ZS_E_NOT_RECORDING, "%s: no header", path);
            goto fail;
        }
        if (rd->key_cpu_view) {
            refuse_cpu_view(rd, err);
            goto fail;
        }
        return rd;
    }
    if (want_key && rec.type == ZS_REC_HEADER && make_key(rd, &rec, err))
        goto fail;
    if (take(rd, &rec, err))
        goto fail;
    if (rd->key_cpu_view && !rd->marked) {
        refuse_cpu_view(rd, err);
        goto fail;
    }
    return rd;
fail:
    conv_read_close(rd);
    return NULL;
}

const char *conv_read_key(const conv_reading *rd)
{
    return rd->key[0] ? rd->key : NULL;
}

/* Reads every record after the header, counting and checking; the same for
 * a profile and for a description. */
static int read_rest(reading *rd, const conv_filter *filter, conv_read_report *report, zs_error *err)
{
    const zs_notes *notes = report->notes;
    int want_timeline = report->want_timeline, want_lane = report->want_lane;
    memset(report, 0, sizeof *report);
    report->notes = notes;
    report->want_timeline = want_timeline;
    report->want_lane = want_lane;
    time_t started = time(NULL), shown = started;
    rd->filter = filter;
    rd->cpu_view = rd->profile->meta.cpu_view = filter && filter->view == CONV_VIEW_CPU;
    if (rd->cpu_view && !rd->marked)
        return refuse_cpu_view(rd, err);
    if (rd->key[0] && rd->cpu_view != rd->key_cpu_view)
        return zs_fail(err, ZS_E_USAGE, "%s: read for the %s view with the cache key of the other",
                       rd->path, conv_view_name(filter ? filter->view : CONV_VIEW_WALL));
    /* Asked once here, not for each of millions of samples. */
    rd->window = filter && (filter->from.set || filter->to.set);
    rd->net_window = conv_filter_needs_nettime(filter);
    rd->load_window = filter && filter->when.n > 0;
    if (report->want_timeline && !(rd->timeline = calloc(1, sizeof *rd->timeline)))
        return zs_fail(err, ZS_E_NOMEM, "%s: profile", rd->path);
    zs_record rec;
    int got = 0;
    while (!rd->at_end && (got = zs_reader_next(rd->reader, &rec, err)) > 0) {
        if (rec.type == ZS_REC_SAMPLE && (++report->samples & 0xfffff) == 0 && notes &&
            time(NULL) > shown) { /* a long read: say where it is, once a second */
            shown = time(NULL);
            zs_note(notes, ZS_NOTE_PROGRESS, "%s: %.1f million samples read (%lld s)", rd->path,
                    (double)report->samples / 1e6, (long long)(shown - started));
        }
        if (rec.type == ZS_REC_TRAILER)
            report->has_trailer = 1;
        if (take(rd, &rec, err))
            return -1;
    }
    if (got < 0)
        return -1;
    rd->at_end = 1;
    report->truncated = zs_reader_truncated(rd->reader, &report->truncated_at);
    report->skipped_records = zs_reader_skipped_records(rd->reader);
    return settle(rd, 1, err);
}

static int make_lane(reading *rd, int64_t start_ns, conv_lane **out, zs_error *err);

int conv_read_scan(conv_reading *rd, conv_read_report *report, conv_read_totals *totals,
                   zs_error *err)
{
    if (read_rest(rd, NULL, report, err))
        return -1;
    if (!(rd->totals = calloc(rd->nprocs ? rd->nprocs : 1, sizeof *rd->totals)))
        return zs_fail(err, ZS_E_NOMEM, "%s: totals", rd->path);
    for (size_t i = 0; i < rd->nprocs; i++) {
        const process *p = &rd->procs[i];
        conv_read_process *t = &rd->totals[i];
        t->pid = p->pid;
        t->has_nettime = p->nclock > 0;
        if (p->nclock) {
            t->net_first = p->clock[0].network_time;
            t->net_last = p->clock[p->nclock - 1].network_time;
        }
    }
    for (size_t i = 0; i < rd->nstacks; i++) {
        const raw_stack *s = &rd->stacks[i];
        const process *p = s->defined ? find_process(rd, s->pid, 0) : NULL;
        if (p)
            rd->totals[p - rd->procs].samples += s->count;
    }
    const conv_meta *m = &rd->profile->meta;
    if (make_lane(rd, m->start_wall_ns, &rd->scan_lane, err))
        return -1;
    *totals = (conv_read_totals){
        .format_version = rd->format_version, .start_wall_ns = m->start_wall_ns,
        .samples = m->samples, .stacks = rd->ndefined, .skipped = m->skipped, .torn = m->torn,
        .marked = rd->marked, .off_cpu = m->off_cpu,
        .first_us = rd->first_us, .last_us = rd->last_us,
        .procs = rd->totals, .nprocs = rd->nprocs, .lane = rd->scan_lane};
    return 0;
}

/* The kept processes' load, second by second, in unix time (start_ns:
 * the recording's start), into a new *out; each second marked when --when
 * keeps it (all are, without --when). */
static int make_lane(reading *rd, int64_t start_ns, conv_lane **out, zs_error *err)
{
    conv_lane *lane = *out = calloc(1, sizeof *lane);
    if (!lane)
        return zs_fail(err, ZS_E_NOMEM, "%s: load lane", rd->path);
    for (size_t i = 0; i < rd->nprocs; i++) {
        const process *p = &rd->procs[i];
        if (!conv_filter_keeps_process(rd->filter, p->pid, p->node))
            continue;
        for (size_t k = 0; k < p->nload; k++) {
            conv_load_second s;
            const zs_load *l = &p->load[k];
            conv_load_second_of(p->load, p->nload, k, &s);
            conv_lane_point pt = {
                .t_ns = start_ns + (int64_t)s.t_us * 1000, .pid = p->pid,
                .has_rates = (uint8_t)s.has_rates, .has_lag = (uint8_t)s.has_lag,
                .has_queue = (uint8_t)s.has_queue,
                .selected = (uint8_t)(!rd->filter || !rd->filter->when.n || conv_when_keeps(&rd->filter->when, &s)),
                .has_counters = (l->what & ZS_LOAD_COUNTERS) != 0, .live = (l->what & ZS_LOAD_LIVE) != 0,
                .af_packet = (l->what & ZS_LOAD_AF_PACKET) != 0,
                .pps = s.pps, .lag_s = s.lag_s, .queue_bytes = s.queue_bytes,
                .received = l->received, .dropped = l->dropped};
            if (conv_lane_add(lane, &pt))
                return zs_fail(err, ZS_E_NOMEM, "%s: load lane", rd->path);
        }
    }
    return 0;
}

uint32_t conv_read_format_version(const conv_reading *rd) { return rd->format_version; }

int conv_read_profile(conv_reading *rd, const conv_filter *filter, conv_profile **out,
                      conv_read_report *report, zs_error *err)
{
    if (read_rest(rd, filter, report, err) || resolve_all(rd, err))
        return -1;
    if (report->want_lane && make_lane(rd, rd->profile->meta.start_wall_ns, &rd->profile->lane, err))
        return -1;
    if (rd->timeline) { /* now in unix time, and the profile's stack numbers */
        for (size_t i = 0; i < rd->timeline->n; i++) {
            rd->timeline->t_ns[i] = rd->profile->meta.start_wall_ns + rd->timeline->t_ns[i] * 1000;
            rd->timeline->stack[i] = rd->stacks[rd->timeline->stack[i]].resolved;
        }
        rd->profile->timeline = rd->timeline;
        rd->timeline = NULL;
    }
    if (rd->any_sample) {
        rd->profile->meta.start_wall_ns += (int64_t)rd->first_us * 1000;
        rd->profile->meta.duration_ns = (int64_t)(rd->last_us - rd->first_us) * 1000 +
                                        rd->profile->meta.period_ns;
    }
    *out = rd->profile;
    rd->profile = NULL;
    return 0;
}

void conv_read_close(conv_reading *rd)
{
    if (!rd)
        return;
    zs_reader_close(rd->reader);
    conv_profile_free(rd->profile);
    conv_timeline_free(rd->timeline);
    free(rd->timeline);
    for (size_t i = 0; i < rd->nstacks; i++)
        free(rd->stacks[i].frames);
    free(rd->stacks);
    for (size_t i = 0; i < rd->nprocs; i++) {
        zs_image_free(rd->procs[i].image);
        free(rd->procs[i].node);
        free(rd->procs[i].clock);
        free(rd->procs[i].load);
        for (size_t k = 0; k < rd->procs[i].nsymbols; k++)
            free(rd->procs[i].symbols[k]);
        free(rd->procs[i].symbols);
        free(rd->procs[i].keep_version);
        for (size_t k = 0; k < rd->procs[i].nmodules; k++) {
            free((char *)rd->procs[i].modules[k].build_id);
            free((char *)rd->procs[i].modules[k].path);
        }
        free(rd->procs[i].modules);
        free(rd->procs[i].locations);
        free(rd->procs[i].loc_lines);
        free(rd->procs[i].line);
        for (size_t k = 0; k < rd->procs[i].nfuncs; k++)
            if (rd->procs[i].funcs[k].readable)
                zs_func_info_free(&rd->procs[i].funcs[k].info);
        free(rd->procs[i].funcs);
        zs_intern_free(&rd->procs[i].func_index);
    }
    free(rd->procs);
    free(rd->pending);
    free(rd->totals);
    if (rd->scan_lane)
        conv_lane_free(rd->scan_lane);
    free(rd->scan_lane);
    free(rd);
}

int conv_read_recording(const char *path, const conv_filter *filter, conv_profile **out,
                        conv_read_report *report, zs_error *err)
{
    conv_reading *rd = conv_read_open(path, 0, NULL, err);
    int rc = rd ? conv_read_profile(rd, filter, out, report, err) : -1;
    conv_read_close(rd);
    return rc;
}
