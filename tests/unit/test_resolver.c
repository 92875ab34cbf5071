/* SPDX-License-Identifier: BSD-3-Clause */
/* zs_resolver against hand-built snapshot images of Zeek 3.0.1-like and
 * 8.0-like objects (laid out by the built-in layouts): names, BiFs, the
 * running body of a multi-body event, lines of outer and inner frames,
 * unresolved frames; then hostile snapshots, which must give a sensible
 * unresolved answer after a bounded number of reads, never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "zs_image.h"
#include "zs_layout.h"
#include "zs_resolver.h"

/* ---- building a target's memory ---------------------------------------- */

typedef struct fx {
    const zs_layout *l;
    zs_image *img;
    uint64_t next;
} fx;

static fx fx_new(const char *zeek_version)
{
    fx f = {zs_layout_builtin(zeek_version), zs_image_new(), 0x55d4c3a10000ULL};
    return f;
}

static uint64_t fx_alloc(fx *f, size_t size)
{
    uint64_t at = f->next;
    f->next = (at + size + 16 + 63) & ~63ULL;
    return at;
}

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static void fx_region(fx *f, uint64_t addr, const void *bytes, size_t len)
{
    CHECK(zs_image_add(f->img, addr, bytes, len) == 0);
}

/* A C string, as the recorder captures it: the 64-byte aligned chunks from
 * addr up to the one holding the NUL, nothing more. */
static void fx_cstring_at(fx *f, uint64_t addr, const char *s)
{
    size_t n = strlen(s) + 1;
    uint64_t end = (addr + n + 63) & ~63ULL;
    uint8_t *b = malloc(end - addr);
    memset(b, 0xcc, end - addr);
    memcpy(b, s, n);
    fx_region(f, addr, b, end - addr);
    free(b);
}

static uint64_t fx_cstring(fx *f, const char *s)
{
    uint64_t at = fx_alloc(f, strlen(s) + 64);
    fx_cstring_at(f, at, s);
    return at;
}

static uint64_t fx_location(fx *f, uint64_t file, int first, int last)
{
    const zs_layout *l = f->l;
    uint8_t b[64];
    memset(b, 0xcc, sizeof b);
    if (l->location_filename >= 8)
        put64(b, 0x55d4c1e2a200ULL); /* Zeek 3.0's Location vtable */
    put64(b + l->location_filename, file);
    put32(b + l->location_first_line, (uint32_t)first);
    put32(b + l->location_last_line, (uint32_t)last);
    uint64_t at = fx_alloc(f, sizeof b);
    fx_region(f, at, b, (size_t)l->location_last_line + 4 + 8);
    return at;
}

/* Any Obj: a statement, a call expression, a StmtList. */
static uint64_t fx_obj(fx *f, uint64_t location)
{
    uint8_t b[48];
    memset(b, 0xcc, sizeof b);
    put64(b, 0x55d4c1e2a100ULL);
    put64(b + f->l->obj_location, location);
    uint64_t at = fx_alloc(f, sizeof b);
    fx_region(f, at, b, sizeof b);
    return at;
}

static uint64_t fx_stmt(fx *f, uint64_t file, int first, int last)
{
    return fx_obj(f, fx_location(f, file, first, last));
}

/* A Func with raw members: name {data, size}, kind, bodies {begin, end}. */
static uint64_t fx_func_raw(fx *f, uint64_t at, uint64_t name_data, uint64_t name_size,
                            uint64_t kind, uint64_t begin, uint64_t end, const char *sso)
{
    const zs_layout *l = f->l;
    uint8_t b[112];
    memset(b, 0xee, sizeof b); /* garbage around every member */
    put64(b, 0x55d4c1e2a080ULL);
    uint8_t *k = b + l->func_kind;
    for (int i = 0; i < l->func_kind_size; i++)
        k[i] = (uint8_t)(kind >> (8 * i));
    put64(b + l->func_bodies + l->vector_begin, begin);
    put64(b + l->func_bodies + l->vector_end, end);
    put64(b + l->func_name + l->string_data, name_data);
    put64(b + l->func_name + l->string_size, name_size);
    if (sso)
        memcpy(b + l->func_name + 16, sso, strlen(sso) + 1);
    if (!at)
        at = fx_alloc(f, sizeof b);
    fx_region(f, at, b, sizeof b);
    return at;
}

