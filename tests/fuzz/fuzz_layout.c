/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: bytes -> zs_layout_parse, as the converter parses the layout
 * text stored in a (possibly hostile) recording and the recorder a --layout
 * file.
 *
 * A layout that parses must pass zs_layout_check, survive format -> parse
 * unchanged, and be safe to resolve with: a Func and its objects are laid
 * out in a small image at the offsets the layout gives (however extreme) and
 * resolved, so that an offset the checks let through but the resolver
 * cannot handle shows up under ASan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_image.h"
#include "zs_layout.h"
#include "zs_resolver.h"

enum { OBJ = 16384 }; /* room for any offset zs_layout_parse accepts, and more */

static const uint64_t FUNC = 0x100000, NAME = 0x200000, BODIES = 0x300000, STMT = 0x400000,
                      LOC = 0x500000, FILENAME = 0x600000;

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_layout: invariant broken: %s\n", what);
        abort();
    }
}

static void put(uint8_t *obj, int32_t off, uint64_t v, int size)
{
    if (off >= 0 && off + size <= OBJ)
        for (int i = 0; i < size; i++)
            obj[off + i] = (uint8_t)(v >> (8 * i));
}

typedef struct span {
    int32_t off, size;
} span;

/* Whether members written into one object are pairwise disjoint: then the
 * object holds every value exactly as written, and the resolver must find
 * them all. */
static int disjoint(const span *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (s[i].off < s[j].off + s[j].size && s[j].off < s[i].off + s[i].size)
                return 0;
    return 1;
}

static int well_formed(const zs_layout *l)
{
    span func[] = {{l->func_kind, l->func_kind_size},
                   {l->func_name + l->string_data, 8},
                   {l->func_name + l->string_size, 8},
                   {l->func_bodies + l->vector_begin, 8},
                   {l->func_bodies + l->vector_end, 8}};
    span loc[] = {{l->location_filename, 8}, {l->location_first_line, 4}, {l->location_last_line, 4}};
    return disjoint(func, sizeof func / sizeof func[0]) && disjoint(loc, sizeof loc / sizeof loc[0]);
}

/* A well-formed script Func with one body, as the layout places it. When
 * the layout's members do not overlap, the resolver must name it exactly:
 * anything else means it read outside what it fetched. */
static void resolve_with(const zs_layout *l)
{
    static uint8_t func[OBJ], body[OBJ], stmt[OBJ], loc[OBJ];
    static const char filename[64] = "base/f.zeek";
    memset(func, 0xee, OBJ);
    memset(body, 0xee, OBJ);
    memset(stmt, 0xee, OBJ);
    memset(loc, 0xee, OBJ);
    put(func, l->func_kind, l->func_kind_builtin ? 0 : 1, l->func_kind_size);
    put(func, l->func_name + l->string_data, NAME, 8);
    put(func, l->func_name + l->string_size, 4, 8);
    put(func, l->func_bodies + l->vector_begin, BODIES, 8);
    put(func, l->func_bodies + l->vector_end, BODIES + (uint64_t)l->body_size, 8);
    put(body, l->body_stmts, STMT, 8);
    put(stmt, l->obj_location, LOC, 8);
    put(loc, l->location_filename, FILENAME, 8);
    put(loc, l->location_first_line, 10, 4);
    put(loc, l->location_last_line, 20, 4);

    zs_image *img = zs_image_new();
    if (!img)
        return;
    if (zs_image_add(img, FUNC, func, OBJ) || zs_image_add(img, NAME, "name", 4) ||
        zs_image_add(img, BODIES, body, OBJ) || zs_image_add(img, STMT, stmt, OBJ) ||
        zs_image_add(img, LOC, loc, OBJ) || zs_image_add(img, FILENAME, filename, sizeof filename)) {
        zs_image_free(img);
        return;
    }
    zs_image_seal(img);
    zs_memory m = zs_image_memory(img);
    zs_frame frame = {FUNC, STMT};
    zs_frame_info fi;
    if (zs_resolve_frame(&m, l, &frame, &fi) == 0) {
        check(fi.name != NULL && fi.file != NULL, "a frame always has a name and a file");
        if (well_formed(l))
            check(!fi.unresolved && !strcmp(fi.name, "name") && !strcmp(fi.file, filename) &&
                      fi.start_line == 10 && fi.line == 10,
                  "a well-formed Func resolves to what was laid out");
        zs_frame_info_free(&fi);
    }
    zs_image_free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zs_layout l;
    zs_error err = {0};
    if (zs_layout_parse((const char *)data, size, "fuzz", &l, &err)) {
        check(err.code != 0 && err.detail[0], "a refused layout says why");
        return 0;
    }
    check(zs_layout_check(&l, "fuzz", &err) == 0, "a parsed layout passes the check");
    char *text = zs_layout_format(&l);
    if (!text)
        return 0;
    zs_layout back;
    check(zs_layout_parse(text, strlen(text), "formatted", &back, &err) == 0,
          "a formatted layout parses");
    check(zs_layout_equal(&l, &back), "format -> parse gives the same layout");
    free(text);
    resolve_with(&l);
    return 0;
}
