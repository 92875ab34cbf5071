/* SPDX-License-Identifier: BSD-3-Clause */
/* Layout discovery from DWARF. The classes the profiler reads are looked up
 * by name and namespace (zeek::Obj, zeek::detail::Location, zeek::Func,
 * zeek::detail::Frame, zeek::detail::CallInfo from Zeek 4.0 on; BroObj,
 * Location, Func, Frame, CallInfo in the global namespace in 3.x), and every
 * offset is read from their definitions, never assumed.
 *
 * Zeek's DWARF is hundreds of megabytes, so the scan is linear and stops as
 * soon as every class is found: it walks only the top level of each unit and
 * the namespaces that can hold a wanted class (zeek, zeek::detail), skipping
 * everything else (std, functions, other namespaces) sibling by sibling.
 * Member and type lookups follow references a bounded number of steps, so
 * cyclic or hostile DWARF cannot make them loop.
 *
 * The DWARF may be hostile (--all inspects every process's executable), so
 * the scan also counts the DIEs it visits and watches the clock, and any
 * sign of malformed DWARF (a libdw error while walking, a reference chain or
 * base-class nesting beyond the bounds) refuses the executable with
 * ZS_E_EXE_REFUSED rather than trusting what was found so far. Debug info
 * that is merely absent, or lacks a class, is not malformed: the caller may
 * fall back to the built-in table. */
#include "zs_dwarf.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <linux/openat2.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "zs_elf.h"
#include "zs_hex.h"

/* Where separate debug files live (build-id tree and debuglink mirror);
 * a build may point it elsewhere. */
#ifndef ZS_DEBUG_DIR
#define ZS_DEBUG_DIR "/usr/lib/debug"
#endif
#define DEBUG_DIR ZS_DEBUG_DIR

/* Bounds on reference chasing: typedef/const chains, base-class depth, and
 * DIEs visited by one member lookup (bases included); and how many
 * incomplete definitions of one class are examined (all definitions of a
 * class are the same, so a later one would lack the same member). */
enum {
    PEEL_MAX = 16,
    BASE_DEPTH_MAX = 8,
    MEMBER_VISIT_MAX = 20000,
    ATTEMPTS_MAX = 8,
    QNAME_MAX = 256,
    /* The walk: namespace nesting (only zeek and zeek::detail are entered),
     * DIEs visited over the whole scan (a real zeek's top levels hold a few
     * million), and wall-clock time, checked every CLOCK_EVERY DIEs. */
    SCOPE_DEPTH_MAX = 4,
    SCAN_DIES_MAX = 200000000,
    SCAN_SECONDS_MAX = 60,
    CLOCK_EVERY = 65536,
};

/* The first sign of malformed DWARF met by the current scan, "" when none.
 * Kept per thread rather than threaded through every helper, which would
 * otherwise all need one more argument just to report it. */
static _Thread_local char trouble[160];