/* A well-formed Func: short names in the std::string's own buffer, long
 * ones on the heap; bodies array of the layout's Body size. */
static uint64_t fx_func(fx *f, const char *name, int builtin, const uint64_t *stmts, size_t n)
{
    const zs_layout *l = f->l;
    uint64_t at = fx_alloc(f, 112), data;
    size_t len = strlen(name);
    const char *sso = NULL;
    if (len <= 15) {
        data = at + (uint64_t)l->func_name + 16;
        sso = name;
    } else {
        data = fx_alloc(f, len + 1);
        fx_region(f, data, name, len);
    }
    uint64_t begin = 0, end = 0;
    if (n) {
        size_t bytes = n * (size_t)l->body_size;
        uint8_t *b = calloc(1, bytes);
        for (size_t i = 0; i < n; i++)
            put64(b + i * (size_t)l->body_size + l->body_stmts, stmts[i]);
        begin = fx_alloc(f, bytes);
        end = begin + bytes;
        fx_region(f, begin, b, bytes);
        free(b);
    }
    return fx_func_raw(f, at, data, len, builtin ? (uint64_t)l->func_kind_builtin : 0, begin, end, sso);
}

/* ---- counting reads: hostile input must cost bounded work -------------- */

typedef struct counter {
    zs_memory inner;
    size_t calls;
    size_t bytes;
} counter;

static int counting_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    counter *c = ctx;
    c->calls++;
    c->bytes += len;
    return zs_mem_read(&c->inner, addr, buf, len);
}

static zs_memory counted(counter *c, fx *f)
{
    *c = (counter){zs_image_memory(f->img), 0, 0};
    return (zs_memory){counting_read, c};
}

/* Resolves one frame and checks name, file, start line and line. */
static void expect_frame(fx *f, uint64_t func, uint64_t stmt, const char *name, const char *file,
                         int start_line, int line, int unresolved)
{
    zs_memory m = zs_image_memory(f->img);
    zs_frame frame = {func, stmt};
    zs_frame_info fi;
    CHECK(zs_resolve_frame(&m, f->l, &frame, &fi) == 0);
    if (!fi.name || strcmp(fi.name, name) || strcmp(fi.file, file) || fi.start_line != start_line ||
        fi.line != line || fi.unresolved != unresolved)
        fprintf(stderr, "frame {0x%llx, 0x%llx}: got '%s' '%s' %d %d %d, want '%s' '%s' %d %d %d\n",
                (unsigned long long)func, (unsigned long long)stmt, fi.name ? fi.name : "(null)",
                fi.file ? fi.file : "(null)", fi.start_line, fi.line, fi.unresolved, name, file,
                start_line, line, unresolved);
    CHECK(fi.name && !strcmp(fi.name, name));
    CHECK(fi.file && !strcmp(fi.file, file));
    CHECK(fi.start_line == start_line);
    CHECK(fi.line == line);
    CHECK(fi.unresolved == unresolved);
    zs_frame_info_free(&fi);
}

/* ---- well-formed objects ------------------------------------------------ */

