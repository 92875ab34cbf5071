/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_resolver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Strings of unknown length are read in aligned 64-byte chunks: a chunk
 * never crosses a page, so a short string before an unmapped page reads. */
enum { CHUNK = 64 };

static int32_t load_i32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t load_uint(const uint8_t *p, int size)
{
    switch (size) {
    case 1: return p[0];
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: return zs_load_u64(p);
    }
}

static int read_ptr(const zs_memory *m, uint64_t addr, uint64_t *out)
{
    uint8_t b[8];
    if (!addr || zs_mem_read(m, addr, b, 8))
        return -1;
    *out = zs_load_u64(b);
    return 0;
}

/* A NUL-terminated string of unknown length, in CHUNK-aligned reads. */
static char *read_cstring(const zs_memory *m, uint64_t addr)
{
    char buf[ZS_MAX_STRING];
    size_t n = 0;
    if (!addr)
        return NULL;
    while (n < sizeof buf) {
        uint64_t at = addr + n;
        size_t len = CHUNK - (size_t)(at % CHUNK);
        if (len > sizeof buf - n)
            len = sizeof buf - n;
        if (zs_mem_read(m, at, buf + n, len))
            return NULL;
        char *nul = memchr(buf + n, '\0', len);
        if (nul)
            return strdup(buf);
        n += len;
    }
    return NULL; /* unterminated within the limit: not a file name */
}

static char *read_std_string(const zs_memory *m, const zs_layout *l, const uint8_t *obj)
{
    uint64_t data = zs_load_u64(obj + l->string_data);
    uint64_t size = zs_load_u64(obj + l->string_size);
    if (!data || size >= ZS_MAX_STRING)
        return NULL;
    char *s = malloc(size + 1);
    if (!s)
        return NULL;
    if (zs_mem_read(m, data, s, size) || memchr(s, '\0', size)) {
        free(s);
        return NULL;
    }
    s[size] = '\0';
    return s;
}

static int max3(int a, int b, int c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }
static int max2(int a, int b) { return a > b ? a : b; }

/* Objects are read whole into a stack buffer: the largest offset a layout may
 * give (zs_layout.c) plus the widest member read from there. */
enum { OBJ_READ_MAX = 4096 + 64 };

/* The Location at loc. */
static int read_location(const zs_memory *m, const zs_layout *l, uint64_t loc, zs_location *out)
{
    memset(out, 0, sizeof *out);
    if (!loc)
        return -1;
    /* One read for the whole Location, one snapshot region. */
    int size = max3(l->location_filename + 8, l->location_first_line + 4, l->location_last_line + 4);
    uint8_t b[OBJ_READ_MAX];
    if (size > (int)sizeof b || zs_mem_read(m, loc, b, (size_t)size))
        return -1;
    out->first_line = load_i32(b + l->location_first_line);
    out->last_line = load_i32(b + l->location_last_line);
    out->file = read_cstring(m, zs_load_u64(b + l->location_filename));
    /* Zeek keeps a script's path as @load spelled it: one script can reach
     * the profile as "./extra.zeek", "././extra.zeek" and "extra.zeek".
     * One spelling here, so bodies match and every output agrees. */
    if (out->file)
        zs_path_normalize(out->file);
    return out->file ? 0 : -1;
}

int zs_resolve_location(const zs_memory *m, const zs_layout *l, uint64_t obj, zs_location *out)
{
    memset(out, 0, sizeof *out);
    uint64_t loc;
    if (read_ptr(m, obj + (uint64_t)l->obj_location, &loc))
        return -1;
    return read_location(m, l, loc, out);
}

char *zs_read_cstring(const zs_memory *m, uint64_t addr) { return read_cstring(m, addr); }

