/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/rec_output.h"
#include "zs_grow.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "output/rec_capture.h"
#include "base/rec_clock.h"
#include "output/rec_stacks.h"
#include "zs_hex.h"
#include "zs_version.h"
#include "zs_writer.h"

/* Never fill the disk: refuse to start a part with less free than this. */
enum { MIN_FREE_BYTES = 64 << 20, MAX_PARTS_KEPT = 100000 };

typedef struct id_map {
    uint32_t *to; /* by the finder's id */
    size_t cap;
    uint32_t n;
} id_map;

typedef struct proc {
    const rec_target *target;
    rec_capture *capture; /* per part: each part carries its own snapshot */
    uint8_t *symbol_written; /* per part: SYMBOL records already in it, by id */
    size_t symbol_cap;
    /* Per part: the part's id + 1 of each module and location (by the
     * finder's ids) written to it (0: not yet), and how many. */
    id_map modules, locations;
} proc;

struct rec_output {
    rec_output_config c;
    char base[4096];       /* path, or the prefix of part names */
    char path[4200];       /* current file */
    char session_id[33];
    uint64_t start_ns;
    int64_t start_wall_ns;
    unsigned part;         /* number of the current part, from 1 */
    unsigned oldest;       /* oldest part still on disk */
    uint64_t part_started_ns;
    uint64_t part_samples;
    uint64_t part_skipped;  /* its SKIPPED events' sum, for its trailer */
    uint64_t closed_bytes; /* finished parts still on disk */
    zs_writer *writer;
    rec_stacks *stacks;
    proc *procs;
    size_t nprocs, procs_cap;
};

static void id_map_free(id_map *m)
{
    free(m->to);
    *m = (id_map){0};
}

/* The slot of id, grown to hold it; NULL when out of memory. */
static uint32_t *id_map_slot(id_map *m, uint64_t id)
{
    size_t old = m->cap;
    if (zs_grow(&m->to, &m->cap, id + 1, sizeof *m->to, 256))
        return NULL;
    memset(m->to + old, 0, (m->cap - old) * sizeof *m->to);
    return &m->to[id];
}

static const uint32_t *id_map_find(const id_map *m, uint64_t id)
{
    return id < m->cap ? &m->to[id] : NULL;
}

static int rotating(const rec_output *o) { return o->c.rotate_bytes || o->c.rotate_seconds; }

static void part_path(const rec_output *o, unsigned part, char *buf, size_t size)
{
    if (rotating(o))
        snprintf(buf, size, "%s-%04u.zspy", o->base, part);
    else
        snprintf(buf, size, "%s", o->base);
}

static int write_header(rec_output *o, zs_error *err)
{
    char host[256] = "", wall[32], mono[32], rate[32], part[16];
    gethostname(host, sizeof host - 1);
    snprintf(wall, sizeof wall, "%" PRId64, o->start_wall_ns);
    snprintf(mono, sizeof mono, "%" PRIu64, o->start_ns);
    snprintf(rate, sizeof rate, "%g", o->c.rate_hz);
    snprintf(part, sizeof part, "%u", o->part);
    /* Each part has its own id (the converter's cache key); the session id
     * ties the parts of one rotation together. */
    char id[33];
    uint8_t rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
        return zs_fail(err, ZS_E_OUTPUT, "getrandom: %s", strerror(errno));
    zs_hex(id, sizeof id, rnd, sizeof rnd);
    zs_kv kv[] = {
        {"recorder_version", ZS_RECORDER_VERSION}, {"host", host},
        {"start_wall_ns", wall},                   {"start_mono_ns", mono},
        {"rate_hz", rate},                         {"recording_id", id},
        {"session_id", o->session_id},             {"part", part},
        {"mode", o->c.nonblocking ? "nonblocking" : o->c.sampler ? o->c.sampler : "ptrace"},
        {"sampler", o->c.sampler ? o->c.sampler : "ptrace"},
        /* Native names are final (recorder/native/rec_symbol_names.h): the
         * converter does not guess at their versions as for older ones. */
        {"native_names", "plain"},
        {"off_cpu", "none"}, /* last: only with cpu_only */
    };
    size_t n = sizeof kv / sizeof kv[0] - !o->c.cpu_only;
    return zs_writer_header(o->writer, kv, n, err);
}