static void test_objects(const char *zeek_version)
{
    fx f = fx_new(zeek_version);
    CHECK(f.l != NULL);
    if (!f.l)
        return;
    zs_memory m = zs_image_memory(f.img);

    const char *http = "base/protocols/http/main.zeek", *conn = "base/protocols/conn/main.zeek";
    uint64_t http_file = fx_cstring(&f, http), conn_file = fx_cstring(&f, conn);
    /* A file name 2 bytes before a 64-byte boundary: the first chunk read
     * is 2 bytes long. */
    uint64_t odd_file = fx_alloc(&f, 256) + 62;
    fx_cstring_at(&f, odd_file, "base/utils/site.zeek");

    /* HTTP::set_state, one body at lines 180-210. */
    uint64_t set_state_body = fx_stmt(&f, http_file, 180, 210);
    uint64_t set_state = fx_func(&f, "HTTP::set_state", 0, &set_state_body, 1);
    uint64_t line_190 = fx_stmt(&f, http_file, 190, 190);
    /* connection_state_remove: two bodies in two files. */
    uint64_t csr_bodies[] = {fx_stmt(&f, http_file, 329, 341), fx_stmt(&f, conn_file, 290, 306)};
    uint64_t csr = fx_func(&f, "connection_state_remove", 0, csr_bodies, 2);
    uint64_t http_330 = fx_stmt(&f, http_file, 330, 330);
    uint64_t conn_295 = fx_stmt(&f, conn_file, 295, 295);
    uint64_t conn_329 = fx_stmt(&f, conn_file, 329, 329); /* http's range, conn's file */
    uint64_t conn_100 = fx_stmt(&f, conn_file, 100, 100);
    /* A hook with two bodies in one file. */
    uint64_t hook_bodies[] = {fx_stmt(&f, odd_file, 10, 20), fx_stmt(&f, odd_file, 30, 40)};
    uint64_t hook = fx_func(&f, "Site::policy", 0, hook_bodies, 2);
    uint64_t site_35 = fx_stmt(&f, odd_file, 35, 35);
    uint64_t site_20 = fx_stmt(&f, odd_file, 20, 20);
    /* A BiF and a name too long for the small-string buffer. */
    uint64_t fmt = fx_func(&f, "fmt", 1, NULL, 0);
    uint64_t long_body = fx_stmt(&f, conn_file, 410, 432);
    uint64_t long_name = fx_func(&f, "SumStats::observe_with_threshold", 0, &long_body, 1);

    /* zs_resolve_func */
    zs_func_info fi;
    CHECK(zs_resolve_func(&m, f.l, set_state, &fi) == 0);
    CHECK(fi.name && !strcmp(fi.name, "HTTP::set_state"));
    CHECK(!fi.builtin);
    CHECK(fi.nbodies == 1);
    if (fi.nbodies == 1) {
        CHECK(fi.bodies[0].file && !strcmp(fi.bodies[0].file, http));
        CHECK(fi.bodies[0].first_line == 180 && fi.bodies[0].last_line == 210);
    }
    zs_func_info_free(&fi);
    CHECK(zs_resolve_func(&m, f.l, csr, &fi) == 0);
    CHECK(fi.nbodies == 2);
    if (fi.nbodies == 2) {
        CHECK(!strcmp(fi.bodies[0].file, http) && fi.bodies[0].first_line == 329);
        CHECK(!strcmp(fi.bodies[1].file, conn) && fi.bodies[1].last_line == 306);
    }
    zs_func_info_free(&fi);
    CHECK(zs_resolve_func(&m, f.l, fmt, &fi) == 0);
    CHECK(fi.name && !strcmp(fi.name, "fmt"));
    CHECK(fi.builtin);
    CHECK(fi.nbodies == 0);
    zs_func_info_free(&fi);
    CHECK(zs_resolve_func(&m, f.l, long_name, &fi) == 0);
    CHECK(fi.name && !strcmp(fi.name, "SumStats::observe_with_threshold"));
    zs_func_info_free(&fi);
    CHECK(zs_resolve_func(&m, f.l, 0, &fi) == -1);
    CHECK(fi.name == NULL && fi.nbodies == 0);

    /* zs_resolve_location */
    zs_location loc;
    CHECK(zs_resolve_location(&m, f.l, line_190, &loc) == 0);
    CHECK(loc.file && !strcmp(loc.file, http));
    CHECK(loc.first_line == 190 && loc.last_line == 190);
    zs_location_free(&loc);
    CHECK(zs_resolve_location(&m, f.l, site_35, &loc) == 0);
    CHECK(loc.file && !strcmp(loc.file, "base/utils/site.zeek"));
    zs_location_free(&loc);
    CHECK(zs_resolve_location(&m, f.l, 0x1000, &loc) == -1);
    CHECK(loc.file == NULL);

    /* Frames: the innermost statement's line, or for an outer frame the
     * call site's; no statement: the body's first line. */
    expect_frame(&f, set_state, line_190, "HTTP::set_state", http, 180, 190, 0);
    expect_frame(&f, set_state, 0, "HTTP::set_state", http, 180, 180, 0);
    expect_frame(&f, set_state, conn_295, "HTTP::set_state", http, 180, 295, 0);
    /* The running body of an event: the one containing the line, in that
     * file. */
    expect_frame(&f, csr, http_330, "connection_state_remove base/protocols/http/main.zeek:329",
                 http, 329, 330, 0);
    expect_frame(&f, csr, conn_295, "connection_state_remove base/protocols/conn/main.zeek:290",
                 conn, 290, 295, 0);
    expect_frame(&f, csr, csr_bodies[1], "connection_state_remove base/protocols/conn/main.zeek:290",
                 conn, 290, 290, 0);
    /* No body contains it: the event's name alone, never a wrong body. */
    expect_frame(&f, csr, conn_329, "connection_state_remove", "", 0, 329, 0);
    expect_frame(&f, csr, conn_100, "connection_state_remove", "", 0, 100, 0);
    expect_frame(&f, csr, 0, "connection_state_remove", "", 0, 0, 0);
    expect_frame(&f, hook, site_35, "Site::policy base/utils/site.zeek:30", "base/utils/site.zeek",
                 30, 35, 0);
    expect_frame(&f, hook, site_20, "Site::policy base/utils/site.zeek:10", "base/utils/site.zeek",
                 10, 20, 0);
    /* BiFs have no body and no line, whatever statement comes with them. */
    expect_frame(&f, fmt, 0, "fmt", "", 0, 0, 0);
    expect_frame(&f, fmt, line_190, "fmt", "", 0, 0, 0);
    expect_frame(&f, long_name, long_body, "SumStats::observe_with_threshold", conn, 410, 410, 0);

    /* Not in the snapshot. */
    expect_frame(&f, 0x55d4c3a99000ULL, line_190, "[unresolved 0x55d4c3a99000]", "", 0, 0, 1);
    expect_frame(&f, 0, 0, "[unresolved 0x0]", "", 0, 0, 1);
    /* A statement that cannot be read costs the line, not the function. */
    expect_frame(&f, set_state, 0x42, "HTTP::set_state", http, 180, 180, 0);

    zs_image_free(f.img);
}