static void note_trouble(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note_trouble(const char *fmt, ...)
{
    if (trouble[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(trouble, sizeof trouble, fmt, ap);
    va_end(ap);
}

/* dwarf_child and dwarf_siblingof (0 moved, 1 none), noting an error (-1). */
static int child_of(Dwarf_Die *parent, Dwarf_Die *child)
{
    int rc = dwarf_child(parent, child);
    if (rc < 0)
        note_trouble("unreadable children of DIE 0x%llx: %s",
                     (unsigned long long)dwarf_dieoffset(parent), dwarf_errmsg(-1));
    return rc;
}

static int next_sibling(Dwarf_Die *die)
{
    Dwarf_Off at = dwarf_dieoffset(die);
    int rc = dwarf_siblingof(die, die);
    if (rc < 0)
        note_trouble("no sibling after DIE 0x%llx: %s", (unsigned long long)at, dwarf_errmsg(-1));
    return rc;
}

/* ---- what each class contributes to the layout ---- */

typedef struct obj_info {
    int32_t location;
} obj_info;

typedef struct location_info {
    int32_t filename, first_line, last_line;
} location_info;

typedef struct func_info {
    int32_t kind, kind_size, kind_builtin;
    int32_t name, string_data, string_size;
    int32_t bodies, vector_begin, vector_end;
    int32_t body_size, body_stmts;
} func_info;

typedef struct frame_info {
    int32_t next_stmt, function;
    int has_function;
} frame_info;

typedef struct callinfo_info {
    int32_t size, call, func, frame;
    int has_func, has_frame;
} callinfo_info;

typedef struct classes {
    obj_info obj;
    location_info location;
    func_info func;
    frame_info frame;
    callinfo_info callinfo;
} classes;

/* What a failed extraction was missing, for the one-line error. */
typedef struct miss {
    char what[QNAME_MAX + 64]; /* "class zeek::Func::Body" */
    char member[64];
} miss;

typedef enum { T_OBJ, T_LOCATION, T_FUNC, T_FRAME, T_CALLINFO, T_COUNT } target_id;

/* Name variants: 4.0+ namespaced, 3.x global. */
enum { V_NAMESPACED, V_GLOBAL, V_COUNT };

typedef int (*extract_fn)(Dwarf_Die *cls, const char *qname, classes *c, miss *m);

typedef struct target {
    const char *names[V_COUNT];
    const char *first_member; /* named when no definition was seen at all */
    extract_fn extract;
} target;

/* A declaration of a wanted class seen in the current unit, whose
 * definition may follow elsewhere in the unit with DW_AT_specification
 * (GCC does that in type units: the declaration sits in the namespace,
 * the definition at the unit's top level). */
typedef struct decl {
    Dwarf_Off offset;
    int target, variant;
} decl;

enum { DECL_MAX = 32 };

typedef struct scan {
    int prefer;                      /* V_NAMESPACED or V_GLOBAL */
    decl decls[DECL_MAX];            /* of the unit being walked */
    int ndecls;
    classes found_in[V_COUNT];       /* results per name variant */
    int found[T_COUNT][V_COUNT];
    int missed[T_COUNT][V_COUNT];    /* incomplete definitions seen */
    miss why[T_COUNT][V_COUNT];      /* first failure per class and variant */
    int done;
    long dies;                       /* visited by the walk so far */
    struct timespec deadline;        /* CLOCK_MONOTONIC */
} scan;

static int set_miss(miss *m, const char *kind, const char *name, const char *member)
{
    snprintf(m->what, sizeof m->what, "%s %s", kind, name);
    snprintf(m->member, sizeof m->member, "%s", member);
    return -1;
}

/* ---- DIE helpers ---- */

static int is_class_tag(int tag)
{
    return tag == DW_TAG_class_type || tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
}

static int is_declaration(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    bool flag = false;
    return dwarf_attr(die, DW_AT_declaration, &a) && dwarf_formflag(&a, &flag) == 0 && flag;
}

/* A class definition that has members, not a forward declaration. */
static int is_definition(Dwarf_Die *die)
{
    return !is_declaration(die) && dwarf_haschildren(die) > 0;
}

/* The type a DIE refers to through DW_AT_type, with typedefs and
 * cv-qualifiers peeled off; a declaration is replaced by its type-unit
 * definition when DW_AT_signature says where that is. */
static int peel_type(Dwarf_Die *die, Dwarf_Die *out)
{
    Dwarf_Attribute a;
    Dwarf_Die cur;
    if (!dwarf_attr_integrate(die, DW_AT_type, &a) || !dwarf_formref_die(&a, &cur))
        return -1;
    for (int i = 0; i < PEEL_MAX; i++) {
        int tag = dwarf_tag(&cur);
        if (tag == DW_TAG_typedef || tag == DW_TAG_const_type || tag == DW_TAG_volatile_type ||
            tag == DW_TAG_restrict_type || tag == DW_TAG_atomic_type) {
            if (!dwarf_attr(&cur, DW_AT_type, &a) || !dwarf_formref_die(&a, &cur))
                return -1;
            continue;
        }
        if (is_declaration(&cur) && dwarf_attr(&cur, DW_AT_signature, &a)) {
            if (!dwarf_formref_die(&a, &cur))
                return -1;
            continue;
        }
        *out = cur;
        return 0;
    }
    note_trouble("more than %d type references from DIE 0x%llx (a cycle?)", PEEL_MAX,
                 (unsigned long long)dwarf_dieoffset(die));
    return -1;
}

/* The definition of a class DIE: itself, or the type-unit definition its
 * declaration names with DW_AT_signature. */
static int class_definition(Dwarf_Die *die, Dwarf_Die *out)
{
    Dwarf_Attribute a;
    Dwarf_Die def = *die;
    if (is_declaration(&def) &&
        (!dwarf_attr(&def, DW_AT_signature, &a) || !dwarf_formref_die(&a, &def)))
        return -1;
    if (!is_class_tag(dwarf_tag(&def)) || !is_definition(&def))
        return -1;
    *out = def;
    return 0;
}

/* A peeled class type that is a full definition (not declared only). */
static int member_class(Dwarf_Die *member, Dwarf_Die *cls)
{
    return peel_type(member, cls) == 0 && is_class_tag(dwarf_tag(cls)) && is_definition(cls) ? 0
                                                                                              : -1;
}

/* A constant attribute's value. libdw sign-extends data1..data4 in
 * dwarf_formsdata (an offset of 144 in data1 would read as -112), so only
 * the signed forms are read as signed. */
static int form_int(Dwarf_Attribute *a, Dwarf_Sword *v)
{
    unsigned int form = dwarf_whatform(a);
    if (form == DW_FORM_sdata || form == DW_FORM_implicit_const)
        return dwarf_formsdata(a, v);
    Dwarf_Word u;
    if (dwarf_formudata(a, &u) != 0 || u > INT64_MAX)
        return -1;
    *v = (Dwarf_Sword)u;
    return 0;
}

/* DW_AT_data_member_location: a constant (DWARF 3+), or a DWARF 2 location
 * expression of one DW_OP_plus_uconst. Union members have none: offset 0. */
static int member_location(Dwarf_Die *member, int in_union, Dwarf_Word *off)
{
    Dwarf_Attribute a;
    if (!dwarf_attr(member, DW_AT_data_member_location, &a)) {
        if (!in_union)
            return -1;
        *off = 0;
        return 0;
    }
    switch (dwarf_whatform(&a)) {
    case DW_FORM_data1: case DW_FORM_data2: case DW_FORM_data4: case DW_FORM_data8:
    case DW_FORM_udata: case DW_FORM_sdata: case DW_FORM_implicit_const: {
        Dwarf_Sword v;
        if (form_int(&a, &v) != 0 || v < 0)
            return -1;
        *off = (Dwarf_Word)v;
        return 0;
    }
    default: {
        Dwarf_Op *ops;
        size_t n;
        if (dwarf_getlocation(&a, &ops, &n) != 0 || n != 1 ||
            (ops[0].atom != DW_OP_plus_uconst && ops[0].atom != DW_OP_constu))
            return -1;
        *off = ops[0].number;
        return 0;
    }
    }
}

static int die_name_is(Dwarf_Die *die, const char *name)
{
    const char *n = dwarf_diename(die);
    return n && !strcmp(n, name);
}

/* Finds data member NAME of class CLS, searching its own members first and
 * then its bases (C++ name hiding), and adds its offset from the start of
 * CLS to *off. Bases contribute the offset of their inheritance DIE. */
static int find_member_in(Dwarf_Die *cls, const char *name, int depth, long *budget,
                          Dwarf_Die *member, Dwarf_Word *off)
{
    Dwarf_Die child;
    int in_union = dwarf_tag(cls) == DW_TAG_union_type;
    if (depth > BASE_DEPTH_MAX) {
        note_trouble("base classes nested more than %d deep at DIE 0x%llx (a cycle?)",
                     BASE_DEPTH_MAX, (unsigned long long)dwarf_dieoffset(cls));
        return -1;
    }
    if (child_of(cls, &child) != 0)
        return -1;
    int has_bases = 0;
    do {
        if (--*budget < 0) {
            note_trouble("more than %d DIEs visited looking for member %s", MEMBER_VISIT_MAX, name);
            return -1;
        }
        int tag = dwarf_tag(&child);
        if (tag == DW_TAG_inheritance)
            has_bases = 1;
        else if (tag == DW_TAG_member && die_name_is(&child, name)) {
            Dwarf_Word at;
            if (member_location(&child, in_union, &at) != 0)
                continue; /* a static member (DWARF 4) or a bit-field: not ours */
            *member = child;
            *off += at;
            return 0;
        }
    } while (next_sibling(&child) == 0);
    if (!has_bases || child_of(cls, &child) != 0)
        return -1;
    do {
        Dwarf_Die base;
        Dwarf_Word at, sub = 0;
        if (--*budget < 0) {
            note_trouble("more than %d DIEs visited looking for member %s", MEMBER_VISIT_MAX, name);
            return -1;
        }
        if (dwarf_tag(&child) != DW_TAG_inheritance || member_location(&child, 0, &at) != 0 ||
            member_class(&child, &base) != 0)
            continue;
        if (find_member_in(&base, name, depth + 1, budget, member, &sub) == 0) {
            *off += at + sub;
            return 0;
        }
    } while (next_sibling(&child) == 0);
    return -1;
}

/* Offset of member NAME (possibly inherited) in CLS; fits in int32_t. */
static int find_member(Dwarf_Die *cls, const char *name, Dwarf_Die *member, int32_t *out)
{
    long budget = MEMBER_VISIT_MAX;
    Dwarf_Word off = 0;
    Dwarf_Die m;
    if (find_member_in(cls, name, 0, &budget, &m, &off) != 0 || off > INT32_MAX)
        return -1;
    if (member)
        *member = m;
    *out = (int32_t)off;
    return 0;
}

static int byte_size(Dwarf_Die *die, int32_t *out)
{
    int n = dwarf_bytesize(die);
    if (n <= 0)
        return -1;
    *out = n;
    return 0;
}

/* A nested class definition named NAME directly inside CLS (Func::Body). */
static int nested_class(Dwarf_Die *cls, const char *name, Dwarf_Die *out)
{
    Dwarf_Die child;
    if (child_of(cls, &child) != 0)
        return -1;
    do {
        if (is_class_tag(dwarf_tag(&child)) && die_name_is(&child, name) &&
            class_definition(&child, out) == 0)
            return 0;
    } while (next_sibling(&child) == 0);
    return -1;
}

/* The definition of a template's type parameter NAME (vector's _Tp). */
static int template_type(Dwarf_Die *cls, const char *name, Dwarf_Die *out)
{
    Dwarf_Die child;
    if (child_of(cls, &child) != 0)
        return -1;
    do {
        if (dwarf_tag(&child) == DW_TAG_template_type_parameter && die_name_is(&child, name))
            return member_class(&child, out);
    } while (next_sibling(&child) == 0);
    return -1;
}

static int enumerator_value(Dwarf_Die *enum_type, const char *name, int32_t *out)
{
    Dwarf_Die child;
    if (child_of(enum_type, &child) != 0)
        return -1;
    do {
        Dwarf_Attribute a;
        Dwarf_Sword v;
        if (dwarf_tag(&child) == DW_TAG_enumerator && die_name_is(&child, name) &&
            dwarf_attr(&child, DW_AT_const_value, &a) && form_int(&a, &v) == 0 &&
            v >= INT32_MIN && v <= INT32_MAX) {
            *out = (int32_t)v;
            return 0;
        }
    } while (next_sibling(&child) == 0);
    return -1;
}

/* ---- per-class extraction: 0 when every member needed is there ---- */

static int need_member(Dwarf_Die *cls, const char *qname, const char *name, Dwarf_Die *member,
                       int32_t *out, miss *m)
{
    return find_member(cls, name, member, out) == 0 ? 0 : set_miss(m, "class", qname, name);
}

static int extract_obj(Dwarf_Die *cls, const char *qname, classes *c, miss *m)
{
    return need_member(cls, qname, "location", NULL, &c->obj.location, m);
}

static int extract_location(Dwarf_Die *cls, const char *qname, classes *c, miss *m)
{
    location_info *l = &c->location;
    return need_member(cls, qname, "filename", NULL, &l->filename, m) ||
                   need_member(cls, qname, "first_line", NULL, &l->first_line, m) ||
                   need_member(cls, qname, "last_line", NULL, &l->last_line, m)
               ? -1
               : 0;
}

/* Func::kind: its enum's size and the value of BUILTIN_FUNC. */
static int extract_func_kind(Dwarf_Die *cls, const char *qname, func_info *f, miss *m)
{
    Dwarf_Die member, type;
    char what[QNAME_MAX + 16];
    if (need_member(cls, qname, "kind", &member, &f->kind, m))
        return -1;
    snprintf(what, sizeof what, "%s::kind", qname);
    if (peel_type(&member, &type) != 0 || dwarf_tag(&type) != DW_TAG_enumeration_type ||
        byte_size(&type, &f->kind_size) != 0)
        return set_miss(m, "enum type of", what, "BUILTIN_FUNC");
    if (enumerator_value(&type, "BUILTIN_FUNC", &f->kind_builtin) != 0)
        return set_miss(m, "enum type of", what, "BUILTIN_FUNC");
    return 0;
}

/* Func::name, a libstdc++ C++11-ABI std::string: {_M_dataplus._M_p, _M_string_length}.
 * The old copy-on-write string keeps its length before the characters,
 * which the resolver cannot read: refused by the missing _M_string_length. */
static int extract_func_name(Dwarf_Die *cls, const char *qname, func_info *f, miss *m)
{
    Dwarf_Die member, str, hider;
    char what[QNAME_MAX + 32];
    int32_t plus = 0, p = 0;
    if (need_member(cls, qname, "name", &member, &f->name, m))
        return -1;
    snprintf(what, sizeof what, "std::string (%s::name)", qname);
    if (member_class(&member, &str) != 0)
        return set_miss(m, "class", what, "_M_dataplus");
    if (find_member(&str, "_M_dataplus", &hider, &plus) != 0 || member_class(&hider, &hider) != 0)
        return set_miss(m, "class", what, "_M_dataplus");
    if (find_member(&hider, "_M_p", NULL, &p) != 0)
        return set_miss(m, "class", what, "_M_dataplus._M_p");
    f->string_data = plus + p;
    if (find_member(&str, "_M_string_length", NULL, &f->string_size) != 0)
        return set_miss(m, "class", what, "_M_string_length");
    return 0;
}

/* Func::bodies, a libstdc++ std::vector: _M_impl (of _Vector_base) holds
 * _M_start and _M_finish (in _Vector_impl_data since GCC 9). Func::Body is
 * nested in Func, or else found as the vector's element type. */
static int extract_func_bodies(Dwarf_Die *cls, const char *qname, func_info *f, miss *m)
{
    Dwarf_Die member, vec, impl, body;
    char what[QNAME_MAX + 32];
    int32_t impl_off = 0, start = 0, finish = 0;
    if (need_member(cls, qname, "bodies", &member, &f->bodies, m))
        return -1;
    snprintf(what, sizeof what, "std::vector (%s::bodies)", qname);
    if (member_class(&member, &vec) != 0)
        return set_miss(m, "class", what, "_M_impl");
    if (find_member(&vec, "_M_impl", &impl, &impl_off) != 0 || member_class(&impl, &impl) != 0)
        return set_miss(m, "class", what, "_M_impl");
    if (find_member(&impl, "_M_start", NULL, &start) != 0)
        return set_miss(m, "class", what, "_M_impl._M_start");
    if (find_member(&impl, "_M_finish", NULL, &finish) != 0)
        return set_miss(m, "class", what, "_M_impl._M_finish");
    f->vector_begin = impl_off + start;
    f->vector_end = impl_off + finish;

    snprintf(what, sizeof what, "%s::Body", qname);
    if (nested_class(cls, "Body", &body) != 0 && template_type(&vec, "_Tp", &body) != 0)
        return set_miss(m, "class", what, "stmts");
    if (byte_size(&body, &f->body_size) != 0 ||
        find_member(&body, "stmts", NULL, &f->body_stmts) != 0)
        return set_miss(m, "class", what, "stmts");
    return 0;
}

static int extract_func(Dwarf_Die *cls, const char *qname, classes *c, miss *m)
{
    func_info *f = &c->func;
    return extract_func_bodies(cls, qname, f, m) || extract_func_kind(cls, qname, f, m) ||
                   extract_func_name(cls, qname, f, m)
               ? -1
               : 0;
}

static int extract_frame(Dwarf_Die *cls, const char *qname, classes *c, miss *m)
{
    frame_info *fr = &c->frame;
    if (need_member(cls, qname, "next_stmt", NULL, &fr->next_stmt, m))
        return -1;
    fr->has_function = find_member(cls, "function", NULL, &fr->function) == 0;
    return 0;
}

/* {call, func, args} up to Zeek 8.0, {call, frame} from 8.1 on. */
static int extract_callinfo(Dwarf_Die *cls, const char *qname, classes *c, miss *m)
{
    callinfo_info *ci = &c->callinfo;
    if (byte_size(cls, &ci->size) != 0 || need_member(cls, qname, "call", NULL, &ci->call, m))
        return set_miss(m, "class", qname, "call");
    ci->has_func = find_member(cls, "func", NULL, &ci->func) == 0;
    ci->has_frame = find_member(cls, "frame", NULL, &ci->frame) == 0;
    if (!ci->has_func && !ci->has_frame)
        return set_miss(m, "class", qname, "func or frame");
    return 0;
}

static const target targets[T_COUNT] = {
    [T_OBJ] = {{"zeek::Obj", "BroObj"}, "location", extract_obj},
    [T_LOCATION] = {{"zeek::detail::Location", "Location"}, "filename", extract_location},
    [T_FUNC] = {{"zeek::Func", "Func"}, "bodies", extract_func},
    [T_FRAME] = {{"zeek::detail::Frame", "Frame"}, "next_stmt", extract_frame},
    [T_CALLINFO] = {{"zeek::detail::CallInfo", "CallInfo"}, "call", extract_callinfo},
};

/* ---- the scan ---- */

/* Whether namespace QNAME can hold a wanted class. */
static int namespace_wanted(const char *qname)
{
    size_t n = strlen(qname);
    for (int t = 0; t < T_COUNT; t++)
        for (int v = 0; v < V_COUNT; v++)
            if (!strncmp(targets[t].names[v], qname, n) &&
                !strncmp(targets[t].names[v] + n, "::", 2))
                return 1;
    return 0;
}

static int find_target(const char *qname, int *variant)
{
    for (int t = 0; t < T_COUNT; t++)
        for (int v = 0; v < V_COUNT; v++)
            if (!strcmp(targets[t].names[v], qname)) {
                *variant = v;
                return t;
            }
    return -1;
}

static void remember_decl(scan *s, Dwarf_Die *die, const char *qname)
{
    int v, t = find_target(qname, &v);
    if (t >= 0 && s->ndecls < DECL_MAX)
        s->decls[s->ndecls++] = (decl){dwarf_dieoffset(die), t, v};
}

/* The qualified name of a definition that completes an earlier declaration. */
static const char *specified_name(const scan *s, Dwarf_Attribute *spec)
{
    Dwarf_Die d;
    if (!dwarf_formref_die(spec, &d))
        return NULL;
    Dwarf_Off off = dwarf_dieoffset(&d);
    for (int i = 0; i < s->ndecls; i++)
        if (s->decls[i].offset == off)
            return targets[s->decls[i].target].names[s->decls[i].variant];
    return NULL;
}

static void consider_class(scan *s, Dwarf_Die *cls, const char *qname)
{
    for (int t = 0; t < T_COUNT; t++) {
        for (int v = 0; v < V_COUNT; v++) {
            if (s->found[t][v] || s->missed[t][v] >= ATTEMPTS_MAX ||
                strcmp(targets[t].names[v], qname))
                continue;
            miss m;
            if (targets[t].extract(cls, qname, &s->found_in[v], &m) == 0)
                s->found[t][v] = 1;
            else if (!s->missed[t][v]++)
                s->why[t][v] = m;
        }
    }
    int all = 1;
    for (int t = 0; t < T_COUNT; t++)
        all &= s->found[t][s->prefer];
    s->done = all;
}

/* Walks the children of a unit or namespace DIE whose qualified name is
 * SCOPE ("" at the top), descending only into wanted namespaces. */
/* Whether the walk may go on: within its DIE and time budgets, and no sign
 * of malformed DWARF so far. */
static int walk_on(scan *s)
{
    if (trouble[0])
        return 0;
    if (++s->dies > SCAN_DIES_MAX) {
        note_trouble("more than %d DIEs without finding Zeek's classes", SCAN_DIES_MAX);
        return 0;
    }
    if (s->dies % CLOCK_EVERY == 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > s->deadline.tv_sec) {
            note_trouble("the scan took more than %d s", SCAN_SECONDS_MAX);
            return 0;
        }
    }
    return 1;
}

static void walk_scope(scan *s, Dwarf_Die *parent, const char *scope, int depth)
{
    Dwarf_Die child;
    if (depth > SCOPE_DEPTH_MAX || child_of(parent, &child) != 0)
        return;
    do {
        if (!walk_on(s))
            return;
        int tag = dwarf_tag(&child);
        if (tag != DW_TAG_namespace && tag != DW_TAG_class_type && tag != DW_TAG_structure_type)
            continue;
        const char *name = dwarf_diename(&child);
        char qname[QNAME_MAX];
        if (!name || snprintf(qname, sizeof qname, "%s%s%s", scope, *scope ? "::" : "", name) >=
                         (int)sizeof qname)
            continue;
        Dwarf_Attribute spec;
        if (tag == DW_TAG_namespace) {
            if (namespace_wanted(qname))
                walk_scope(s, &child, qname, depth + 1);
        } else if (is_declaration(&child)) {
            remember_decl(s, &child, qname);
        } else if (!dwarf_haschildren(&child)) {
            continue;
        } else if (dwarf_attr(&child, DW_AT_specification, &spec)) {
            const char *specified = specified_name(s, &spec);
            if (specified)
                consider_class(s, &child, specified);
        } else {
            consider_class(s, &child, qname);
        }
    } while (!s->done && next_sibling(&child) == 0);
}

/* The bytes of .debug_info as libdw sees them (decompressed), or 0. */
static uint64_t info_size(Dwarf *dw)
{
    Elf *elf = dwarf_getelf(dw);
    size_t shstrndx;
    if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
        return 0;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        const char *name;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
            !(name = elf_strptr(elf, shstrndx, sh.sh_name)) || strcmp(name, ".debug_info"))
            continue;
        if (!(sh.sh_flags & SHF_COMPRESSED))
            return sh.sh_size;
        GElf_Chdr ch;
        return gelf_getchdr(scn, &ch) ? ch.ch_size : 0;
    }
    return 0;
}

