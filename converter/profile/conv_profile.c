/* SPDX-License-Identifier: BSD-3-Clause */
#include "profile/conv_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_grow.h"
#include "zs_intern.h"

/* The profile's intern tables: ids are indexes into its arrays. */
typedef struct index {
    zs_intern functions, locations, stacks, mappings;
} index_t;

typedef struct function_key {
    const char *name, *file;
    int start_line;
    int native;
} function_key;

static uint64_t hash_function(const function_key *k)
{
    uint64_t h = zs_fnv1a(ZS_FNV_SEED, k->name, strlen(k->name) + 1);
    h = zs_fnv1a(h, k->file, strlen(k->file) + 1);
    h = zs_fnv1a(h, &k->native, sizeof k->native);
    return zs_fnv1a(h, &k->start_line, sizeof k->start_line);
}

static int same_function(const void *ctx, uint32_t id, const void *key)
{
    const conv_function *f = &((const conv_profile *)ctx)->functions[id];
    const function_key *k = key;
    return f->start_line == k->start_line && f->native == k->native && !strcmp(f->name, k->name) &&
           !strcmp(f->file, k->file);
}

static uint64_t hash_location(const conv_location *l)
{
    uint64_t h = zs_fnv1a(zs_fnv1a(ZS_FNV_SEED, &l->function, 4), &l->line, sizeof l->line);
    h = zs_fnv1a(h, &l->inlined, sizeof l->inlined);
    return zs_fnv1a(zs_fnv1a(h, &l->mapping, 4), &l->address, 8);
}

static int same_location(const void *ctx, uint32_t id, const void *key)
{
    const conv_location *l = &((const conv_profile *)ctx)->locations[id], *k = key;
    return l->function == k->function && l->line == k->line && l->mapping == k->mapping &&
           l->address == k->address && l->inlined == k->inlined;
}

static uint64_t hash_mapping(const conv_mapping *m)
{
    uint64_t h = zs_fnv1a(ZS_FNV_SEED, &m->start, 8);
    h = zs_fnv1a(zs_fnv1a(h, &m->limit, 8), &m->file_offset, 8);
    return zs_fnv1a(zs_fnv1a(h, m->file, strlen(m->file) + 1), m->build_id, strlen(m->build_id));
}

static int same_mapping(const void *ctx, uint32_t id, const void *key)
{
    const conv_mapping *m = &((const conv_profile *)ctx)->mappings[id], *k = key;
    return m->start == k->start && m->limit == k->limit && m->file_offset == k->file_offset &&
           !strcmp(m->file, k->file) && !strcmp(m->build_id, k->build_id);
}

typedef struct stack_key {
    uint32_t process, nlocs;
    const uint32_t *locs;
} stack_key;

static uint64_t hash_stack(const stack_key *k)
{
    return zs_fnv1a(zs_fnv1a(ZS_FNV_SEED, &k->process, 4), k->locs, k->nlocs * sizeof *k->locs);
}

static int same_stack(const void *ctx, uint32_t id, const void *key)
{
    const conv_stack *s = &((const conv_profile *)ctx)->stacks[id];
    const stack_key *k = key;
    return s->process == k->process && s->nlocs == k->nlocs &&
           !memcmp(s->locs, k->locs, k->nlocs * sizeof *k->locs);
}

int conv_function_names_body(const conv_function *f)
{
    char where[32];
    int nw = snprintf(where, sizeof where, ":%d", f->start_line);
    size_t n = strlen(f->name), nf = strlen(f->file);
    if (!nf || nw <= 0 || n < nf + (size_t)nw + 2)
        return 0;
    const char *at = f->name + n - nf - (size_t)nw; /* where " FILE:LINE" would start, +1 */
    return at[-1] == ' ' && !memcmp(at, f->file, nf) && !strcmp(at + nf, where);
}

conv_profile *conv_profile_new(void)
{
    conv_profile *p = calloc(1, sizeof *p);
    if (p && !(p->index = calloc(1, sizeof(index_t)))) {
        free(p);
        return NULL;
    }
    return p;
}

