/* SPDX-License-Identifier: BSD-3-Clause */
#include "frames/rec_zam_inline.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "frames/rec_memory.h"
#include "zs_grow.h"
#include "zs_intern.h"
#include "zs_resolver.h"

enum {
    MAX_GLOBALS = 1 << 20, /* IDs of the global scope looked at */
    MAX_INSTS = 1 << 16,   /* instructions of a body followed */
    READ_BATCH = 1024,     /* IOV_MAX: regions of one process_vm_readv */
};

typedef struct named_func {
    char *name;
    uint64_t func;
} named_func;

/* A script function whose extents were read. */
typedef struct func_extents {
    uint64_t func;
    zs_func_info info;
} func_extents;

/* Where the path stands at an instruction: a function entered from the
 * node before it (parent) at its instruction call. */
typedef struct node {
    const func_extents *fn;
    uint32_t parent;
    uint64_t call;
} node;

typedef struct body_paths {
    uint64_t func, insts, end;
    uint32_t *at; /* per instruction, its node; NULL: no path known */
    node *nodes;
} body_paths;

struct rec_zam_inline {
    pid_t pid;
    zs_memory live;
    const zs_layout *l;
    uint64_t scopes, funcval_vtable;
    int globals_state; /* 0: not read yet, 1: read, -1: could not be */
    named_func *globals;
    size_t nglobals;
    func_extents **fns;
    size_t nfns, fns_cap;
    body_paths *bodies;
    size_t nbodies, bodies_cap;
};

rec_zam_inline *rec_zam_inline_new(pid_t pid, const zs_layout *l, uint64_t scopes,
                                   uint64_t funcval_vtable)
{
    if (!zs_layout_has_zam_scope(l) || !scopes || !funcval_vtable)
        return NULL;
    rec_zam_inline *zi = calloc(1, sizeof *zi);
    if (!zi)
        return NULL;
    zi->pid = pid;
    zi->live = rec_live_memory(&zi->pid);
    zi->l = l;
    zi->scopes = scopes;
    zi->funcval_vtable = funcval_vtable;
    return zi;
}

void rec_zam_inline_free(rec_zam_inline *zi)
{
    if (!zi)
        return;
    for (size_t i = 0; i < zi->nglobals; i++)
        free(zi->globals[i].name);
    for (size_t i = 0; i < zi->nfns; i++) {
        zs_func_info_free(&zi->fns[i]->info);
        free(zi->fns[i]);
    }
    for (size_t i = 0; i < zi->nbodies; i++) {
        free(zi->bodies[i].at);
        free(zi->bodies[i].nodes);
    }
    free(zi->globals);
    free(zi->fns);
    free(zi->bodies);
    free(zi);
}

/* out[i] = the word at addr[i] (addr 0, or unreadable: 0), in batches. */
static void read_words(rec_zam_inline *zi, const uint64_t *addr, uint64_t *out, size_t n)
{
    struct iovec local[READ_BATCH], remote[READ_BATCH];
    for (size_t at = 0; at < n; at += READ_BATCH) {
        size_t k = 0, end = n - at < READ_BATCH ? n : at + READ_BATCH;
        for (size_t i = at; i < end; i++) {
            out[i] = 0;
            if (addr[i]) {
                local[k] = (struct iovec){&out[i], 8};
                remote[k++] = (struct iovec){(void *)(uintptr_t)addr[i], 8};
            }
        }
        if (k && rec_readv(zi->pid, local, remote, k)) /* one bad address: each alone */
            for (size_t i = at; i < end; i++)
                if (!addr[i] || zs_mem_read(&zi->live, addr[i], &out[i], 8))
                    out[i] = 0;
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named_func *)a)->name, ((const named_func *)b)->name);
}

