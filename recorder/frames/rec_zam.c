/* SPDX-License-Identifier: BSD-3-Clause */
#include "frames/rec_zam.h"

#include <stdlib.h>
#include <string.h>

#include "frames/rec_memory.h"
#include "frames/rec_zam_inline.h"
#include "zs_grow.h"
#include "zs_intern.h"
#include "zs_resolver.h"

/* A Func's bodies beyond this many are not looked at (ZAM coalesces an
 * event's handlers into one body, but not zeek_init's, dozens in Zeek's
 * own scripts, nor an event's whose coalescing failed). */
enum { MAX_BODIES = 64, MAX_BODY_SLOTS = 4096 };

typedef enum func_kind { F_BUILTIN = 1, F_ZAM, F_OTHER } func_kind;

typedef struct zam_body {
    uint64_t insts, end; /* [insts, end): the instruction array */
} zam_body;

/* What one Func is, read once: its bodies live as long as the scripts. */
typedef struct func_entry {
    uint64_t func;
    func_kind kind;
    unsigned nbodies;
    zam_body bodies[MAX_BODIES];
} func_entry;

struct rec_zam {
    pid_t pid;
    zs_memory live;
    const zs_layout *l;
    uint64_t body_vtable;
    func_entry *v;
    size_t n, cap;
    zs_intern index;        /* Func address -> its entry in v */
    rec_zam_inline *inlined; /* NULL: the locations are taken as they are */
    int64_t exec_symbol;    /* the unwinder's symbol id of ZBody::Exec; -1: not seen yet */
};

rec_zam *rec_zam_new(pid_t pid, const zs_layout *l, const rec_zam_symbols *syms)
{
    if (!zs_layout_has_zam(l) || !syms->body_vtable)
        return NULL;
    rec_zam *z = calloc(1, sizeof *z);
    if (!z)
        return NULL;
    z->pid = pid;
    z->live = rec_live_memory(&z->pid);
    z->l = l;
    z->body_vtable = syms->body_vtable;
    z->exec_symbol = -1;
    z->inlined = rec_zam_inline_new(pid, l, syms->scopes, syms->funcval_vtable);
    return z;
}

void rec_zam_free(rec_zam *z)
{
    if (!z)
        return;
    zs_intern_free(&z->index);
    rec_zam_inline_free(z->inlined);
    free(z->v);
    free(z);
}

static int read_u64(rec_zam *z, uint64_t addr, uint64_t *out)
{
    uint8_t b[8];
    if (zs_mem_read(&z->live, addr, b, sizeof b))
        return -1;
    *out = zs_load_u64(b);
    return 0;
}

/* A first look at a Func reads a few small fields of a few objects, each
 * read a system call of its own: the fields of one object are read
 * together where they lie within this many bytes (in every layout). */
enum { SPAN_MAX = 128, SLOTS_AT_ONCE = 16 };

/* Field i of the object at addr: size[i] bytes (at most 8, little-endian)
 * at offset at[i], into out[i]. */
static int read_fields(rec_zam *z, uint64_t addr, const int64_t *at, const int *size, size_t n,
                       uint64_t *out)
{
    int64_t lo = at[0], hi = at[0] + size[0];
    for (size_t i = 1; i < n; i++) {
        lo = at[i] < lo ? at[i] : lo;
        hi = at[i] + size[i] > hi ? at[i] + size[i] : hi;
    }
    uint8_t span[SPAN_MAX];
    int together = hi - lo <= SPAN_MAX;
    if (together && zs_mem_read(&z->live, addr + (uint64_t)lo, span, (size_t)(hi - lo)))
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint8_t b[8] = {0};
        if (together)
            memcpy(b, span + (at[i] - lo), (size_t)size[i]);
        else if (zs_mem_read(&z->live, addr + (uint64_t)at[i], b, (size_t)size[i]))
            return -1;
        out[i] = zs_load_u64(b);
    }
    return 0;
}

/* The body's instruction array when stmts is a ZBody; 0 when it is not. */
static int zam_body_of(rec_zam *z, uint64_t stmts, zam_body *out)
{
    const zs_layout *l = z->l;
    uint64_t vtable, v[2];
    const int64_t at[2] = {l->zam.body_insts, l->zam.body_end_pc};
    const int size[2] = {8, 4};
    if (!stmts || read_u64(z, stmts, &vtable) || vtable != z->body_vtable ||
        read_fields(z, stmts, at, size, 2, v) || !v[0] || !v[1])
        return 0;
    *out = (zam_body){v[0], v[0] + v[1] * (uint64_t)l->zam.inst_size};
    return out->end > v[0];
}