int zs_resolve_zam_info(const zs_memory *m, const zs_layout *l, uint64_t info, zs_zam_line *out,
                        uint64_t *parent)
{
    int size = max3(l->zam.locinfo_func_name + max2(l->string_data, l->string_size) + 8,
                    l->zam.locinfo_loc + 8, l->zam.locinfo_parent + 8);
    uint8_t b[OBJ_READ_MAX];
    memset(out, 0, sizeof *out);
    if (!info || size > (int)sizeof b || zs_mem_read(m, info, b, (size_t)size))
        return -1;
    zs_location at;
    if (read_location(m, l, zs_load_u64(b + l->zam.locinfo_loc), &at))
        return -1;
    out->func = read_std_string(m, l, b + l->zam.locinfo_func_name);
    out->file = at.file;
    out->line = at.first_line;
    *parent = zs_load_u64(b + l->zam.locinfo_parent);
    if (!out->func) {
        zs_zam_line_free(out);
        return -1;
    }
    return 0;
}

int zs_resolve_zam(const zs_memory *m, const zs_layout *l, uint64_t inst, zs_zam_line *chain,
                   size_t *n)
{
    *n = 0;
    uint64_t info;
    if (!zs_layout_has_zam(l) || read_ptr(m, inst + (uint64_t)l->zam.inst_loc, &info))
        return -1;
    while (info && *n < ZS_MAX_ZAM_CHAIN) {
        uint64_t parent;
        if (zs_resolve_zam_info(m, l, info, &chain[*n], &parent))
            break;
        ++*n;
        info = parent;
    }
    return *n ? 0 : -1;
}

void zs_zam_line_free(zs_zam_line *z)
{
    free(z->func);
    free(z->file);
    memset(z, 0, sizeof *z);
}

char *zs_path_normalize(char *path)
{
    if (!*path)
        return path; /* no name is not the current directory */
    const char *in = path;
    char *out = path;
    int absolute = *in == '/';
    if (absolute)
        *out++ = *in++;
    while (*in) {
        while (*in == '/')
            in++;
        const char *seg = in;
        while (*in && *in != '/')
            in++;
        size_t len = (size_t)(in - seg);
        if (len == 0 || (len == 1 && seg[0] == '.'))
            continue;
        if (out > path + absolute)
            *out++ = '/';
        memmove(out, seg, len);
        out += len;
    }
    /* A trailing slash says "a directory": keep it. */
    if (in > path && in[-1] == '/' && out > path + absolute)
        *out++ = '/';
    if (out == path)
        *out++ = '.';
    *out = '\0';
    return path;
}

void zs_location_free(zs_location *loc)
{
    free(loc->file);
    loc->file = NULL;
}

static int read_bodies(const zs_memory *m, const zs_layout *l, const uint8_t *func_bytes,
                       zs_func_info *out)
{
    uint64_t begin = zs_load_u64(func_bytes + l->func_bodies + l->vector_begin);
    uint64_t end = zs_load_u64(func_bytes + l->func_bodies + l->vector_end);
    if (begin == end)
        return 0;
    if (end < begin || (end - begin) % (uint64_t)l->body_size ||
        (end - begin) / (uint64_t)l->body_size > ZS_MAX_BODIES)
        return -1;
    size_t n = (size_t)((end - begin) / (uint64_t)l->body_size);
    uint8_t *raw = malloc(end - begin);
    out->bodies = calloc(n, sizeof *out->bodies);
    out->body_stmts = calloc(n, sizeof *out->body_stmts);
    if (!raw || !out->bodies || !out->body_stmts || zs_mem_read(m, begin, raw, end - begin)) {
        free(raw);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t stmts = zs_load_u64(raw + i * (size_t)l->body_size + l->body_stmts);
        out->body_stmts[i] = stmts;
        /* A body without lines (Zeek 7.0's ZAM bodies: "<no location>")
         * has no extent. */
        if (stmts && !zs_resolve_location(m, l, stmts, &out->bodies[i]) && !out->bodies[i].first_line)
            zs_location_free(&out->bodies[i]);
    }
    out->nbodies = n;
    free(raw);
    return 0;
}

/* A CoalescedScriptFunc (b: its first bytes; the vtable pointer first)
 * becomes the event's own Func, whose bodies are the handlers, keeping its
 * one body as coalesced_body. Any other Func is left as read. */