/* Every script function of the global scope, by name. */
static int read_globals(rec_zam_inline *zi)
{
    const zs_zam_layout *z = &zi->l->zam;
    uint64_t begin, scope, vars[2];
    if (zs_mem_read(&zi->live, zi->scopes, &begin, 8) || zs_mem_read(&zi->live, begin, &scope, 8) ||
        zs_mem_read(&zi->live, scope + (uint64_t)z->scope_ordered_vars, vars, sizeof vars) ||
        vars[1] < vars[0] || (vars[1] - vars[0]) % 8 || (vars[1] - vars[0]) / 8 > MAX_GLOBALS)
        return -1;
    size_t n = (size_t)((vars[1] - vars[0]) / 8);
    uint64_t *ids = malloc(n * 8 + 1), *addr = malloc(n * 8 + 1), *val = malloc(n * 8 + 1),
             *word = malloc(n * 8 + 1);
    int rc = -1;
    if (!ids || !addr || !val || !word || zs_mem_read(&zi->live, vars[0], ids, n * 8) ||
        !(zi->globals = calloc(n + 1, sizeof *zi->globals)))
        goto out;
    for (size_t i = 0; i < n; i++)
        addr[i] = ids[i] ? ids[i] + (uint64_t)z->id_val : 0;
    read_words(zi, addr, val, n);
    read_words(zi, val, word, n); /* each value's vtable */
    for (size_t i = 0; i < n; i++)
        addr[i] = word[i] == zi->funcval_vtable ? val[i] + (uint64_t)z->funcval_func : 0;
    read_words(zi, addr, val, n); /* each FuncVal's Func */
    for (size_t i = 0; i < n; i++)
        addr[i] = val[i] ? ids[i] + (uint64_t)z->id_name : 0;
    read_words(zi, addr, word, n); /* their names */
    for (size_t i = 0; i < n; i++) {
        char *name = val[i] && word[i] ? zs_read_cstring(&zi->live, word[i]) : NULL;
        if (name)
            zi->globals[zi->nglobals++] = (named_func){name, val[i]};
    }
    qsort(zi->globals, zi->nglobals, sizeof *zi->globals, by_name);
    rc = 0;
out:
    free(ids);
    free(addr);
    free(val);
    free(word);
    return rc;
}

/* The extents of the Func at func, read once; NULL when it cannot be read. */
static const func_extents *extents_of(rec_zam_inline *zi, uint64_t func)
{
    for (size_t i = 0; i < zi->nfns; i++)
        if (zi->fns[i]->func == func)
            return zi->fns[i]->info.nbodies ? zi->fns[i] : NULL;
    func_extents *f = calloc(1, sizeof *f);
    if (!f || zs_grow(&zi->fns, &zi->fns_cap, zi->nfns + 1, sizeof *zi->fns, 16)) {
        free(f);
        return NULL;
    }
    f->func = func;
    if (zs_resolve_func(&zi->live, zi->l, func, &f->info) || f->info.builtin)
        zs_func_info_free(&f->info); /* remembered as unreadable */
    zi->fns[zi->nfns++] = f;
    return f->info.nbodies ? f : NULL;
}

/* The function a ZAM location names. Zeek 8.2 names some with the calling
 * script's module in front ("HTTP::Conn::register_removal_hook" for
 * Conn::register_removal_hook called from module HTTP): the name is
 * also tried without its leading modules. */
static const func_extents *named(rec_zam_inline *zi, const char *name)
{
    if (zi->globals_state == 0)
        zi->globals_state = read_globals(zi) ? -1 : 1;
    for (const char *n = name; n && zi->nglobals;) {
        named_func key = {(char *)n, 0};
        const named_func *g = bsearch(&key, zi->globals, zi->nglobals, sizeof *zi->globals, by_name);
        if (g)
            return extents_of(zi, g->func);
        const char *module_end = strstr(n, "::");
        n = module_end ? module_end + 2 : NULL;
    }
    return NULL;
}

/* The function among fns[0..n) whose body holds line of file (the
 * narrowest); NULL when none does. */
static const func_extents *owner_of(const func_extents **fns, size_t n, const char *file, int line)
{
    const func_extents *best = NULL;
    int best_span = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; fns[i] && b < fns[i]->info.nbodies; b++) {
            const zs_location *e = &fns[i]->info.bodies[b];
            int span = e->last_line - e->first_line;
            if (e->file && file && !strcmp(e->file, file) && e->first_line <= line &&
                line <= e->last_line && (!best || span < best_span)) {
                best = fns[i];
                best_span = span;
            }
        }
    return best;
}

/* One distinct ZAMLocInfo of a body: where its statement is and whose. */
typedef struct stmt_info {
    uint64_t info;
    zs_zam_line line;
    const func_extents *owner;
} stmt_info;

/* Each instruction's owner (NULL: not known), from its location; -1 when
 * the locations chain on their own or cannot be read. */
