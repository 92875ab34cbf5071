/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/conv_pprof.h"

#include "zs_format.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "zs_grow.h"
#include "zs_intern.h"

/* pprof stores every string once and refers to it by index. Profiles have
 * thousands of function and file names, hence the hash table. */
typedef struct strtab {
    char **strs;
    size_t n, cap;
    zs_intern index;
} strtab;

static int same_string(const void *ctx, uint32_t id, const void *key)
{
    return !strcmp(((const strtab *)ctx)->strs[id], key);
}

/* Index of s in the table, adding a copy if new; NULL is "" (index 0 once
 * "" is interned first). -1 on no memory. */
static int64_t intern(strtab *t, const char *s)
{
    if (!s)
        s = "";
    size_t len = strlen(s);
    uint64_t h = zs_fnv1a(ZS_FNV_SEED, s, len);
    int64_t at = zs_intern_find(&t->index, h, same_string, t, s);
    if (at >= 0)
        return at;
    if (zs_grow(&t->strs, &t->cap, t->n + 1, sizeof *t->strs, 256))
        return -1;
    if (!(t->strs[t->n] = malloc(len + 1)))
        return -1;
    memcpy(t->strs[t->n], s, len + 1);
    if (zs_intern_add(&t->index, h, (uint32_t)t->n)) {
        free(t->strs[t->n]);
        return -1;
    }
    return (int64_t)t->n++;
}

static int64_t intern_fmt(strtab *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int64_t intern_fmt(strtab *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = zs_vformat(fmt, ap);
    va_end(ap);
    if (!s)
        return -1;
    int64_t i = intern(t, s);
    free(s);
    return i;
}

static void strtab_free(strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->strs[i]);
    free(t->strs);
    zs_intern_free(&t->index);
}

/* Everything the Profile message points into: protobuf-c messages hold
 * pointers, so each repeated field is one array of messages plus one array
 * of pointers to them, all released by build_free. */
typedef struct build {
    strtab st;
    Perftools__Profiles__Profile prof;
    Perftools__Profiles__ValueType types[2], period_type;
    Perftools__Profiles__ValueType *type_ptrs[2];
    Perftools__Profiles__Function *funcs, **func_ptrs;
    Perftools__Profiles__Location *locs, **loc_ptrs;
    Perftools__Profiles__Mapping *maps, **map_ptrs;
    Perftools__Profiles__Line *lines, **line_ptrs;
    Perftools__Profiles__Sample *samples, **sample_ptrs;
    Perftools__Profiles__Label *labels, **label_ptrs;
    uint64_t *location_ids;
    int64_t *values;
    /* Native inlined frames: outer[i] is the location location i was
     * inlined into (UINT32_MAX: none), used[i] whether a sample names
     * location i after each inlined run is folded into its innermost. */
    uint32_t *outer;
    uint8_t *used;
    int64_t comments[5];
} build;

static void build_free(build *b)
{
    strtab_free(&b->st);
    free(b->funcs);
    free(b->func_ptrs);
    free(b->locs);
    free(b->loc_ptrs);
    free(b->maps);
    free(b->map_ptrs);
    free(b->lines);
    free(b->line_ptrs);
    free(b->samples);
    free(b->sample_ptrs);
    free(b->labels);
    free(b->label_ptrs);
    free(b->location_ids);
    free(b->values);
    free(b->outer);
    free(b->used);
}

/* A stack or location naming a missing entry would make pprof reject the
 * whole file; better to say so here. */
static int check_indexes(const conv_profile *p)
{
    for (size_t i = 0; i < p->nlocations; i++)
        if (p->locations[i].function >= p->nfunctions || p->locations[i].mapping > p->nmappings)
            return -1;
    for (size_t i = 0; i < p->nstacks; i++)
        for (uint32_t k = 0; k < p->stacks[i].nlocs; k++)
            if (p->stacks[i].locs[k] >= p->nlocations)
                return -1;
    return 0;
}