static void inspect(rec_zam *z, func_entry *e)
{
    const zs_layout *l = z->l;
    e->kind = F_OTHER;
    const int64_t at[3] = {l->func_kind, (int64_t)l->func_bodies + l->vector_begin,
                           (int64_t)l->func_bodies + l->vector_end};
    const int size[3] = {l->func_kind_size, 8, 8};
    uint64_t v[3];
    if (read_fields(z, e->func, at, size, 3, v))
        return;
    if (v[0] == (uint64_t)l->func_kind_builtin) {
        e->kind = F_BUILTIN;
        return;
    }
    uint64_t begin = v[1], end = v[2], stride = (uint64_t)l->body_size;
    /* A Func has a few bodies (one per handler of an event); a vector of
     * more is no Func's (a stale pointer, a process gone): not walked. */
    if (!stride || end < begin || (end - begin) / stride > MAX_BODY_SLOTS)
        return;
    /* As many slots a read as fit (zs_layout_check bounds body_size to 256;
     * a layout built otherwise reads fewer, never past the buffer). */
    uint8_t slots[SLOTS_AT_ONCE * 256];
    uint64_t at_once = sizeof slots / stride;
    for (uint64_t at_slot = begin; at_slot + stride <= end && e->nbodies < MAX_BODIES && at_once;) {
        uint64_t count = (end - at_slot) / stride;
        count = count < at_once ? count : at_once;
        if (zs_mem_read(&z->live, at_slot, slots, (size_t)(count * stride)))
            return; /* unreadable: the rest would be too */
        for (uint64_t k = 0; k < count && e->nbodies < MAX_BODIES; k++)
            if (zam_body_of(z, zs_load_u64(slots + k * stride + (uint64_t)l->body_stmts),
                            &e->bodies[e->nbodies]))
                e->nbodies++;
        at_slot += count * stride;
    }
    if (e->nbodies)
        e->kind = F_ZAM;
}

/* The Func's entry, inspected the first time (zs_mix64 is a bijection: the
 * hash is the key); NULL on no memory. */
static const func_entry *entry_of(rec_zam *z, uint64_t func)
{
    uint64_t h = zs_mix64(func);
    int64_t at = zs_intern_find(&z->index, h, NULL, NULL, NULL);
    if (at >= 0)
        return &z->v[at];
    if (zs_grow(&z->v, &z->cap, z->n + 1, sizeof *z->v, 64) ||
        zs_intern_add(&z->index, h, (uint32_t)z->n))
        return NULL;
    func_entry *e = &z->v[z->n++];
    *e = (func_entry){.func = func};
    inspect(z, e);
    return e;
}

/* Whether v points at an instruction of e's bodies: 1, or 2 at the first. */
static int is_instruction(const rec_zam *z, const func_entry *e, uint64_t v)
{
    for (unsigned i = 0; i < e->nbodies; i++)
        if (v >= e->bodies[i].insts && v < e->bodies[i].end &&
            (v - e->bodies[i].insts) % (uint64_t)z->l->zam.inst_size == 0)
            return v == e->bodies[i].insts ? 2 : 1;
    return 0;
}

static void keep(rec_zam_found *out, uint64_t value, int64_t offset, int first)
{
    for (unsigned i = 0; i < out->n; i++)
        if (out->c[i].value == value && (out->c[i].offset < 0) == (offset < 0))
            return; /* the same value in another register, or saved again */
    if (out->n == REC_ZAM_CANDIDATES) {
        out->overflow = 1;
        return;
    }
    out->c[out->n].value = value;
    out->c[out->n].offset = offset;
    out->c[out->n].first = first;
    out->n++;
}

/* Each word that points at one of e's instructions: the registers, then
 * the copy's stack words below bound. */
static void scan(const rec_zam *z, const func_entry *e, const rec_zam_copy *c, uint64_t bound,
                 rec_zam_found *out)
{
    const struct user_regs_struct *r = c->regs;
    const uint64_t regs[] = {r->rax, r->rbx, r->rcx, r->rdx, r->rsi, r->rdi, r->rbp, r->r8,
                             r->r9,  r->r10, r->r11, r->r12, r->r13, r->r14, r->r15};
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++) {
        int is = is_instruction(z, e, regs[i]);
        if (is)
            keep(out, regs[i], -1, is == 2);
    }
    size_t words = c->len / 8;
    if (bound > r->rsp && (bound - r->rsp) / 8 < words)
        words = (size_t)((bound - r->rsp) / 8);
    for (size_t i = 0; i < words; i++) {
        uint64_t v = zs_load_u64(c->stack + i * 8);
        int is = is_instruction(z, e, v);
        if (is)
            keep(out, v, (int64_t)(i * 8), is == 2);
    }
}