/* Every unit header, before any DIE is trusted: a unit whose length runs
 * past the section (a cut file) makes the whole section suspect, even when
 * the classes sought come before the cut. */
static void check_units(Dwarf *dw)
{
    uint64_t size = info_size(dw), off = 0, next;
    size_t header;
    if (!size)
        return;
    int rc;
    while ((rc = dwarf_next_unit(dw, off, &next, &header, NULL, NULL, NULL, NULL, NULL, NULL)) == 0) {
        if (next > size || next <= off) {
            note_trouble("the unit at 0x%llx runs past the end of .debug_info (0x%llx bytes)",
                         (unsigned long long)off, (unsigned long long)size);
            return;
        }
        off = next;
    }
    if (rc < 0)
        note_trouble("unreadable unit header at 0x%llx: %s", (unsigned long long)off,
                     dwarf_errmsg(-1));
}

static void scan_units(scan *s, Dwarf *dw)
{
    Dwarf_CU *cu = NULL;
    Dwarf_Half version;
    uint8_t unit_type;
    Dwarf_Die cudie, subdie;
    int rc = 0;
    while (!s->done && !trouble[0] &&
           (rc = dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, &subdie)) == 0) {
        s->ndecls = 0;
        if (dwarf_tag(&cudie) == DW_TAG_invalid) {
            note_trouble("unit at 0x%llx has no readable DIE: %s",
                         (unsigned long long)dwarf_dieoffset(&cudie), dwarf_errmsg(-1));
            return;
        }
        /* A skeleton's types are in its split unit (-gsplit-dwarf). */
        if (unit_type == DW_UT_skeleton) {
            if (dwarf_cu_info(cu, NULL, NULL, NULL, &subdie, NULL, NULL, NULL) == 0 &&
                dwarf_tag(&subdie) == DW_TAG_compile_unit)
                walk_scope(s, &subdie, "", 0);
            continue;
        }
        if (dwarf_tag(&cudie) == DW_TAG_compile_unit || dwarf_tag(&cudie) == DW_TAG_partial_unit ||
            dwarf_tag(&cudie) == DW_TAG_type_unit)
            walk_scope(s, &cudie, "", 0);
    }
    if (!s->done && !trouble[0] && rc < 0)
        note_trouble("unreadable unit header: %s", dwarf_errmsg(-1));
}