static int add_comments(build *b, const conv_meta *m)
{
    size_t n = 0;
    int64_t c;
    if (m->zeek_version) {
        if ((c = intern_fmt(&b->st, "zeek version: %s", m->zeek_version)) < 0)
            return -1;
        b->comments[n++] = c;
    }
    if (m->host) {
        if ((c = intern_fmt(&b->st, "host: %s", m->host)) < 0)
            return -1;
        b->comments[n++] = c;
    }
    if (m->recorder_version) {
        if ((c = intern_fmt(&b->st, "recorder: zeek-spy %s", m->recorder_version)) < 0)
            return -1;
        b->comments[n++] = c;
    }
    c = intern_fmt(&b->st, "samples: %llu, skipped ticks: %llu, unresolved: %llu",
                   (unsigned long long)m->samples, (unsigned long long)m->skipped,
                   (unsigned long long)m->unresolved);
    if (c < 0)
        return -1;
    b->comments[n++] = c;
    if (m->marked) { /* format 7, a sampler that tells on- from off-CPU */
        c = m->marked == CONV_MARKED_CPU_ONLY
                ? intern_fmt(&b->st, "view: on-CPU samples only, recorded with --cpu-only")
            : m->cpu_view ? intern_fmt(&b->st, "view: on-CPU samples only, %llu off-CPU samples left out",
                                     (unsigned long long)m->off_cpu)
                        : intern_fmt(&b->st, "view: wall-clock, on- and off-CPU samples, %llu off-CPU",
                                     (unsigned long long)m->off_cpu);
        if (c < 0)
            return -1;
        b->comments[n++] = c;
    }
    b->prof.comment = b->comments;
    b->prof.n_comment = n;
    return 0;
}

static int add_functions(build *b, const conv_profile *p)
{
    size_t n = p->nfunctions;
    b->funcs = calloc(n ? n : 1, sizeof *b->funcs);
    b->func_ptrs = calloc(n ? n : 1, sizeof *b->func_ptrs);
    if (!b->funcs || !b->func_ptrs)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const conv_function *f = &p->functions[i];
        Perftools__Profiles__Function *pf = &b->funcs[i];
        perftools__profiles__function__init(pf);
        pf->id = i + 1;
        pf->name = pf->system_name = intern(&b->st, f->name);
        pf->filename = intern(&b->st, f->file);
        pf->start_line = f->start_line;
        if (pf->name < 0 || pf->filename < 0)
            return -1;
        b->func_ptrs[i] = pf;
    }
    b->prof.function = b->func_ptrs;
    b->prof.n_function = n;
    return 0;
}

/* One Mapping per module of native frames: pprof tools match them to
 * binaries by build-id and file name, and map addresses into the file with
 * memory_start and file_offset. */
static int add_mappings(build *b, const conv_profile *p)
{
    size_t n = p->nmappings;
    b->maps = calloc(n ? n : 1, sizeof *b->maps);
    b->map_ptrs = calloc(n ? n : 1, sizeof *b->map_ptrs);
    if (!b->maps || !b->map_ptrs)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const conv_mapping *m = &p->mappings[i];
        Perftools__Profiles__Mapping *pm = &b->maps[i];
        perftools__profiles__mapping__init(pm);
        pm->id = i + 1;
        pm->memory_start = m->start;
        pm->memory_limit = m->limit;
        pm->file_offset = m->file_offset;
        pm->filename = intern(&b->st, m->file);
        pm->build_id = intern(&b->st, m->build_id);
        pm->has_functions = 1; /* named on the sensor: nothing left to symbolize */
        if (pm->filename < 0 || pm->build_id < 0)
            return -1;
        b->map_ptrs[i] = pm;
    }
    b->prof.mapping = b->map_ptrs;
    b->prof.n_mapping = n;
    return 0;
}

/* Whether location inner is a function inlined into location outer: the
 * same PC, one of the Lines of its pprof Location. */
static int inlined_into(const conv_profile *p, uint32_t inner, uint32_t outer)
{
    const conv_location *i = &p->locations[inner], *o = &p->locations[outer];
    return i->inlined && i->mapping == o->mapping && i->address == o->address;
}

/* The pprof spec gives a PC with inlined functions one Location whose
 * Lines run innermost first: each run of a stack's locations inlined into
 * one another is named by its innermost location, which carries the run's
 * lines (the run is the same wherever that PC is: the chain is found once). */
static int group_inlined(build *b, const conv_profile *p)
{
    size_t n = p->nlocations;
    b->outer = malloc((n ? n : 1) * sizeof *b->outer);
    b->used = calloc(n ? n : 1, 1);
    if (!b->outer || !b->used)
        return -1;
    for (size_t i = 0; i < n; i++)
        b->outer[i] = UINT32_MAX;
    for (size_t i = 0; i < p->nstacks; i++) {
        const conv_stack *s = &p->stacks[i];
        for (uint32_t k = 0; k < s->nlocs; k++) {
            if (k + 1 < s->nlocs && inlined_into(p, s->locs[k + 1], s->locs[k])) {
                if (b->outer[s->locs[k + 1]] == UINT32_MAX)
                    b->outer[s->locs[k + 1]] = s->locs[k];
                continue;
            }
            b->used[s->locs[k]] = 1;
        }
    }
    return 0;
}