static int write_process(rec_output *o, const rec_target *t, zs_error *err)
{
    char ns_pid[16], coalesced[24] = "", body[24] = "";
    char *layout = zs_layout_format(&t->layout);
    if (!layout)
        return zs_fail(err, ZS_E_NOMEM, "layout text");
    snprintf(ns_pid, sizeof ns_pid, "%d", (int)t->ns_pid);
    if (t->layout.zam.coalesced_vtable_at)
        snprintf(coalesced, sizeof coalesced, "0x%llx",
                 (unsigned long long)t->layout.zam.coalesced_vtable_at);
    if (t->layout.zam.body_vtable_at)
        snprintf(body, sizeof body, "0x%llx", (unsigned long long)t->layout.zam.body_vtable_at);
    zs_kv kv[10] = {
        {"exe", t->exe},        {"build_id", t->build_id},
        {"zeek_version", t->zeek_version}, {"layout", layout},
        {"layout_source", rec_layout_source_name(t->layout_source)},
        {"ns_pid", ns_pid},     {"node", t->node},
        {"cmdline", t->cmdline},
    };
    size_t n = 8;
    /* -O ZAM: where the vtables are in this process, for the resolver. */
    if (body[0])
        kv[n++] = (zs_kv){"zam_body_vtable", body};
    if (coalesced[0])
        kv[n++] = (zs_kv){"zam_coalesced_vtable", coalesced};
    int rc = zs_writer_process(o->writer, (uint32_t)t->pid, kv, n, err);
    free(layout);
    return rc;
}