/* ---- finding the debug info ---- */

typedef struct debug_file {
    int fd, own_fd; /* own_fd: opened here, closed here */
    Elf *elf;
    Dwarf *dw;
    char path[PATH_MAX];
} debug_file;

static void debug_file_close(debug_file *d)
{
    if (d->dw)
        dwarf_end(d->dw);
    if (d->elf)
        elf_end(d->elf);
    if (d->fd >= 0 && d->own_fd)
        close(d->fd);
    d->dw = NULL;
    d->elf = NULL;
    d->fd = -1;
}

static int has_section(Elf *elf, const char *want)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return 0;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        const char *name;
        if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
            (name = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(name, want))
            return 1;
    }
    return 0;
}

static void build_id_hex(Elf *elf, char *hex, size_t size)
{
    const void *id;
    ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
    zs_hex(hex, size, id, n > 0 ? (size_t)n : 0);
}

/* Opens absolute PATH, inside the directory tree ROOT_FD when it is not -1
 * (a container's root: its symlinks resolve in there, as they would for
 * the process, and never out of it). */
static int open_in(int root_fd, const char *path)
{
    if (root_fd < 0)
        return open(path, O_RDONLY | O_CLOEXEC);
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS) /* before Linux 5.6 */
        fd = openat(root_fd, path + (*path == '/'), O_RDONLY | O_CLOEXEC);
    return fd;
}