/* The lines of location i's pprof Location: it and the locations it was
 * inlined into, at most as many as a chain can have (a cycle, which no
 * profile read makes, ends there too). */
static size_t chain_length(const build *b, uint32_t i)
{
    size_t len = 1;
    for (uint32_t at = b->outer[i]; at != UINT32_MAX && len < ZS_MAX_INLINE; at = b->outer[at])
        len++;
    return len;
}

static int add_locations(build *b, const conv_profile *p)
{
    size_t n = p->nlocations, nlines = 0, used = 0;
    if (group_inlined(b, p))
        return -1;
    for (uint32_t i = 0; i < n; i++)
        if (b->used[i])
            nlines += chain_length(b, i), used++;
    b->locs = calloc(used ? used : 1, sizeof *b->locs);
    b->loc_ptrs = calloc(used ? used : 1, sizeof *b->loc_ptrs);
    b->lines = calloc(nlines ? nlines : 1, sizeof *b->lines);
    b->line_ptrs = calloc(nlines ? nlines : 1, sizeof *b->line_ptrs);
    if (!b->locs || !b->loc_ptrs || !b->lines || !b->line_ptrs)
        return -1;
    size_t at = 0, line = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!b->used[i])
            continue;
        Perftools__Profiles__Location *pl = &b->locs[at];
        perftools__profiles__location__init(pl);
        pl->id = i + 1;
        pl->mapping_id = p->locations[i].mapping;
        pl->address = p->locations[i].address;
        pl->line = &b->line_ptrs[line];
        pl->n_line = chain_length(b, i);
        uint32_t k = i;
        for (size_t j = 0; j < pl->n_line; j++, k = b->outer[k]) {
            perftools__profiles__line__init(&b->lines[line]);
            b->lines[line].function_id = (uint64_t)p->locations[k].function + 1;
            b->lines[line].line = p->locations[k].line;
            b->line_ptrs[line] = &b->lines[line];
            line++;
        }
        b->loc_ptrs[at++] = pl;
    }
    b->prof.location = b->loc_ptrs;
    b->prof.n_location = used;
    return 0;
}

static int add_samples(build *b, const conv_profile *p)
{
    size_t n = p->nstacks, nids = 0;
    for (size_t i = 0; i < n; i++)
        nids += p->stacks[i].nlocs;
    /* Label keys enter the string table only when some sample uses them. */
    int64_t pid_key = intern(&b->st, "pid"), keys[2] = {-1, -1};
    static const char *const key_names[2] = {"node", "host"};
    b->samples = calloc(n ? n : 1, sizeof *b->samples);
    b->sample_ptrs = calloc(n ? n : 1, sizeof *b->sample_ptrs);
    /* Up to three labels a sample: pid, node, host. */
    b->labels = calloc(n ? 3 * n : 1, sizeof *b->labels);
    b->label_ptrs = calloc(n ? 3 * n : 1, sizeof *b->label_ptrs);
    b->location_ids = calloc(nids ? nids : 1, sizeof *b->location_ids);
    b->values = calloc(n ? 2 * n : 1, sizeof *b->values);
    if (pid_key < 0 || !b->samples || !b->sample_ptrs || !b->labels || !b->label_ptrs ||
        !b->location_ids || !b->values)
        return -1;
    uint64_t *ids = b->location_ids;
    for (size_t i = 0; i < n; i++) {
        const conv_stack *s = &p->stacks[i];
        Perftools__Profiles__Sample *ps = &b->samples[i];
        perftools__profiles__sample__init(ps);
        /* The profile keeps the outermost frame first, pprof the leaf; an
         * inlined run is its innermost location's. */
        size_t m = 0;
        for (uint32_t k = s->nlocs; k-- > 0;)
            if (k + 1 == s->nlocs || !inlined_into(p, s->locs[k + 1], s->locs[k]))
                ids[m++] = (uint64_t)s->locs[k] + 1;
        ps->location_id = ids;
        ps->n_location_id = m;
        ids += m;
        ps->value = &b->values[2 * i];
        ps->value[0] = (int64_t)s->count;
        ps->value[1] = (int64_t)s->count * p->meta.period_ns;
        ps->n_value = 2;
        const conv_process *proc = s->process < p->nprocesses ? &p->processes[s->process] : NULL;
        Perftools__Profiles__Label *l = &b->labels[3 * i];
        ps->label = &b->label_ptrs[3 * i];
        if (s->pid) {
            perftools__profiles__label__init(l);
            l->key = pid_key;
            l->num = s->pid;
            ps->label[ps->n_label++] = l++;
        }
        const char *strs[2] = {proc ? proc->node : NULL, proc ? proc->host : NULL};
        for (int k = 0; k < 2; k++) {
            if (!strs[k] || !*strs[k])
                continue;
            if (keys[k] < 0 && (keys[k] = intern(&b->st, key_names[k])) < 0)
                return -1;
            int64_t v = intern(&b->st, strs[k]);
            if (v < 0)
                return -1;
            perftools__profiles__label__init(l);
            l->key = keys[k];
            l->str = v;
            ps->label[ps->n_label++] = l++;
        }
        b->sample_ptrs[i] = ps;
    }
    b->prof.sample = b->sample_ptrs;
    b->prof.n_sample = n;
    return 0;
}