static int check_free_space(const rec_output *o, zs_error *err)
{
    struct statvfs vfs;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", o->path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = '\0';
    else
        strcpy(dir, ".");
    if (statvfs(dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < MIN_FREE_BYTES)
        return zs_fail(err, ZS_E_OUTPUT, "%s: less than %d MiB free; not starting a new part",
                       dir, MIN_FREE_BYTES >> 20);
    return 0;
}

/* Starts part o->part: a new file with everything needed to read it alone. */
static int open_part(rec_output *o, zs_error *err)
{
    part_path(o, o->part, o->path, sizeof o->path);
    if (o->part > 1 && check_free_space(o, err))
        return -1;
    if (!(o->writer = zs_writer_create(o->path, o->c.uid, o->c.gid, err)))
        return -1;
    if (!(o->stacks = rec_stacks_new()))
        return zs_fail(err, ZS_E_NOMEM, "stack table");
    o->part_started_ns = rec_now_ns();
    o->part_samples = 0;
    o->part_skipped = 0;
    if (write_header(o, err))
        return -1;
    for (size_t i = 0; i < o->nprocs; i++) {
        proc *p = &o->procs[i];
        if (write_process(o, p->target, err))
            return -1;
        if (!(p->capture = rec_capture_new(p->target->pid, &p->target->layout, o->writer)))
            return zs_fail(err, ZS_E_NOMEM, "capture");
    }
    return zs_writer_flush(o->writer, err);
}

static void drop_part_state(rec_output *o)
{
    for (size_t i = 0; i < o->nprocs; i++) {
        rec_capture_free(o->procs[i].capture);
        o->procs[i].capture = NULL;
        free(o->procs[i].symbol_written);
        o->procs[i].symbol_written = NULL;
        o->procs[i].symbol_cap = 0;
        id_map_free(&o->procs[i].modules);
        id_map_free(&o->procs[i].locations);
    }
    rec_stacks_free(o->stacks);
    o->stacks = NULL;
}

rec_output *rec_output_open(const rec_output_config *c, uint64_t start_ns, pid_t first_pid,
                            zs_error *err)
{
    rec_output *o = calloc(1, sizeof *o);
    if (!o) {
        zs_fail(err, ZS_E_NOMEM, "output");
        return NULL;
    }
    o->c = *c;
    o->start_ns = start_ns;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    o->start_wall_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    uint8_t rnd[16] = {0};
    if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
        memcpy(rnd, &ts, sizeof ts);
    zs_hex(o->session_id, sizeof o->session_id, rnd, sizeof rnd);
    if (c->path) {
        snprintf(o->base, sizeof o->base, "%s", c->path);
        size_t n = strlen(o->base);
        if (rotating(o) && n > 5 && !strcmp(o->base + n - 5, ".zspy"))
            o->base[n - 5] = '\0';
    } else {
        char host[256] = "host", when[32];
        struct tm tm;
        gethostname(host, sizeof host - 1);
        localtime_r(&ts.tv_sec, &tm);
        strftime(when, sizeof when, "%Y%m%d-%H%M%S", &tm);
        snprintf(o->base, sizeof o->base, "zeek-spy-%s-%d-%s%s", host, (int)first_pid, when,
                 rotating(o) ? "" : ".zspy");
    }
    o->part = o->oldest = 1;
    if (open_part(o, err)) {
        rec_output_abandon(o);
        return NULL;
    }
    return o;
}

int rec_output_add_process(rec_output *o, const rec_target *t, zs_error *err)
{
    if (zs_grow(&o->procs, &o->procs_cap, o->nprocs + 1, sizeof *o->procs, 8))
        return zs_fail(err, ZS_E_NOMEM, "process table");
    proc *p = &o->procs[o->nprocs];
    p->target = t;
    p->symbol_written = NULL;
    p->symbol_cap = 0;
    p->modules = p->locations = (id_map){0};
    if (!(p->capture = rec_capture_new(t->pid, &t->layout, o->writer)))
        return zs_fail(err, ZS_E_NOMEM, "capture");
    o->nprocs++;
    return write_process(o, t, err);
}

void rec_output_drop_process(rec_output *o, pid_t pid)
{
    for (size_t i = 0; i < o->nprocs; i++) {
        if (o->procs[i].target->pid != pid)
            continue;
        rec_capture_free(o->procs[i].capture);
        if (o->stacks)
            rec_stacks_forget_pid(o->stacks, (uint32_t)pid);
        free(o->procs[i].symbol_written);
        id_map_free(&o->procs[i].modules);
        id_map_free(&o->procs[i].locations);
        o->procs[i] = o->procs[--o->nprocs];
        return;
    }
}

static proc *find(rec_output *o, pid_t pid)
{
    for (size_t i = 0; i < o->nprocs; i++)
        if (o->procs[i].target->pid == pid)
            return &o->procs[i];
    return NULL;
}

static int write_symbol(rec_output *o, proc *p, uint64_t id, const char *name, zs_error *err)
{
    size_t old = p->symbol_cap;
    if (zs_grow(&p->symbol_written, &p->symbol_cap, id + 1, 1, 256))
        return zs_fail(err, ZS_E_NOMEM, "symbol table");
    memset(p->symbol_written + old, 0, p->symbol_cap - old);
    if (p->symbol_written[id])
        return 0;
    p->symbol_written[id] = 1;
    return zs_writer_symbol(o->writer, (uint32_t)p->target->pid, id, name, err);
}

/* The part's id of module m (written now if new). */
static int write_module(rec_output *o, proc *p, const zs_module *m, uint64_t *file_id,
                        zs_error *err)
{
    uint32_t *slot = id_map_slot(&p->modules, m->id);
    if (!slot)
        return zs_fail(err, ZS_E_NOMEM, "module table");
    if (!*slot) {
        zs_module rec = *m;
        rec.id = p->modules.n;
        if (zs_writer_module(o->writer, (uint32_t)p->target->pid, &rec, err))
            return -1;
        *slot = ++p->modules.n;
    }
    *file_id = *slot - 1;
    return 0;
}

/* The source lines of a location just written (file id location): their
 * names first. */
static int write_lines(rec_output *o, proc *p, const rec_out_location *l, uint64_t location,
                       zs_error *err)
{
    zs_native_lines rec = {location, l->nlines, {{0}}};
    if (!l->nlines || l->nlines > ZS_MAX_INLINE)
        return 0;
    for (size_t i = 0; i < l->nlines; i++) {
        const rec_out_line *line = &l->lines[i];
        if (write_symbol(o, p, line->function.id, line->function.name, err) ||
            write_symbol(o, p, line->file.id, line->file.name, err))
            return -1;
        rec.line[i] = (zs_native_line){line->function.id, line->file.id, line->line};
    }
    return zs_writer_lines(o->writer, (uint32_t)p->target->pid, &rec, err);
}

int rec_output_native_known(rec_output *o, pid_t pid, uint64_t id, uint64_t *file_id)
{
    proc *p = find(o, pid);
    const uint32_t *slot = p ? id_map_find(&p->locations, id) : NULL;
    *file_id = id;
    if (!p)
        return 1; /* a process not in the recording: nothing to write */
    if (!slot || !*slot)
        return 0;
    *file_id = *slot - 1;
    return 1;
}

int rec_output_native(rec_output *o, pid_t pid, const rec_out_location *l, uint64_t *file_id,
                      zs_error *err)
{
    proc *p = find(o, pid);
    *file_id = l->id;
    if (!p)
        return 0;
    uint32_t *slot = id_map_slot(&p->locations, l->id);
    if (!slot)
        return zs_fail(err, ZS_E_NOMEM, "location table");
    if (!*slot) {
        zs_native_location rec = {p->locations.n, 0, l->address, l->symbol.id};
        uint64_t module = 0;
        if (write_symbol(o, p, l->symbol.id, l->symbol.name, err))
            return -1;
        if (l->module) {
            if (write_module(o, p, l->module, &module, err))
                return -1;
            rec.module = module + 1;
            rec.address -= l->module->start; /* within it: checked by the finder */
        }
        if (zs_writer_location(o->writer, (uint32_t)pid, &rec, err) || write_lines(o, p, l, rec.id, err))
            return -1;
        *slot = ++p->locations.n;
    }
    *file_id = *slot - 1;
    return 0;
}

/* A waiting stack (its samples' native frames to follow) is interned apart
 * from the same frames that wait for nothing: under the pid with this bit. */
#define WAITING_KEY 0x80000000u

/* The stack's id in this part, written (with what it points to) if new. */
static int64_t stack_id(rec_output *o, pid_t pid, const zs_frame *frames, size_t n, int waits,
                        zs_error *err)
{
    int is_new;
    uint32_t key = (uint32_t)pid | (waits ? WAITING_KEY : 0);
    int64_t id = rec_stacks_intern(o->stacks, key, frames, n, &is_new);
    if (id < 0)
        return zs_fail(err, ZS_E_NOMEM, "stack table");
    if (is_new) {
        proc *p = find(o, pid);
        size_t shared;
        int64_t base = rec_stacks_base(o->stacks, (uint64_t)id, &shared);
        zs_stack_base from = {base >= 0 ? (uint64_t)base + 1 : 0, shared};
        if ((p && rec_capture_frames(p->capture, frames, n, err)) ||
            zs_writer_stack_from(o->writer, (uint64_t)id, (uint32_t)pid, &from, frames, n, err) ||
            (waits && zs_writer_stack_waits(o->writer, (uint64_t)id, err)))
            return -1;
    }
    return id;
}

int rec_output_sample(rec_output *o, pid_t pid, uint64_t t_us, const zs_frame *frames, size_t n,
                      int off_cpu, int waits, uint64_t *written_us, zs_error *err)
{
    int64_t id = stack_id(o, pid, frames, n, waits, err);
    if (id < 0)
        return -1;
    o->part_samples++;
    if (zs_writer_sample(o->writer, t_us, (uint64_t)id, off_cpu, err))
        return -1;
    if (written_us)
        *written_us = zs_writer_last_t_us(o->writer);
    return 0;
}

int rec_output_native_late(rec_output *o, pid_t pid, uint64_t t_us, const zs_frame *frames, size_t n,
                           zs_error *err)
{
    int64_t id = stack_id(o, pid, frames, n, 0, err);
    return id < 0 ? -1 : zs_writer_native_late(o->writer, (uint32_t)pid, t_us, (uint64_t)id, err);
}

int rec_output_event(rec_output *o, uint64_t t_us, pid_t pid, zs_event_kind kind, uint64_t value,
                     const char *message, zs_error *err)
{
    if (kind == ZS_EV_SKIPPED)
        o->part_skipped += value;
    return zs_writer_event(o->writer, t_us, (uint32_t)pid, kind, value, message, err);
}

int rec_output_load(rec_output *o, const zs_load *l, zs_error *err)
{
    return zs_writer_load(o->writer, l, err);
}

int rec_output_nettime(rec_output *o, uint64_t t_us, pid_t pid, double network_time, zs_error *err)
{
    return zs_writer_nettime(o->writer, t_us, (uint32_t)pid, network_time, err);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Deletes the oldest finished parts while the total is over the cap. */
static void enforce_cap(rec_output *o)
{
    while (o->c.max_bytes && o->oldest < o->part &&
           o->closed_bytes + zs_writer_bytes_written(o->writer) > o->c.max_bytes) {
        char old[4200];
        part_path(o, o->oldest, old, sizeof old);
        uint64_t size = file_size(old);
        unlink(old);
        o->closed_bytes -= size < o->closed_bytes ? size : o->closed_bytes;
        o->oldest++;
    }
}

static int rotate(rec_output *o, uint64_t end_t_us, zs_error *err)
{
    zs_writer *w = o->writer;
    o->writer = NULL;
    int rc = zs_writer_close(w, o->part_samples, o->part_skipped, end_t_us, err);
    drop_part_state(o);
    if (rc)
        return -1;
    o->closed_bytes += file_size(o->path);
    o->part++;
    if (open_part(o, err))
        return -1;
    enforce_cap(o);
    return 0;
}

int rec_output_tick(rec_output *o, uint64_t now_ns, int may_rotate, int switch_now, zs_error *err)
{
    if (zs_writer_flush(o->writer, err))
        return -1;
    uint64_t size = zs_writer_bytes_written(o->writer);
    int due = (switch_now && rotating(o)) || (o->c.rotate_bytes && size >= o->c.rotate_bytes) ||
              (o->c.rotate_seconds > 0 &&
               (double)(now_ns - o->part_started_ns) / 1e9 >= o->c.rotate_seconds);
    if (due && may_rotate)
        return rotate(o, (now_ns - o->start_ns) / 1000, err);
    enforce_cap(o);
    return 0;
}

int rec_output_close(rec_output *o, uint64_t end_t_us, zs_error *err)
{
    int rc = zs_writer_close(o->writer, o->part_samples, o->part_skipped, end_t_us, err);
    o->writer = NULL;
    drop_part_state(o);
    free(o->procs);
    free(o);
    return rc;
}

void rec_output_abandon(rec_output *o)
{
    if (!o)
        return;
    zs_writer_abandon(o->writer);
    drop_part_state(o);
    free(o->procs);
    free(o);
}

void rec_output_discard(rec_output *o)
{
    char path[sizeof o->path];
    snprintf(path, sizeof path, "%s", o->path);
    rec_output_abandon(o);
    unlink(path);
}

const char *rec_output_path(const rec_output *o) { return o->path; }
uint64_t rec_output_bytes(const rec_output *o)
{
    return o->closed_bytes + (o->writer ? zs_writer_bytes_written(o->writer) : 0);
}
int rec_output_rotating(const rec_output *o) { return rotating(o); }
size_t rec_output_stacks(const rec_output *o) { return o->stacks ? rec_stacks_count(o->stacks) : 0; }
unsigned rec_output_parts(const rec_output *o) { return o->part; }