/* Opens PATH (in ROOT_FD, see open_in) and keeps it when it has .debug_info
 * (and, when WANT_ID is not empty, that build-id). 0 on success. */
static int try_open(int root_fd, const char *path, const char *shown, const char *want_id,
                    debug_file *d)
{
    d->fd = open_in(root_fd, path);
    d->own_fd = 1;
    if (d->fd < 0)
        return -1;
    if (zs_elf_begin(d->fd, shown, &d->elf, NULL) == 0 && has_section(d->elf, ".debug_info")) {
        char id[81];
        build_id_hex(d->elf, id, sizeof id);
        if ((!*want_id || !*id || !strcmp(id, want_id)) &&
            (d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL))) {
            snprintf(d->path, sizeof d->path, "%s", shown);
            return 0;
        }
    }
    debug_file_close(d);
    return -1;
}

static int valid_build_id(const char *id)
{
    size_t n = strlen(id);
    if (n < 4 || n > 80 || n % 2)
        return 0;
    return strspn(id, "0123456789abcdef") == n;
}

/* .gnu_debuglink: next to the executable, in .debug/ there, or mirrored
 * under /usr/lib/debug. The CRC is not checked; the build-id is when both
 * files carry one. */
static int try_debuglink(Elf *elf, const zs_dwarf_source *src, const char *want_id, debug_file *d)
{
    GElf_Word crc;
    const char *link = dwelf_elf_gnu_debuglink(elf, &crc);
    char real[PATH_MAX], path[PATH_MAX];
    if (!link || !*link || strchr(link, '/'))
        return -1;
    if (src->real_path)
        snprintf(real, sizeof real, "%s", src->real_path);
    else if (!realpath(src->name, real))
        return -1;
    const char *dir = dirname(real);
    static const char *const fmts[] = {"%s/%s", "%s/.debug/%s", DEBUG_DIR "%s/%s"};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        if (snprintf(path, sizeof path, fmts[i], dir, link) < (int)sizeof path &&
            try_open(-1, path, path, want_id, d) == 0)
            return 0;
    }
    return -1;
}