static int build_profile(build *b, const conv_profile *p)
{
    perftools__profiles__profile__init(&b->prof);
    /* The time a sample stands for: "cpu" as pprof's CPU profiles have it.
     * A recording whose samples are marked on or off the CPU (format 7,
     * BPF) says which view: "wall" when the off-CPU samples are in. The
     * ptrace sampler's samples are wall-clock too, but their profiles keep
     * the type they always had. */
    const char *time_type = p->meta.marked == CONV_MARKED && !p->meta.cpu_view ? "wall" : "cpu";
    int64_t empty = intern(&b->st, ""), samples = intern(&b->st, "samples"),
            count = intern(&b->st, "count"), spent = intern(&b->st, time_type),
            ns = intern(&b->st, "nanoseconds");
    if (empty != 0 || samples < 0 || count < 0 || spent < 0 || ns < 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        perftools__profiles__value_type__init(&b->types[i]);
        b->type_ptrs[i] = &b->types[i];
    }
    b->types[0].type = samples;
    b->types[0].unit = count;
    b->types[1].type = spent;
    b->types[1].unit = ns;
    b->prof.sample_type = b->type_ptrs;
    b->prof.n_sample_type = 2;
    b->prof.default_sample_type = samples;
    perftools__profiles__value_type__init(&b->period_type);
    b->period_type.type = spent;
    b->period_type.unit = ns;
    b->prof.period_type = &b->period_type;
    b->prof.period = p->meta.period_ns;
    b->prof.time_nanos = p->meta.start_wall_ns;
    b->prof.duration_nanos = p->meta.duration_ns;
    if (add_functions(b, p) || add_mappings(b, p) || add_locations(b, p) || add_samples(b, p) ||
        add_comments(b, &p->meta))
        return -1;
    /* Interning is over: the table can no longer move. */
    b->prof.string_table = b->st.strs;
    b->prof.n_string_table = b->st.n;
    return 0;
}

/* The pprof format is gzip on disk (deflate with a gzip wrapper). */
static int write_gzip(FILE *f, const uint8_t *data, size_t len, zs_error *err)
{
    z_stream z = {0};
    uint8_t out[64 << 10];
    int rc = 0, flush;
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return zs_fail(err, ZS_E_OUTPUT, "cannot start gzip compression");
    z.next_in = (uint8_t *)data;
    do {
        z.avail_in = len > UINT_MAX ? UINT_MAX : (uInt)len;
        len -= z.avail_in;
        flush = len ? Z_NO_FLUSH : Z_FINISH;
        do {
            z.next_out = out;
            z.avail_out = sizeof out;
            if (deflate(&z, flush) == Z_STREAM_ERROR) {
                rc = zs_fail(err, ZS_E_OUTPUT, "gzip compression failed");
                goto out;
            }
            size_t n = sizeof out - z.avail_out;
            if (fwrite(out, 1, n, f) != n) {
                rc = zs_fail(err, ZS_E_OUTPUT, "write: %s", strerror(errno));
                goto out;
            }
        } while (z.avail_out == 0);
    } while (flush != Z_FINISH);
out:
    deflateEnd(&z);
    return rc;
}

int conv_write_pprof(const conv_profile *p, const conv_write_options *o, FILE *out, zs_error *err)
{
    (void)o;
    build b = {0};
    uint8_t *packed = NULL;
    int rc = -1;

    if (check_indexes(p)) {
        zs_fail(err, ZS_E_OUTPUT, "the profile refers to a missing function or location");
        goto out;
    }
    if (build_profile(&b, p)) {
        zs_fail(err, ZS_E_NOMEM, "building the pprof profile");
        goto out;
    }
    size_t len = perftools__profiles__profile__get_packed_size(&b.prof);
    if (!(packed = malloc(len ? len : 1))) {
        zs_fail(err, ZS_E_NOMEM, "encoding the pprof profile");
        goto out;
    }
    perftools__profiles__profile__pack(&b.prof, packed);
    rc = write_gzip(out, packed, len, err);
out:
    free(packed);
    build_free(&b);
    return rc;
}