void rec_zam_collect(rec_zam *z, const zs_frame *frames, const uint64_t *addrs, size_t n,
                     const rec_zam_copy *copy, rec_zam_found *out)
{
    memset(out, 0, sizeof *out);
    out->frame = -1;
    out->rsp = copy->len ? copy->regs->rsp : 0;
    for (size_t i = n; i-- > 0;) {
        if (zs_frame_is_native(&frames[i]))
            continue;
        const func_entry *e = entry_of(z, frames[i].func);
        if (!e || e->kind == F_OTHER)
            return; /* interpreted: a ZAM caller's instruction is out of reach */
        if (e->kind == F_BUILTIN)
            continue;
        out->frame = (int)i;
        if (copy->len)
            scan(z, e, copy, addrs ? addrs[i] : 0, out);
        return;
    }
}

/* The one value among the candidates in [from, to) bytes above rsp
 * (registers count as below everything), first instructions (array
 * bases) only when nothing else is there: 0 when none, 1 when it is
 * unique (*v), -1 when they disagree. */
static int agreed_of(const rec_zam_found *f, int64_t from, int64_t to, int first, uint64_t *v)
{
    int seen = 0;
    for (unsigned i = 0; i < f->n; i++) {
        int64_t at = f->c[i].offset;
        if (at >= to || (at >= 0 && at < from) || (from > 0 && at < 0) || f->c[i].first != first)
            continue;
        if (seen && *v != f->c[i].value)
            return -1;
        *v = f->c[i].value;
        seen = 1;
    }
    return seen;
}

static int agreed(const rec_zam_found *f, int64_t from, int64_t to, uint64_t *v)
{
    int r = agreed_of(f, from, to, 0, v);
    return r ? r : agreed_of(f, from, to, 1, v);
}

rec_zam_result rec_zam_choose(const rec_zam_found *found, uint64_t exec_sp, zs_frame *frames)
{
    if (found->frame < 0)
        return REC_ZAM_NONE;
    int64_t split = exec_sp < found->rsp || exec_sp - found->rsp > (uint64_t)INT64_MAX
                        ? INT64_MAX : (int64_t)(exec_sp - found->rsp);
    uint64_t v = 0;
    int below = agreed(found, -1, split, &v);
    if (below == 0 && split != INT64_MAX)
        below = agreed(found, split, INT64_MAX, &v);
    if (below < 0 || (below > 0 && found->overflow && split == INT64_MAX))
        return REC_ZAM_AMBIGUOUS;
    if (below == 0)
        return REC_ZAM_MISSING;
    frames[found->frame].stmt = v | ZS_STMT_ZAM;
    return REC_ZAM_FOUND;
}

size_t rec_zam_expand(rec_zam *z, const zs_frame *frames, size_t n, zs_frame *out, size_t max)
{
    rec_zam_hop hops[ZS_MAX_ZAM_CHAIN];
    size_t i = n, k = 0;
    while (i > 0 && (zs_frame_is_native(&frames[i - 1]) || !zs_stmt_is_zam(frames[i - 1].stmt)))
        i--;
    if (!z->inlined || i-- == 0)
        return 0;
    uint64_t inst = zs_stmt_zam_inst(frames[i].stmt);
    const func_entry *e = entry_of(z, frames[i].func);
    for (unsigned b = 0; e && !k && b < e->nbodies; b++)
        if (inst >= e->bodies[b].insts && inst < e->bodies[b].end)
            k = rec_zam_inline_path(z->inlined, frames[i].func, e->bodies[b].insts, e->bodies[b].end,
                                    inst, hops, ZS_MAX_ZAM_CHAIN);
    if (!k || n - 1 + k > max)
        return 0;
    memcpy(out, frames, i * sizeof *out);
    for (size_t h = 0; h < k; h++)
        out[i + h] = (zs_frame){hops[h].func, hops[h].inst | ZS_STMT_ZAM};
    memcpy(out + i + k, frames + i + 1, (n - i - 1) * sizeof *out);
    return n - 1 + k;
}

int rec_zam_is_exec(rec_zam *z, uint32_t symbol, const char *name)
{
    if (z->exec_symbol < 0 && name && !strcmp(name, z->l->zam.sym_body_exec))
        z->exec_symbol = symbol;
    return z->exec_symbol == (int64_t)symbol;
}