static void read_coalesced(const zs_memory *m, const zs_layout *l, uint64_t func,
                           const uint8_t *b, zs_func_info *out)
{
    uint64_t orig;
    zs_func_info o;
    if (!l->zam.coalesced_vtable_at || zs_load_u64(b) != l->zam.coalesced_vtable_at ||
        out->nbodies != 1 || read_ptr(m, func + (uint64_t)l->zam.coalesced_orig_func, &orig) ||
        orig == func || zs_resolve_func(m, l, orig, &o))
        return;
    if (o.builtin || o.coalesced_body || !o.nbodies || strcmp(o.name, out->name)) {
        zs_func_info_free(&o);
        return;
    }
    uint64_t merged = out->body_stmts[0];
    free(o.name);
    o.name = out->name;
    out->name = NULL;
    zs_func_info_free(out);
    *out = o;
    out->coalesced_body = merged;
}

int zs_resolve_func(const zs_memory *m, const zs_layout *l, uint64_t func, zs_func_info *out)
{
    memset(out, 0, sizeof *out);
    /* Every member read below lies inside the bytes read: the string's and
     * the vector's members may sit anywhere in their (24/32-byte) headers. */
    int size = max3(l->func_name + max2(l->string_data, l->string_size) + 8,
                    l->func_bodies + max2(l->vector_begin, l->vector_end) + 8,
                    l->func_kind + l->func_kind_size);
    uint8_t b[OBJ_READ_MAX];
    if (!func || size > (int)sizeof b || zs_mem_read(m, func, b, (size_t)size))
        return -1;
    out->builtin = load_uint(b + l->func_kind, l->func_kind_size) == (uint64_t)l->func_kind_builtin;
    out->name = read_std_string(m, l, b + l->func_name);
    if (!out->name || (!out->builtin && read_bodies(m, l, b, out))) {
        zs_func_info_free(out);
        return -1;
    }
    if (!out->builtin)
        read_coalesced(m, l, func, b, out);
    return 0;
}

void zs_func_info_free(zs_func_info *f)
{
    for (size_t i = 0; i < f->nbodies; i++)
        zs_location_free(&f->bodies[i]);
    free(f->bodies);
    free(f->body_stmts);
    free(f->name);
    memset(f, 0, sizeof *f);
}

/* An event or hook is one Func with several bodies; the running one is the
 * body whose span contains the line being executed, in the same file. */
static const zs_location *running_body(const zs_func_info *f, const zs_location *at)
{
    if (f->nbodies == 1)
        return f->bodies[0].file ? &f->bodies[0] : NULL;
    if (!at->file)
        return NULL;
    for (size_t i = 0; i < f->nbodies; i++) {
        const zs_location *b = &f->bodies[i];
        if (b->file && !strcmp(b->file, at->file) && b->first_line <= at->first_line &&
            at->first_line <= b->last_line)
            return b;
    }
    return NULL;
}

static char *format_string(const char *fmt, const char *a, const char *b, int n)
{
    int len = snprintf(NULL, 0, fmt, a, b, n);
    char *s = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (s)
        snprintf(s, (size_t)len + 1, fmt, a, b, n);
    return s;
}

/* Whether inst is an instruction of the ZAM body stmts; -1 when that
 * cannot be read. */
static int in_zam_body(const zs_memory *m, const zs_layout *l, uint64_t stmts, uint64_t inst)
{
    uint64_t vtable, insts;
    uint32_t end_pc;
    if (l->zam.body_vtable_at) { /* known: a statement that is not a ZAM body holds none */
        if (read_ptr(m, stmts, &vtable))
            return -1;
        if (vtable != l->zam.body_vtable_at)
            return 0;
    }
    if (!stmts || read_ptr(m, stmts + (uint64_t)l->zam.body_insts, &insts) ||
        zs_mem_read(m, stmts + (uint64_t)l->zam.body_end_pc, &end_pc, sizeof end_pc))
        return -1;
    return inst >= insts && inst < insts + (uint64_t)end_pc * (uint64_t)l->zam.inst_size;
}

/* Which of f's bodies holds instruction inst, as *at (its file and first
 * line), when the instruction's own location cannot say: an event's
 * handlers are bodies of one Func. -1 on no memory only. */