void conv_profile_free(conv_profile *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nfunctions; i++) {
        free(p->functions[i].name);
        free(p->functions[i].file);
    }
    for (size_t i = 0; i < p->nstacks; i++)
        free(p->stacks[i].locs);
    for (size_t i = 0; i < p->nprocesses; i++) {
        free(p->processes[i].host);
        free(p->processes[i].node);
    }
    for (size_t i = 0; i < p->nmappings; i++) {
        free(p->mappings[i].file);
        free(p->mappings[i].build_id);
    }
    free(p->mappings);
    free(p->processes);
    free(p->functions);
    free(p->locations);
    free(p->stacks);
    index_t *ix = p->index;
    if (ix) {
        zs_intern_free(&ix->functions);
        zs_intern_free(&ix->locations);
        zs_intern_free(&ix->stacks);
        zs_intern_free(&ix->mappings);
        free(ix);
    }
    conv_timeline_free(p->timeline);
    free(p->timeline);
    if (p->lane)
        conv_lane_free(p->lane);
    free(p->lane);
    free(p->meta.zeek_version);
    free(p->meta.host);
    free(p->meta.recorder_version);
    free(p);
}

static int64_t intern_function(conv_profile *p, const function_key *key);

int64_t conv_profile_function(conv_profile *p, const char *name, const char *file, int start_line)
{
    function_key k = {name, file ? file : "", start_line, 0};
    return intern_function(p, &k);
}

int64_t conv_profile_native_function(conv_profile *p, const char *name, const char *file)
{
    function_key k = {name, file ? file : CONV_NATIVE_FILE, 0, 1};
    return intern_function(p, &k);
}

static int64_t intern_function(conv_profile *p, const function_key *key)
{
    index_t *ix = p->index;
    function_key k = *key;
    uint64_t h = hash_function(&k);
    int64_t at = zs_intern_find(&ix->functions, h, same_function, p, &k);
    if (at >= 0)
        return at;
    if (zs_grow(&p->functions, &p->functions_cap, p->nfunctions + 1, sizeof *p->functions, 64))
        return -1;
    conv_function f = {strdup(k.name), strdup(k.file), k.start_line, k.native};
    if (!f.name || !f.file || zs_intern_add(&ix->functions, h, (uint32_t)p->nfunctions)) {
        free(f.name);
        free(f.file);
        return -1;
    }
    p->functions[p->nfunctions] = f;
    return (int64_t)p->nfunctions++;
}

static int64_t intern_location(conv_profile *p, const conv_location *key);

int64_t conv_profile_location(conv_profile *p, uint32_t function, int line)
{
    conv_location k = {function, line, 0, 0, 0};
    return intern_location(p, &k);
}

int64_t conv_profile_native_location(conv_profile *p, uint32_t function, int line, int inlined,
                                     uint32_t mapping, uint64_t address)
{
    conv_location k = {function, line, mapping, address, inlined != 0};
    return intern_location(p, &k);
}

int64_t conv_profile_zam_location(conv_profile *p, uint32_t function, int line, int inlined,
                                  uint64_t inst)
{
    conv_location k = {function, line, 0, inst, inlined != 0};
    return intern_location(p, &k);
}

int64_t conv_profile_mapping(conv_profile *p, uint64_t start, uint64_t limit, uint64_t file_offset,
                             const char *file, const char *build_id)
{
    index_t *ix = p->index;
    conv_mapping k = {start, limit, file_offset, (char *)file, (char *)(build_id ? build_id : "")};
    uint64_t h = hash_mapping(&k);
    int64_t at = zs_intern_find(&ix->mappings, h, same_mapping, p, &k);
    if (at >= 0)
        return at;
    if (zs_grow(&p->mappings, &p->mappings_cap, p->nmappings + 1, sizeof *p->mappings, 64))
        return -1;
    conv_mapping m = {start, limit, file_offset, strdup(file), strdup(k.build_id)};
    if (!m.file || !m.build_id || zs_intern_add(&ix->mappings, h, (uint32_t)p->nmappings)) {
        free(m.file);
        free(m.build_id);
        return -1;
    }
    p->mappings[p->nmappings] = m;
    return (int64_t)p->nmappings++;
}

static int64_t intern_location(conv_profile *p, const conv_location *key)
{
    index_t *ix = p->index;
    conv_location k = *key;
    uint64_t h = hash_location(&k);
    int64_t at = zs_intern_find(&ix->locations, h, same_location, p, &k);
    if (at >= 0)
        return at;
    if (zs_grow(&p->locations, &p->locations_cap, p->nlocations + 1, sizeof *p->locations, 64) ||
        zs_intern_add(&ix->locations, h, (uint32_t)p->nlocations))
        return -1;
    p->locations[p->nlocations] = k;
    return (int64_t)p->nlocations++;
}