/* The kind is read with its own width: the bytes after a 1-byte kind are
 * padding or other members. */
static void test_kind_width(void)
{
    fx f = fx_new("8.0.10");
    const zs_layout *l = f.l;
    CHECK(l->func_kind_size == 1);
    uint64_t body = fx_stmt(&f, fx_cstring(&f, "a.zeek"), 1, 9);
    uint64_t bodies = fx_alloc(&f, 64);
    uint8_t b[24] = {0};
    put64(b + l->body_stmts, body);
    fx_region(&f, bodies, b, (size_t)l->body_size);
    uint64_t at = fx_alloc(&f, 112);
    /* kind 0 followed by non-zero bytes: a script function */
    fx_func_raw(&f, at, at + (uint64_t)l->func_name + 16, 4, 0xffffff00ULL, bodies,
                bodies + (uint64_t)l->body_size, "init");
    expect_frame(&f, at, 0, "init", "a.zeek", 1, 1, 0);
    uint64_t bif = fx_alloc(&f, 112);
    fx_func_raw(&f, bif, bif + (uint64_t)l->func_name + 16, 3, 0xabcdef01ULL, 0, 0, "md5");
    expect_frame(&f, bif, 0, "md5", "", 0, 0, 0);
    zs_image_free(f.img);

    /* Zeek 3.0: a 4-byte enum; a kind of 0x101 is no BiF. */
    f = fx_new("3.0.1");
    at = fx_alloc(&f, 112);
    fx_func_raw(&f, at, at + (uint64_t)f.l->func_name + 16, 3, 0x101, 0, 0, "odd");
    expect_frame(&f, at, 0, "odd", "", 0, 0, 0);
    zs_image_free(f.img);
}