static int zam_body_of(const zs_memory *m, const zs_layout *l, const zs_func_info *f,
                       uint64_t inst, zs_location *at)
{
    for (size_t i = 0; f->nbodies > 1 && i < f->nbodies; i++) {
        if (f->bodies[i].file && in_zam_body(m, l, f->body_stmts[i], inst) > 0) {
            at->file = strdup(f->bodies[i].file);
            at->first_line = at->last_line = f->bodies[i].first_line;
            return at->file ? 0 : -1;
        }
    }
    return 0;
}

int zs_zam_frame_is_inlined(const zs_memory *m, const zs_layout *l, const zs_func_info *f,
                            uint64_t stmt)
{
    if (!f || f->builtin || !zs_stmt_is_zam(stmt) || !l->zam.body_vtable_at)
        return 0;
    uint64_t inst = zs_stmt_zam_inst(stmt);
    int read = 0; /* a body read that does not hold it */
    for (size_t i = 0; i <= f->nbodies; i++) {
        uint64_t body = i < f->nbodies ? f->body_stmts[i] : f->coalesced_body;
        int in = body ? in_zam_body(m, l, body, inst) : -1;
        if (in > 0)
            return 0;
        read |= in == 0;
    }
    return read;
}

/* Whether line l of file lies in one of f's bodies. */
static int in_own_body(const zs_func_info *f, const char *file, int line)
{
    for (size_t i = 0; i < f->nbodies; i++)
        if (f->bodies[i].file && file && !strcmp(f->bodies[i].file, file) &&
            f->bodies[i].first_line <= line && line <= f->bodies[i].last_line)
            return 1;
    return 0;
}

/* Instructions a coalesced body is searched back through for the handler
 * that an inlined function's instruction runs in. */
enum { HANDLER_SEARCH_MAX = 512 };

/* For instruction inst of f's coalesced body, inside a function ZAM
 * inlined there: the handler it was inlined into, as *at (its file, the
 * line of the handler's instruction nearest before inst: the call's).
 * The handlers lie one after another in the body, each a run of its own
 * statements and what it inlined. Left empty when none is found. */
static void coalesced_handler_of(const zs_memory *m, const zs_layout *l, const zs_func_info *f,
                                uint64_t inst, zs_location *at)
{
    uint64_t insts, info, seen = 0;
    uint32_t end_pc;
    uint64_t size = (uint64_t)l->zam.inst_size;
    if (read_ptr(m, f->coalesced_body + (uint64_t)l->zam.body_insts, &insts) ||
        zs_mem_read(m, f->coalesced_body + (uint64_t)l->zam.body_end_pc, &end_pc, sizeof end_pc) ||
        inst < insts || inst >= insts + (uint64_t)end_pc * size || (inst - insts) % size)
        return;
    for (uint64_t j = inst, k = 0; j >= insts + size && k < HANDLER_SEARCH_MAX; k++) {
        j -= size;
        uint64_t loc;
        zs_location here;
        if (read_ptr(m, j + (uint64_t)l->zam.inst_loc, &info))
            return;
        if (info == seen) /* the same statement as the one after it */
            continue;
        seen = info;
        if (read_ptr(m, info + (uint64_t)l->zam.locinfo_loc, &loc) || read_location(m, l, loc, &here))
            continue;
        if (in_own_body(f, here.file, here.first_line)) {
            *at = here;
            at->last_line = at->first_line;
            return;
        }
        zs_location_free(&here);
    }
    return;
}

/* A frame running ZAM instruction inst of f. The instruction's locations,
 * innermost first, run up its statement's enclosing blocks and (Zeek 7.0)
 * through the functions it was inlined into; from 7.2 on they stop at the
 * innermost function, and a statement of a function after a call ZAM
 * inlined there carries the inlined function's name. So a location inside
 * one of f's bodies is f's own whatever its name; the others are the
 * functions inlined into f, one frame per name, each at its innermost
 * line. *at is f's own line (none when the chain does not reach f); the
 * inlined functions go to out->inlined, outermost first. -1 on no memory
 * only: an unreadable chain leaves the frame without a line. */