static int owners(rec_zam_inline *zi, const func_extents *own, const uint8_t *raw, size_t n,
                  const func_extents **out)
{
    const zs_zam_layout *z = &zi->l->zam;
    stmt_info *s = NULL;
    const func_extents **fns = NULL;
    size_t ns = 0, s_cap = 0, nfns = 0, fns_cap = 0;
    zs_intern index = {0};
    int rc = -1;
    if (zs_grow(&fns, &fns_cap, 1, sizeof *fns, 16))
        goto out;
    fns[nfns++] = own;
    for (size_t j = 0; j < n; j++) { /* each statement once, each function it names once */
        uint64_t info = zs_load_u64(raw + j * (size_t)z->inst_size + z->inst_loc), parent;
        if (zs_intern_find(&index, zs_mix64(info), NULL, NULL, NULL) >= 0)
            continue;
        if (zs_grow(&s, &s_cap, ns + 1, sizeof *s, 64) ||
            zs_intern_add(&index, zs_mix64(info), (uint32_t)ns))
            goto out;
        stmt_info *si = &s[ns++];
        *si = (stmt_info){.info = info};
        if (zs_resolve_zam_info(&zi->live, zi->l, info, &si->line, &parent))
            continue; /* an instruction of no known function */
        if (parent)
            goto out; /* Zeek 7.0/7.1 chain them: nothing to rebuild */
        const func_extents *f = strcmp(si->line.func, own->info.name) ? named(zi, si->line.func) : own;
        size_t k = 0;
        while (k < nfns && fns[k] != f)
            k++;
        if (f && k == nfns) {
            if (zs_grow(&fns, &fns_cap, nfns + 1, sizeof *fns, 16))
                goto out;
            fns[nfns++] = f;
        }
    }
    for (size_t i = 0; i < ns; i++)
        s[i].owner = owner_of(fns, nfns, s[i].line.file, s[i].line.line);
    for (size_t j = 0; j < n; j++) {
        uint64_t info = zs_load_u64(raw + j * (size_t)z->inst_size + z->inst_loc);
        out[j] = s[zs_intern_find(&index, zs_mix64(info), NULL, NULL, NULL)].owner;
    }
    rc = 0;
out:
    for (size_t i = 0; i < ns; i++)
        zs_zam_line_free(&s[i].line);
    free(s);
    free(fns);
    zs_intern_free(&index);
    return rc;
}

/* Follows the body in compile order: the node each instruction is at. */
static int follow(body_paths *b, const func_extents *own, const func_extents **owner, size_t n,
                  uint64_t inst_size)
{
    if (!(b->at = malloc(n * sizeof *b->at)) || !(b->nodes = malloc((n + 1) * sizeof *b->nodes)))
        return -1;
    uint32_t nnodes = 1, top = 0;
    b->nodes[0] = (node){own, UINT32_MAX, 0};
    for (size_t j = 0; j < n; j++) {
        const func_extents *f = owner[j] ? owner[j] : b->nodes[top].fn;
        uint32_t k = top;
        while (k != UINT32_MAX && b->nodes[k].fn != f)
            k = b->nodes[k].parent;
        if (k != UINT32_MAX) {
            top = k; /* returned to it */
        } else {     /* entered from the instruction before */
            b->nodes[nnodes] = (node){f, top, b->insts + (j ? j - 1 : 0) * inst_size};
            top = nnodes++;
        }
        b->at[j] = top;
    }
    return 0;
}

static const body_paths *paths_of(rec_zam_inline *zi, uint64_t func, uint64_t insts, uint64_t end)
{
    for (size_t i = 0; i < zi->nbodies; i++)
        if (zi->bodies[i].func == func && zi->bodies[i].insts == insts)
            return &zi->bodies[i];
    if (zs_grow(&zi->bodies, &zi->bodies_cap, zi->nbodies + 1, sizeof *zi->bodies, 16))
        return NULL;
    body_paths *b = &zi->bodies[zi->nbodies++];
    *b = (body_paths){.func = func, .insts = insts, .end = end};
    uint64_t size = (uint64_t)zi->l->zam.inst_size;
    size_t n = (size_t)((end - insts) / size);
    const func_extents *own = extents_of(zi, func);
    uint8_t *raw = n && n <= MAX_INSTS && own ? malloc(n * size) : NULL;
    const func_extents **owner = raw ? malloc(n * sizeof *owner) : NULL;
    if (!owner || zs_mem_read(&zi->live, insts, raw, n * size) || owners(zi, own, raw, n, owner) ||
        follow(b, own, owner, n, size)) {
        free(b->at); /* remembered as without paths */
        free(b->nodes);
        b->at = NULL;
        b->nodes = NULL;
    }
    free(raw);
    free(owner);
    return b;
}

size_t rec_zam_inline_path(rec_zam_inline *zi, uint64_t func, uint64_t insts, uint64_t end,
                           uint64_t inst, rec_zam_hop *hops, size_t max)
{
    uint64_t size = (uint64_t)zi->l->zam.inst_size;
    if (inst < insts || inst >= end || (inst - insts) % size)
        return 0;
    const body_paths *b = paths_of(zi, func, insts, end);
    if (!b || !b->at)
        return 0;
    uint32_t k = b->at[(inst - insts) / size];
    size_t depth = 0;
    for (uint32_t i = k; i != UINT32_MAX; i = b->nodes[i].parent)
        depth++;
    if (depth < 2 || depth > max)
        return 0;
    uint64_t at = inst;
    for (size_t d = depth; d-- > 0; k = b->nodes[k].parent) {
        hops[d] = (rec_zam_hop){b->nodes[k].fn->func, at};
        at = b->nodes[k].call;
    }
    return depth;
}