/* ---- hostile snapshots ------------------------------------------------- */

static void expect_bounded(const char *what, const counter *c, size_t max_calls)
{
    if (c->calls > max_calls || c->bytes > (1u << 20))
        fprintf(stderr, "%s: %zu reads, %zu bytes\n", what, c->calls, c->bytes);
    CHECK(c->calls <= max_calls);
    CHECK(c->bytes <= (1u << 20));
}

static void test_hostile(const char *zeek_version)
{
    fx f = fx_new(zeek_version);
    const zs_layout *l = f.l;
    counter c;
    zs_memory m = counted(&c, &f);
    zs_func_info fi;
    zs_location loc;
    zs_frame_info fr;

    /* A file name with no NUL: 8 KiB of 'A', twice the longest string the
     * resolver reads; and a string whose snapshot ends before its NUL. */
    uint64_t endless = fx_alloc(&f, 8192);
    char *as = malloc(8192);
    memset(as, 'A', 8192);
    fx_region(&f, endless, as, 8192);
    uint64_t cut = fx_alloc(&f, 128);
    fx_region(&f, cut, as, 100);
    free(as);
    uint64_t no_nul = fx_obj(&f, fx_location(&f, endless, 5, 6));
    uint64_t cut_name = fx_obj(&f, fx_location(&f, cut, 5, 6));
    c.calls = c.bytes = 0;
    CHECK(zs_resolve_location(&m, l, no_nul, &loc) == -1);
    CHECK(loc.file == NULL);
    expect_bounded("unterminated string", &c, 2 + ZS_MAX_STRING / 64 + 1);
    CHECK(zs_resolve_location(&m, l, cut_name, &loc) == -1);
    CHECK(loc.file == NULL);
    /* As a frame's statement: the function resolves, the line does not. */
    uint64_t good_file = fx_cstring(&f, "good.zeek");
    uint64_t body = fx_stmt(&f, good_file, 10, 20);
    uint64_t func = fx_func(&f, "good", 0, &body, 1);
    expect_frame(&f, func, no_nul, "good", "good.zeek", 10, 10, 0);
    /* As a body's file: the function has a name but no file. */
    uint64_t bad_body = fx_obj(&f, fx_location(&f, endless, 1, 2));
    uint64_t no_file = fx_func(&f, "nofile", 0, &bad_body, 1);
    expect_frame(&f, no_file, body, "nofile", "", 0, 10, 0);

    /* Absurd std::string sizes, a name that is not in the snapshot, a name
     * with a NUL inside. */
    uint64_t name = fx_alloc(&f, 64);
    fx_region(&f, name, "abc\0def", 8);
    uint64_t sizes[] = {1ULL << 40, UINT64_MAX, ZS_MAX_STRING, ZS_MAX_STRING - 1, 7};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t fn = fx_func_raw(&f, 0, name, sizes[i], 0, 0, 0, NULL);
        c.calls = c.bytes = 0;
        CHECK(zs_resolve_func(&m, l, fn, &fi) == -1);
        CHECK(fi.name == NULL);
        expect_bounded("string size", &c, 3);
        char want[64];
        snprintf(want, sizeof want, "[unresolved 0x%llx]", (unsigned long long)fn);
        expect_frame(&f, fn, body, want, "", 0, 0, 1);
    }
    uint64_t unmapped_name = fx_func_raw(&f, 0, 0x7f0000001000ULL, 10, 0, 0, 0, NULL);
    char want[64];
    snprintf(want, sizeof want, "[unresolved 0x%llx]", (unsigned long long)unmapped_name);
    expect_frame(&f, unmapped_name, 0, want, "", 0, 0, 1);

    /* Bodies vectors: huge, misaligned, reversed, one over the limit. */
    uint64_t arr = fx_alloc(&f, 64);
    uint8_t zeros[64] = {0};
    fx_region(&f, arr, zeros, 64);
    uint64_t bs = (uint64_t)l->body_size;
    uint64_t ends[][2] = {
        {arr, arr + (bs << 36)},
        {arr, arr + bs + 1},
        {arr, arr + 3},
        {arr + bs, arr},
        {arr, arr + bs * (ZS_MAX_BODIES + 1)},
        {arr, arr + bs * 8}, /* fits the limit, not the snapshot */
        {0, bs},
    };
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        uint64_t fn = fx_alloc(&f, 112);
        fx_func_raw(&f, fn, fn + (uint64_t)l->func_name + 16, 4, 0, ends[i][0], ends[i][1], "vec!");
        c.calls = c.bytes = 0;
        CHECK(zs_resolve_func(&m, l, fn, &fi) == -1);
        CHECK(fi.name == NULL && fi.bodies == NULL);
        expect_bounded("bodies vector", &c, 4);
    }
    /* An empty bodies vector on a script function: a name, no file. */
    uint64_t empty = fx_alloc(&f, 112);
    fx_func_raw(&f, empty, empty + (uint64_t)l->func_name + 16, 5, 0, arr, arr, "empty");
    expect_frame(&f, empty, body, "empty", "", 0, 10, 0);

    /* The most bodies allowed, every one the same statement list: bounded
     * by ZS_MAX_BODIES, and resolved. */
    uint64_t many[ZS_MAX_BODIES];
    for (size_t i = 0; i < ZS_MAX_BODIES; i++)
        many[i] = body;
    uint64_t many_fn = fx_func(&f, "many", 0, many, ZS_MAX_BODIES);
    c.calls = c.bytes = 0;
    CHECK(zs_resolve_func(&m, l, many_fn, &fi) == 0);
    CHECK(fi.nbodies == ZS_MAX_BODIES);
    zs_func_info_free(&fi);
    expect_bounded("many bodies", &c, 4 + 4 * ZS_MAX_BODIES);

    /* Cycles: a statement whose location pointer points at itself, a
     * Location whose file name pointer points at the Location, bodies whose
     * statements are the Func itself, a Func whose bodies array is the
     * Func. The resolver follows no chain, so each costs a few reads; what
     * comes back is short garbage or nothing, never a crash. */
    uint64_t self_stmt = fx_alloc(&f, 48);
    uint8_t sb[48];
    memset(sb, 0xcc, sizeof sb);
    put64(sb, 0x55d4c1e2a100ULL);
    put64(sb + l->obj_location, self_stmt);
    fx_region(&f, self_stmt, sb, sizeof sb);
    c.calls = c.bytes = 0;
    if (zs_resolve_location(&m, l, self_stmt, &loc) == 0) {
        CHECK(strlen(loc.file) < ZS_MAX_STRING);
        zs_location_free(&loc);
    }
    expect_bounded("self location", &c, 2 + ZS_MAX_STRING / 64 + 1);

    uint64_t self_loc = fx_alloc(&f, 64);
    uint8_t lb[64];
    memset(lb, 0, sizeof lb);
    put64(lb + l->location_filename, self_loc);
    put32(lb + l->location_first_line, 7);
    put32(lb + l->location_last_line, 7);
    fx_region(&f, self_loc, lb, sizeof lb);
    uint64_t self_loc_stmt = fx_obj(&f, self_loc);
    c.calls = c.bytes = 0;
    if (zs_resolve_location(&m, l, self_loc_stmt, &loc) == 0) {
        CHECK(strlen(loc.file) < ZS_MAX_STRING);
        zs_location_free(&loc);
    }
    expect_bounded("self file name", &c, 2 + ZS_MAX_STRING / 64 + 1);

    uint64_t self_fn = fx_alloc(&f, 112);
    fx_func_raw(&f, self_fn, self_fn + (uint64_t)l->func_name + 16, 4, 0, self_fn,
                self_fn + 2 * bs, "self");
    c.calls = c.bytes = 0;
    CHECK(zs_resolve_frame(&m, l, &(zs_frame){self_fn, self_fn}, &fr) == 0);
    CHECK(fr.name && !strncmp(fr.name, "self", 4));
    zs_frame_info_free(&fr);
    expect_bounded("self bodies", &c, 4 + 2 * (2 + ZS_MAX_STRING / 64 + 1) + 8);

    /* Addresses at the top of the address space: the reads wrap, and the
     * image must refuse them. */
    c.calls = c.bytes = 0;
    expect_frame(&f, 0xfffffffffffffff8ULL, 0xfffffffffffffffcULL, "[unresolved 0xfffffffffffffff8]",
                 "", 0, 0, 1);
    CHECK(zs_resolve_location(&m, l, UINT64_MAX - 4, &loc) == -1);
    uint64_t top = fx_func_raw(&f, 0, UINT64_MAX - 2, 10, 0, 0, 0, NULL);
    CHECK(zs_resolve_func(&m, l, top, &fi) == -1);

    zs_image_free(f.img);
}