/* The executable itself, else /usr/lib/debug/.build-id/xx/yyyy.debug (in
 * the process's root first, then the host's), else its debuglink.
 * BUILD_ID may be "" (then the ELF note is used). */
static int open_debug(const zs_dwarf_source *src, const char *build_id, debug_file *d,
                      zs_error *err)
{
    debug_file exe = {.fd = src->fd};
    const char *exe_path = src->name;
    char id[81], by_id[sizeof DEBUG_DIR + 100] = "";
    if (zs_elf_begin(exe.fd, exe_path, &exe.elf, err))
        return -1;
    if (has_section(exe.elf, ".debug_info") &&
        (exe.dw = dwarf_begin_elf(exe.elf, DWARF_C_READ, NULL))) {
        snprintf(exe.path, sizeof exe.path, "%s", exe_path);
        *d = exe;
        return 0;
    }
    if (has_section(exe.elf, ".debug_info")) {
        zs_fail(err, ZS_E_EXE_REFUSED, "%s: malformed DWARF (%s); refused", exe_path,
                dwarf_errmsg(-1));
        debug_file_close(&exe);
        return -1;
    }

    snprintf(id, sizeof id, "%s", build_id ? build_id : "");
    if (!*id)
        build_id_hex(exe.elf, id, sizeof id);
    if (valid_build_id(id) && !src->own_only) {
        snprintf(by_id, sizeof by_id, DEBUG_DIR "/.build-id/%.2s/%s.debug", id, id + 2);
        /* A zeek in a container keeps its debug files in its own file
         * system: its root first, then the host's. */
        char shown[PATH_MAX + sizeof by_id];
        snprintf(shown, sizeof shown, "%s (in the process's root)", by_id);
        if ((src->root_fd >= 0 && try_open(src->root_fd, by_id, shown, id, d) == 0) ||
            try_open(-1, by_id, by_id, id, d) == 0) {
            debug_file_close(&exe);
            return 0;
        }
    }
    if (!src->own_only &&
        try_debuglink(exe.elf, src, valid_build_id(id) ? id : "", d) == 0) {
        debug_file_close(&exe);
        return 0;
    }
    debug_file_close(&exe);
    if (*by_id)
        return zs_fail(err, ZS_E_LAYOUT,
                       "%s: no DWARF debug info (none in the executable, none at %s); install "
                       "its debug symbols or pass --layout FILE",
                       exe_path, by_id);
    return zs_fail(err, ZS_E_LAYOUT,
                   "%s: no DWARF debug info (none in the executable, and no build-id to find a "
                   "separate debug file); pass --layout FILE",
                   exe_path);
}