static int zam_frames(const zs_memory *m, const zs_layout *l, const zs_func_info *f,
                      uint64_t inst, zs_location *at, zs_frame_info *out)
{
    zs_zam_line chain[ZS_MAX_ZAM_CHAIN];
    size_t n, k = 0;
    if (zs_resolve_zam(m, l, inst, chain, &n))
        return 0;
    zs_zam_line *inl = calloc(n, sizeof *inl);
    int rc = inl ? 0 : -1;
    for (size_t i = n; rc == 0 && i-- > 0;) { /* outermost first */
        zs_zam_line *c = &chain[i];
        /* Zeek 7.0 roots the chain at the frame's own statement, whose body
         * has no location there to be in. */
        if (in_own_body(f, c->file, c->line) || (i == n - 1 && !strcmp(c->func, f->name))) {
            free(at->file);
            at->file = c->file;
            c->file = NULL;
            at->first_line = at->last_line = c->line;
        } else if (k && !strcmp(inl[k - 1].func, c->func)) {
            inl[k - 1].line = c->line; /* a block of the same function: deeper */
            free(inl[k - 1].file);
            inl[k - 1].file = c->file;
            c->file = NULL;
        } else {
            inl[k++] = *c;
            memset(c, 0, sizeof *c);
        }
    }
    for (size_t i = 0; i < n; i++)
        zs_zam_line_free(&chain[i]);
    if (rc == 0 && !at->file && f->coalesced_body)
        coalesced_handler_of(m, l, f, inst, at);
    else if (rc == 0 && !at->file && zam_body_of(m, l, f, inst, at) < 0)
        rc = -1;
    if (rc || !k) {
        for (size_t i = 0; i < k; i++)
            zs_zam_line_free(&inl[i]);
        free(inl);
        return rc;
    }
    out->inlined = inl;
    out->ninlined = k;
    return 0;
}

int zs_resolve_frame_of(const zs_memory *m, const zs_layout *l, const zs_func_info *f,
                        const zs_frame *frame, zs_frame_info *out)
{
    memset(out, 0, sizeof *out);
    if (!f) {
        char name[64];
        snprintf(name, sizeof name, "[unresolved 0x%llx]", (unsigned long long)frame->func);
        out->name = strdup(name);
        out->file = strdup("");
        out->unresolved = 1;
        return out->name && out->file ? 0 : -1;
    }
    zs_location at = {0};
    if (!f->builtin && zs_stmt_is_zam(frame->stmt)) {
        if (zam_frames(m, l, f, zs_stmt_zam_inst(frame->stmt), &at, out))
            return -1;
        out->zam_inlined = zs_zam_frame_is_inlined(m, l, f, frame->stmt);
    } else if (!f->builtin && frame->stmt) {
        zs_resolve_location(m, l, frame->stmt, &at);
    }
    const zs_location *body = f->builtin ? NULL : running_body(f, &at);

    if (body && f->nbodies > 1)
        out->name = format_string("%s %s:%d", f->name, body->file, body->first_line);
    else
        out->name = strdup(f->name);
    /* Zeek 7.0's ZAM bodies have no location: a function with one body
     * is in the file its instruction's line is. */
    int zam_file = !body && !f->builtin && f->nbodies == 1 && zs_stmt_is_zam(frame->stmt) && at.file;
    out->file = strdup(body ? body->file : zam_file ? at.file : "");
    out->start_line = body ? body->first_line : 0;
    out->line = at.file ? at.first_line : out->start_line;
    zs_location_free(&at);
    if (!out->name || !out->file) {
        zs_frame_info_free(out);
        return -1;
    }
    return 0;
}

int zs_resolve_frame(const zs_memory *m, const zs_layout *l, const zs_frame *frame,
                     zs_frame_info *out)
{
    zs_func_info f;
    int readable = zs_resolve_func(m, l, frame->func, &f) == 0;
    int rc = zs_resolve_frame_of(m, l, readable ? &f : NULL, frame, out);
    if (readable)
        zs_func_info_free(&f);
    return rc;
}

void zs_frame_info_free(zs_frame_info *f)
{
    for (size_t i = 0; i < f->ninlined; i++)
        zs_zam_line_free(&f->inlined[i]);
    free(f->inlined);
    free(f->name);
    free(f->file);
    memset(f, 0, sizeof *f);
}