static void expect_path(const char *in, const char *want)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", in);
    zs_path_normalize(buf);
    if (strcmp(buf, want))
        fprintf(stderr, "zs_path_normalize(\"%s\") = \"%s\", want \"%s\"\n", in, buf, want);
    CHECK(!strcmp(buf, want));
}

/* One spelling per script: what @load ./extra leaves in Zeek's Locations. */
static void test_path_normalize(void)
{
    expect_path("./extra.zeek", "extra.zeek");
    expect_path("././extra.zeek", "extra.zeek");
    expect_path("extra.zeek", "extra.zeek");
    expect_path(".//extra.zeek", "extra.zeek");
    expect_path("base//protocols/./http/main.zeek", "base/protocols/http/main.zeek");
    expect_path("/usr/local/zeek/share/zeek/./site//local.zeek", "/usr/local/zeek/share/zeek/site/local.zeek");
    expect_path("//abs", "/abs");
    expect_path("/", "/");
    expect_path("./", ".");
    expect_path(".", ".");
    expect_path("", "");
    expect_path("dir/", "dir/");
    expect_path("./dir/./", "dir/");
    /* ".." is kept: a symlinked directory makes "a/../b" another file. */
    expect_path("a/../b.zeek", "a/../b.zeek");
    expect_path("./../x/./y.zeek", "../x/y.zeek");
    expect_path("..", "..");
    expect_path(".hidden/.x.zeek", ".hidden/.x.zeek");
    expect_path("a/.../b", "a/.../b");

    /* The resolver gives the normalized name, in a handler body's name too. */
    fx f = fx_new("8.0.10");
    zs_memory m = zs_image_memory(f.img);
    uint64_t dotted = fx_cstring(&f, "././extra.zeek"), plain = fx_cstring(&f, "extra.zeek");
    uint64_t bodies[] = {fx_stmt(&f, dotted, 10, 20), fx_stmt(&f, plain, 30, 40)};
    uint64_t ev = fx_func(&f, "zeek_init", 0, bodies, 2);
    uint64_t at_15 = fx_stmt(&f, plain, 15, 15), at_35 = fx_stmt(&f, dotted, 35, 35);
    zs_location loc;
    CHECK(zs_resolve_location(&m, f.l, bodies[0], &loc) == 0);
    CHECK(loc.file && !strcmp(loc.file, "extra.zeek"));
    zs_location_free(&loc);
    /* The running body is found across spellings of one file. */
    expect_frame(&f, ev, at_15, "zeek_init extra.zeek:10", "extra.zeek", 10, 15, 0);
    expect_frame(&f, ev, at_35, "zeek_init extra.zeek:30", "extra.zeek", 30, 35, 0);
    zs_image_free(f.img);
}

int main(void)
{
    test_path_normalize();
    test_objects("3.0.1");
    test_objects("8.0.10");
    test_kind_width();
    test_hostile("3.0.1");
    test_hostile("8.0.10");
    CHECK_MAIN_END;
}