int64_t conv_profile_process(conv_profile *p, const char *host, uint32_t pid, const char *node)
{
    host = host ? host : "";
    node = node ? node : "";
    /* Few processes: a linear search is fine. */
    for (size_t i = 0; i < p->nprocesses; i++) {
        const conv_process *q = &p->processes[i];
        if (q->pid == pid && !strcmp(q->host, host) && !strcmp(q->node, node))
            return (int64_t)i;
    }
    if (zs_grow(&p->processes, &p->processes_cap, p->nprocesses + 1, sizeof *p->processes, 8))
        return -1;
    conv_process q = {strdup(host), strdup(node), pid};
    if (!q.host || !q.node) {
        free(q.host);
        free(q.node);
        return -1;
    }
    p->processes[p->nprocesses] = q;
    return (int64_t)p->nprocesses++;
}

int conv_profile_add_process_stack(conv_profile *p, uint32_t process, const uint32_t *locs,
                                   uint32_t nlocs, uint64_t count)
{
    return conv_profile_intern_stack(p, process, locs, nlocs, count) < 0 ? -1 : 0;
}

int64_t conv_profile_intern_stack(conv_profile *p, uint32_t process, const uint32_t *locs,
                                  uint32_t nlocs, uint64_t count)
{
    index_t *ix = p->index;
    if (process >= p->nprocesses)
        return -1;
    stack_key k = {process, nlocs, locs};
    uint64_t h = hash_stack(&k);
    int64_t at = zs_intern_find(&ix->stacks, h, same_stack, p, &k);
    if (at >= 0) {
        p->stacks[at].count += count;
        return at;
    }
    if (zs_grow(&p->stacks, &p->stacks_cap, p->nstacks + 1, sizeof *p->stacks, 64))
        return -1;
    uint32_t *copy = malloc((nlocs ? nlocs : 1) * sizeof *copy);
    if (!copy)
        return -1;
    memcpy(copy, locs, nlocs * sizeof *locs);
    if (zs_intern_add(&ix->stacks, h, (uint32_t)p->nstacks)) {
        free(copy);
        return -1;
    }
    p->stacks[p->nstacks] = (conv_stack){process, p->processes[process].pid, nlocs, copy, count};
    return (int64_t)p->nstacks++;
}

int conv_profile_add_stack(conv_profile *p, uint32_t pid, const uint32_t *locs, uint32_t nlocs,
                           uint64_t count)
{
    int64_t process = conv_profile_process(p, NULL, pid, NULL);
    return process < 0 ? -1 : conv_profile_add_process_stack(p, (uint32_t)process, locs, nlocs, count);
}

int conv_set_string(char **s, const char *v)
{
    char *copy = v ? strdup(v) : NULL;
    if (v && !copy)
        return -1;
    free(*s);
    *s = copy;
    return 0;
}

/* "a" + "b" -> "a, b"; equal values stay as they are. */
/* Whether list ("a, b, c") holds item as a whole entry: "8.0.1" is not in
 * "8.0.10". */
static int list_has(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list;; p += 2) {
        if (!strncmp(p, item, n) && (p[n] == '\0' || !strncmp(p + n, ", ", 2)))
            return 1;
        if (!(p = strstr(p, ", ")))
            return 0;
    }
}

int conv_append_unique(char **dst, const char *src)
{
    if (!src || (*dst && list_has(*dst, src)))
        return 0;
    if (!*dst)
        return conv_set_string(dst, src);
    size_t n = strlen(*dst) + strlen(src) + 3;
    char *s = malloc(n);
    if (!s)
        return -1;
    strcpy(s, *dst);
    strcat(s, ", ");
    strcat(s, src);
    free(*dst);
    *dst = s;
    return 0;
}