/* ---- assembling the layout ---- */

enum {
    S_CALL_STACK, S_CALL_STACK_NS, S_FRAME_STACK, S_NETWORK_TIME, S_NETWORK_TIME_NS, S_COUNT
};

static int major_version(const char *v)
{
    return v && *v >= '0' && *v <= '9' ? atoi(v) : -1;
}

static int fill_layout(const scan *s, const int *variant, const zs_elf_symbol *sym,
                       const char *exe_path, zs_layout *out, zs_error *err)
{
    const classes *c_obj = &s->found_in[variant[T_OBJ]];
    const classes *c_loc = &s->found_in[variant[T_LOCATION]];
    const classes *c_func = &s->found_in[variant[T_FUNC]];
    const frame_info *fr = &s->found_in[variant[T_FRAME]].frame;
    const callinfo_info *ci = &s->found_in[variant[T_CALLINFO]].callinfo;
    const char *ci_name = targets[T_CALLINFO].names[variant[T_CALLINFO]];
    int has_frame_stack = sym[S_FRAME_STACK].found;

    memset(out, 0, sizeof *out);
    /* The model: what CallInfo points at, confirmed by g_frame_stack, which
     * exists exactly as long as CallInfo holds the Func (until 8.0). */
    if (ci->has_frame && (!ci->has_func || !has_frame_stack)) {
        if (has_frame_stack)
            return zs_fail(err, ZS_E_LAYOUT,
                           "%s: DWARF's %s has member frame (Zeek 8.1+) but the executable still "
                           "has g_frame_stack; pass --layout FILE",
                           exe_path, ci_name);
        if (!fr->has_function)
            return zs_fail(err, ZS_E_LAYOUT,
                           "%s: DWARF has no class %s with member function; pass --layout FILE",
                           exe_path, targets[T_FRAME].names[variant[T_FRAME]]);
        out->model = ZS_MODEL_CALLINFO_FRAME;
        out->callinfo_frame = ci->frame;
        out->frame_function = fr->function;
    } else {
        if (!has_frame_stack)
            return zs_fail(err, ZS_E_LAYOUT,
                           "%s: DWARF's %s has member func (Zeek up to 8.0) but the executable "
                           "has no g_frame_stack symbol; pass --layout FILE",
                           exe_path, ci_name);
        out->model = ZS_MODEL_FRAME_STACK;
        out->callinfo_func = ci->func;
        snprintf(out->sym_frame_stack, sizeof out->sym_frame_stack, "g_frame_stack");
    }
    out->callinfo_size = ci->size;
    out->callinfo_call = ci->call;
    out->frame_next_stmt = fr->next_stmt;

    int global = variant[T_FUNC] == V_GLOBAL;
    snprintf(out->sym_version, sizeof out->sym_version, "version");
    snprintf(out->sym_call_stack, sizeof out->sym_call_stack, "%s",
             sym[S_CALL_STACK].found ? sym[S_CALL_STACK].name : sym[S_CALL_STACK_NS].name);
    snprintf(out->sym_network_time, sizeof out->sym_network_time, "%s",
             sym[S_NETWORK_TIME_NS].found ? sym[S_NETWORK_TIME_NS].name
             : sym[S_NETWORK_TIME].found || global ? sym[S_NETWORK_TIME].name
                                                   : sym[S_NETWORK_TIME_NS].name);

    out->obj_location = c_obj->obj.location;
    out->location_filename = c_loc->location.filename;
    out->location_first_line = c_loc->location.first_line;
    out->location_last_line = c_loc->location.last_line;

    const func_info *f = &c_func->func;
    out->func_kind = f->kind;
    out->func_kind_size = f->kind_size;
    out->func_kind_builtin = f->kind_builtin;
    out->func_name = f->name;
    out->func_bodies = f->bodies;
    out->body_size = f->body_size;
    out->body_stmts = f->body_stmts;
    out->vector_begin = f->vector_begin;
    out->vector_end = f->vector_end;
    out->string_data = f->string_data;
    out->string_size = f->string_size;
    return 0;
}

/* Walks the units of dw (and of its dwz supplementary file) for the classes
 * a layout needs, under both name variants, preferring the one the symbols
 * and the version say. NULL on no memory. alt_note is filled when the
 * supplementary file is named but missing, for the error that follows. */