static int merge_meta(conv_meta *d, const conv_meta *s, int first)
{
    if (conv_append_unique(&d->zeek_version, s->zeek_version) || conv_append_unique(&d->host, s->host) ||
        conv_append_unique(&d->recorder_version, s->recorder_version))
        return -1;
    if (first || (s->start_wall_ns && s->start_wall_ns < d->start_wall_ns)) {
        int64_t end = d->start_wall_ns + d->duration_ns;
        d->start_wall_ns = s->start_wall_ns;
        if (!first)
            d->duration_ns = end - d->start_wall_ns;
    }
    int64_t s_end = s->start_wall_ns + s->duration_ns;
    if (first || s_end > d->start_wall_ns + d->duration_ns)
        d->duration_ns = s_end - d->start_wall_ns;
    if (!d->period_ns)
        d->period_ns = s->period_ns;
    d->samples += s->samples;
    d->skipped += s->skipped;
    d->unresolved += s->unresolved;
    d->torn += s->torn;
    /* Marked only if all are; on-CPU only if all are (the enum's order). */
    d->marked = first || s->marked < d->marked ? s->marked : d->marked;
    d->cpu_view = first ? s->cpu_view : d->cpu_view;
    d->off_cpu += s->off_cpu;
    return 0;
}

int conv_profile_merge(conv_profile *dst, conv_profile *src)
{
    int first = dst->meta.samples == 0 && dst->nstacks == 0;
    uint32_t *map = malloc((src->nlocations ? src->nlocations : 1) * sizeof *map);
    uint32_t *stack_map = malloc((src->nstacks ? src->nstacks : 1) * sizeof *stack_map);
    uint32_t *locs = NULL;
    int rc = -1;
    if (!map || !stack_map)
        goto out;
    for (size_t i = 0; i < src->nlocations; i++) {
        const conv_location *l = &src->locations[i];
        const conv_function *f = &src->functions[l->function];
        const conv_mapping *m = l->mapping ? &src->mappings[l->mapping - 1] : NULL;
        function_key fk = {f->name, f->file, f->start_line, f->native};
        int64_t fi = intern_function(dst, &fk);
        int64_t mi = m ? conv_profile_mapping(dst, m->start, m->limit, m->file_offset, m->file,
                                             m->build_id) : -1;
        conv_location k = {(uint32_t)fi, l->line, (uint32_t)(mi + 1), l->address, l->inlined};
        int64_t li = fi < 0 || (m && mi < 0) ? -1 : intern_location(dst, &k);
        if (li < 0)
            goto out;
        map[i] = (uint32_t)li;
    }
    for (size_t i = 0; i < src->nstacks; i++) {
        const conv_stack *s = &src->stacks[i];
        const conv_process *q = &src->processes[s->process];
        int64_t process = conv_profile_process(dst, q->host, q->pid, q->node);
        free(locs);
        if (process < 0 || !(locs = malloc((s->nlocs ? s->nlocs : 1) * sizeof *locs)))
            goto out;
        for (uint32_t k = 0; k < s->nlocs; k++)
            locs[k] = map[s->locs[k]];
        int64_t at = conv_profile_intern_stack(dst, (uint32_t)process, locs, s->nlocs, s->count);
        if (at < 0)
            goto out;
        stack_map[i] = (uint32_t)at;
    }
    if (src->timeline) {
        conv_timeline *t = src->timeline;
        for (size_t i = 0; i < t->n; i++)
            t->stack[i] = stack_map[t->stack[i]];
        if (!dst->timeline) {
            dst->timeline = t;
        } else {
            for (size_t i = 0; i < t->n; i++)
                if (conv_timeline_add(dst->timeline, t->t_ns[i], t->stack[i]))
                    goto out;
            conv_timeline_free(t);
            free(t);
        }
        src->timeline = NULL;
    }
    if (src->lane) {
        if (!dst->lane) {
            dst->lane = src->lane;
        } else {
            if (conv_lane_merge(dst->lane, src->lane))
                goto out;
            free(src->lane);
        }
        src->lane = NULL;
    }
    rc = merge_meta(&dst->meta, &src->meta, first);
out:
    free(locs);
    free(stack_map);
    free(map);
    return rc;
}

int conv_function_is_native(const conv_function *f) { return f->native; }

uint64_t conv_profile_tally(const conv_profile *p, uint64_t *flat, uint64_t *cum)
{
    uint64_t total = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const conv_stack *s = &p->stacks[i];
        total += s->count;
        for (uint32_t k = 0; k < s->nlocs; k++) {
            uint32_t f = p->locations[s->locs[k]].function;
            int seen = 0;
            for (uint32_t j = 0; j < k && !seen; j++)
                seen = p->locations[s->locs[j]].function == f;
            if (!seen)
                cum[f] += s->count;
            if (k + 1 == s->nlocs)
                flat[f] += s->count;
        }
    }
    return total;
}