static scan *scan_dwarf(Dwarf *dw, const zs_elf_symbol *sym, const char *zeek_version,
                        char *alt_note, size_t n)
{
    scan *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    /* The symbols say which names to expect; the version string decides
     * when neither call_stack symbol is there. */
    int major = major_version(zeek_version);
    clock_gettime(CLOCK_MONOTONIC, &s->deadline);
    s->deadline.tv_sec += SCAN_SECONDS_MAX;
    s->prefer = sym[S_CALL_STACK_NS].found                 ? V_NAMESPACED
              : sym[S_CALL_STACK].found || (major >= 0 && major < 4) ? V_GLOBAL
                                                           : V_NAMESPACED;
    check_units(dw);
    scan_units(s, dw);
    /* dwz moves shared types into a supplementary file (.gnu_debugaltlink). */
    Dwarf *alt = s->done ? NULL : dwarf_getalt(dw);
    if (alt)
        scan_units(s, alt);
    const char *alt_name = NULL;
    const void *alt_id;
    alt_note[0] = '\0';
    if (!s->done && !alt && dwelf_dwarf_gnu_debugaltlink(dw, &alt_name, &alt_id) > 0 && alt_name)
        snprintf(alt_note, n, " (its dwz supplementary file %s was not found)", alt_name);
    return s;
}

/* Which name variant each class is taken from: the preferred one where it
 * was found, else the other. When a class was found under neither, the
 * error names what was missing where (where: the debug file, NULL when it
 * is the executable). */
static int choose_variants(const scan *s, const char *exe_path, const char *where,
                           const char *alt_note, int *variant, zs_error *err)
{
    /* Malformed DWARF refuses the executable, whatever was found before. */
    if (trouble[0])
        return zs_fail(err, ZS_E_EXE_REFUSED, "%s: malformed DWARF%s%s (%s); refused", exe_path,
                       where ? " in " : "", where ? where : "", trouble);
    for (int t = 0; t < T_COUNT; t++) {
        int other = !s->prefer;
        if (s->found[t][s->prefer] || s->found[t][other]) {
            variant[t] = s->found[t][s->prefer] ? s->prefer : other;
            continue;
        }
        int v = s->missed[t][s->prefer] || !s->missed[t][other] ? s->prefer : other;
        char what[QNAME_MAX + 64], member[64];
        if (s->missed[t][v]) {
            snprintf(what, sizeof what, "%s", s->why[t][v].what);
            snprintf(member, sizeof member, "%s", s->why[t][v].member);
        } else {
            snprintf(what, sizeof what, "class %s", targets[t].names[v]);
            snprintf(member, sizeof member, "%s", targets[t].first_member);
        }
        return zs_fail(err, ZS_E_LAYOUT,
                       "%s: DWARF%s%s%s has no %s with member %s; pass --layout FILE", exe_path,
                       where ? " in " : "", where ? where : "", alt_note, what, member);
    }
    return 0;
}

int zs_dwarf_layout_from(const zs_dwarf_source *src, const char *build_id,
                         const char *zeek_version, zs_layout *out, zs_error *err)
{
    const char *exe_path = src->name;
    zs_elf_symbol sym[S_COUNT] = {
        [S_CALL_STACK] = {"call_stack"},
        [S_CALL_STACK_NS] = {"_ZN4zeek6detail10call_stackE"},
        [S_FRAME_STACK] = {"g_frame_stack"},
        [S_NETWORK_TIME] = {"network_time"},
        [S_NETWORK_TIME_NS] = {"_ZN4zeek9run_state12network_timeE"},
    };
    zs_elf_info info;
    if (zs_elf_lookup_fd(src->fd, exe_path, sym, S_COUNT, &info, err))
        return -1;

    debug_file d = {.fd = -1};
    trouble[0] = '\0';
    if (open_debug(src, build_id && *build_id ? build_id : info.build_id, &d, err))
        return -1;
    char alt_note[PATH_MAX + 64];
    scan *s = scan_dwarf(d.dw, sym, zeek_version, alt_note, sizeof alt_note);
    if (!s) {
        debug_file_close(&d);
        return zs_fail(err, ZS_E_NOMEM, "%s: DWARF scan", exe_path);
    }
    int variant[T_COUNT];
    const char *where = strcmp(d.path, exe_path) ? d.path : NULL;
    int rc = choose_variants(s, exe_path, where, alt_note, variant, err);
    if (!rc)
        rc = fill_layout(s, variant, sym, exe_path, out, err);
    free(s);
    debug_file_close(&d);
    if (rc)
        return rc;
    return zs_layout_check(out, exe_path, err);
}

int zs_dwarf_layout(const char *exe_path, const char *build_id, const char *zeek_version,
                    zs_layout *out, zs_error *err)
{
    zs_dwarf_source src = {.fd = -1, .name = exe_path, .root_fd = -1};
    src.fd = open(exe_path, O_RDONLY | O_CLOEXEC);
    if (src.fd < 0)
        return zs_fail(err, errno == EACCES ? ZS_E_PERMISSION : ZS_E_IO, "%s: %s", exe_path,
                       strerror(errno));
    /* /proc/PID/exe: the process's root holds its debug files. */
    int pid = 0, end = 0;
    if (sscanf(exe_path, "/proc/%d/exe%n", &pid, &end) == 1 && exe_path[end] == '\0') {
        char root[64];
        snprintf(root, sizeof root, "/proc/%d/root", pid);
        src.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    int rc = zs_dwarf_layout_from(&src, build_id, zeek_version, out, err);
    if (src.root_fd >= 0)
        close(src.root_fd);
    close(src.fd);
    return rc;
}
