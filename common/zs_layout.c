/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_layout.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest offset any sane build could have: Zeek's biggest object the
 * profiler reads (Frame) is a few hundred bytes. */
enum { OFFSET_MAX = 4096 };

typedef enum { F_INT, F_SYMBOL, F_MODEL } field_type;

typedef struct field {
    const char *key;
    size_t offset;
    field_type type;
    int group; /* 0: required; else an optional group, all of its keys or none */
} field;

#define INT_FIELD(name) {#name, offsetof(zs_layout, name), F_INT, 0}
#define SYM_FIELD(name) {#name, offsetof(zs_layout, name), F_SYMBOL, 0}
enum { G_ZAM = 1, G_ZAM_COALESCED, G_ZAM_SCOPE, G_PKTSRC, G_PKTSRC_LIST, G_PKTSRC_PCAP, G_PKTSRC_AF, G_COUNT };
#define ZAM_FIELD(key, member, type, group) {key, offsetof(zs_layout, zam.member), type, group}
#define PKTSRC_FIELD(key, member, type, group) {key, offsetof(zs_layout, pktsrc.member), type, group}
/* A group's parent: its keys are only given with the parent's. */
static const int group_parent[G_COUNT] = {[G_ZAM_COALESCED] = G_ZAM, [G_ZAM_SCOPE] = G_ZAM,
                                          [G_PKTSRC_LIST] = G_PKTSRC, [G_PKTSRC_PCAP] = G_PKTSRC,
                                          [G_PKTSRC_AF] = G_PKTSRC};

static const field fields[] = {
    {"model", offsetof(zs_layout, model), F_MODEL},
    SYM_FIELD(sym_call_stack),
    SYM_FIELD(sym_frame_stack),
    SYM_FIELD(sym_version),
    SYM_FIELD(sym_network_time),
    INT_FIELD(callinfo_size),
    INT_FIELD(callinfo_call),
    INT_FIELD(callinfo_func),
    INT_FIELD(callinfo_frame),
    INT_FIELD(frame_next_stmt),
    INT_FIELD(frame_function),
    INT_FIELD(obj_location),
    INT_FIELD(location_filename),
    INT_FIELD(location_first_line),
    INT_FIELD(location_last_line),
    INT_FIELD(func_kind),
    INT_FIELD(func_kind_size),
    INT_FIELD(func_kind_builtin),
    INT_FIELD(func_name),
    INT_FIELD(func_bodies),
    INT_FIELD(body_size),
    INT_FIELD(body_stmts),
    INT_FIELD(vector_begin),
    INT_FIELD(vector_end),
    INT_FIELD(string_data),
    INT_FIELD(string_size),
    ZAM_FIELD("sym_zam_body_vtable", sym_body_vtable, F_SYMBOL, G_ZAM),
    ZAM_FIELD("sym_zam_body_exec", sym_body_exec, F_SYMBOL, G_ZAM),
    ZAM_FIELD("zam_body_insts", body_insts, F_INT, G_ZAM),
    ZAM_FIELD("zam_body_end_pc", body_end_pc, F_INT, G_ZAM),
    ZAM_FIELD("zam_inst_size", inst_size, F_INT, G_ZAM),
    ZAM_FIELD("zam_inst_loc", inst_loc, F_INT, G_ZAM),
    ZAM_FIELD("zam_locinfo_func_name", locinfo_func_name, F_INT, G_ZAM),
    ZAM_FIELD("zam_locinfo_loc", locinfo_loc, F_INT, G_ZAM),
    ZAM_FIELD("zam_locinfo_parent", locinfo_parent, F_INT, G_ZAM),
    ZAM_FIELD("sym_zam_coalesced_vtable", sym_coalesced_vtable, F_SYMBOL, G_ZAM_COALESCED),
    ZAM_FIELD("zam_coalesced_orig_func", coalesced_orig_func, F_INT, G_ZAM_COALESCED),
    ZAM_FIELD("sym_zam_scopes", sym_scopes, F_SYMBOL, G_ZAM_SCOPE),
    ZAM_FIELD("sym_zam_global_scope", sym_global_scope, F_SYMBOL, G_ZAM_SCOPE),
    ZAM_FIELD("sym_zam_funcval_vtable", sym_funcval_vtable, F_SYMBOL, G_ZAM_SCOPE),
    ZAM_FIELD("zam_scope_ordered_vars", scope_ordered_vars, F_INT, G_ZAM_SCOPE),
    ZAM_FIELD("zam_id_name", id_name, F_INT, G_ZAM_SCOPE),
    ZAM_FIELD("zam_id_val", id_val, F_INT, G_ZAM_SCOPE),
    ZAM_FIELD("zam_funcval_func", funcval_func, F_INT, G_ZAM_SCOPE),
    PKTSRC_FIELD("sym_pktsrc_iosource_mgr", sym_iosource_mgr, F_SYMBOL, G_PKTSRC),
    PKTSRC_FIELD("pktsrc_mgr_pkt_src", mgr_pkt_src, F_INT, G_PKTSRC),
    /* Optional (0 without it): only 3.0's manager keeps a list. */
    PKTSRC_FIELD("pktsrc_mgr_list", mgr_list, F_INT, G_PKTSRC_LIST),
    PKTSRC_FIELD("sym_pktsrc_pcap_vtable", sym_pcap_vtable, F_SYMBOL, G_PKTSRC_PCAP),
    PKTSRC_FIELD("pktsrc_pcap_stats", pcap_stats, F_INT, G_PKTSRC_PCAP),
    PKTSRC_FIELD("pktsrc_pcap_is_live", pcap_is_live, F_INT, G_PKTSRC_PCAP),
    PKTSRC_FIELD("sym_pktsrc_af_packet_vtable", sym_af_packet_vtable, F_SYMBOL, G_PKTSRC_AF),
    PKTSRC_FIELD("pktsrc_af_packet_stats", af_packet_stats, F_INT, G_PKTSRC_AF),
    PKTSRC_FIELD("pktsrc_af_packet_is_live", af_packet_is_live, F_INT, G_PKTSRC_AF),
};
enum { FIELD_COUNT = sizeof fields / sizeof fields[0] };

/* What each model's layout must hold beyond the members every model reads. */
static const zs_model_info models[] = {
    {ZS_MODEL_FRAME_STACK, "frame-stack", offsetof(zs_layout, sym_frame_stack),
     offsetof(zs_layout, callinfo_func)},
    {ZS_MODEL_CALLINFO_FRAME, "callinfo-frame", 0, offsetof(zs_layout, callinfo_frame)},
};

const zs_model_info *zs_model_find(zs_model m)
{
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (models[i].id == m)
            return &models[i];
    return NULL;
}

const char *zs_model_name(zs_model m)
{
    const zs_model_info *info = zs_model_find(m);
    return info ? info->name : "unknown";
}

static int model_from_name(const char *s, zs_model *m)
{
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (!strcmp(s, models[i].name)) {
            *m = models[i].id;
            return 0;
        }
    return -1;
}

static const field *find_field(const char *key)
{
    for (size_t i = 0; i < FIELD_COUNT; i++)
        if (!strcmp(fields[i].key, key))
            return &fields[i];
    return NULL;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

static int parse_line(char *line, const char *source, int lineno, zs_layout *out,
                      unsigned char *seen, zs_error *err)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return zs_fail(err, ZS_E_LAYOUT, "%s:%d: expected 'key = value'", source, lineno);
    *eq = '\0';
    char *key = trim(line), *value = trim(eq + 1);
    const field *f = find_field(key);
    if (!f)
        return zs_fail(err, ZS_E_LAYOUT, "%s:%d: unknown key '%s'", source, lineno, key);
    size_t idx = (size_t)(f - fields);
    if (seen[idx])
        return zs_fail(err, ZS_E_LAYOUT, "%s:%d: key '%s' given twice", source, lineno, key);
    seen[idx] = 1;
    char *base = (char *)out + f->offset;
    switch (f->type) {
    case F_MODEL:
        if (model_from_name(value, (zs_model *)base))
            return zs_fail(err, ZS_E_LAYOUT,
                           "%s:%d: unknown model '%s' (expected frame-stack or callinfo-frame)",
                           source, lineno, value);
        break;
    case F_SYMBOL:
        if (!strcmp(value, "-"))
            value = "";
        if (strlen(value) >= ZS_SYMBOL_MAX)
            return zs_fail(err, ZS_E_LAYOUT, "%s:%d: symbol for '%s' too long", source, lineno, key);
        strcpy(base, value);
        break;
    case F_INT: {
        char *end;
        errno = 0;
        long v = strtol(value, &end, 0);
        if (errno || end == value || *end)
            return zs_fail(err, ZS_E_LAYOUT, "%s:%d: '%s' is not a number for '%s'", source,
                           lineno, value, key);
        if (v < 0 || v > OFFSET_MAX)
            return zs_fail(err, ZS_E_LAYOUT, "%s:%d: %s = %ld is out of range (0..%d)", source,
                           lineno, key, v, OFFSET_MAX);
        *(int32_t *)base = (int32_t)v;
        break;
    }
    }
    return 0;
}

int zs_layout_parse(const char *text, size_t len, const char *source, zs_layout *out,
                    zs_error *err)
{
    unsigned char seen[FIELD_COUNT] = {0};
    memset(out, 0, sizeof *out);
    char *copy = malloc(len + 1);
    if (!copy)
        return zs_fail(err, ZS_E_NOMEM, "%s: layout text", source);
    memcpy(copy, text, len);
    copy[len] = '\0';
    if (memchr(copy, '\0', len)) {
        free(copy);
        return zs_fail(err, ZS_E_LAYOUT, "%s: contains a NUL byte", source);
    }

    int rc = 0, lineno = 0;
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        if (!*trim(line))
            continue;
        if ((rc = parse_line(line, source, lineno, out, seen, err)))
            break;
    }
    free(copy);
    if (rc)
        return rc;
    size_t group_seen[G_COUNT] = {0};
    for (size_t i = 0; i < FIELD_COUNT; i++)
        group_seen[fields[i].group] += seen[i];
    for (size_t i = 0; i < FIELD_COUNT; i++) {
        int group = fields[i].group;
        const char *family = group >= G_PKTSRC ? "pktsrc_" : "zam_";
        if (!seen[i] && (!group || group_seen[group]))
            return zs_fail(err, ZS_E_LAYOUT, "%s: missing key '%s'%s%s%s", source, fields[i].key,
                           group ? " (these " : "", group ? family : "", group ? " keys go all together)" : "");
        if (seen[i] && group_parent[group] && !group_seen[group_parent[group]])
            return zs_fail(err, ZS_E_LAYOUT, "%s: key '%s' without the other %s keys", source,
                           fields[i].key, family);
    }
    return zs_layout_check(out, source, err);
}

int zs_layout_load(const char *path, zs_layout *out, zs_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return zs_fail(err, ZS_E_LAYOUT, "%s: %s", path, strerror(errno));
    char buf[16384];
    size_t n = fread(buf, 1, sizeof buf, f);
    int toolong = !feof(f);
    fclose(f);
    if (toolong)
        return zs_fail(err, ZS_E_LAYOUT, "%s: too large for a layout file", path);
    return zs_layout_parse(buf, n, path, out, err);
}

char *zs_layout_format(const zs_layout *l)
{
    size_t cap = 4096;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    size_t n = (size_t)snprintf(s, cap, "# zeek-spy layout (key = value; offsets in bytes)\n");
    for (size_t i = 0; i < FIELD_COUNT && n < cap; i++) {
        const char *base = (const char *)l + fields[i].offset;
        int g = fields[i].group;
        if ((g && g < G_PKTSRC && !zs_layout_has_zam(l)) ||
            (g == G_ZAM_SCOPE && !zs_layout_has_zam_scope(l)) ||
            (g == G_ZAM_COALESCED && !l->zam.sym_coalesced_vtable[0]) ||
            (g >= G_PKTSRC && !zs_layout_has_pktsrc(l)) ||
            (g == G_PKTSRC_LIST && !l->pktsrc.mgr_list) ||
            (g == G_PKTSRC_PCAP && !l->pktsrc.sym_pcap_vtable[0]) ||
            (g == G_PKTSRC_AF && !l->pktsrc.sym_af_packet_vtable[0]))
            continue;
        switch (fields[i].type) {
        case F_MODEL:
            n += (size_t)snprintf(s + n, cap - n, "%s = %s\n", fields[i].key,
                                  zs_model_name(*(const zs_model *)base));
            break;
        case F_SYMBOL:
            n += (size_t)snprintf(s + n, cap - n, "%s = %s\n", fields[i].key, *base ? base : "-");
            break;
        case F_INT:
            n += (size_t)snprintf(s + n, cap - n, "%s = %d\n", fields[i].key,
                                  *(const int32_t *)base);
            break;
        }
    }
    return s;
}

static int member_fits(int32_t off, int32_t width, int32_t size)
{
    return off >= 0 && width > 0 && off + width <= size;
}

int zs_layout_check(const zs_layout *l, const char *source, zs_error *err)
{
    const zs_model_info *model = zs_model_find(l->model);
    if (!model)
        return zs_fail(err, ZS_E_LAYOUT, "%s: unknown model", source);
    if (!l->sym_call_stack[0] || !l->sym_version[0])
        return zs_fail(err, ZS_E_LAYOUT, "%s: sym_call_stack and sym_version are required", source);
    if (model->stack_symbol && !((const char *)l + model->stack_symbol)[0])
        return zs_fail(err, ZS_E_LAYOUT, "%s: the %s model needs sym_frame_stack", source, model->name);
    if (l->callinfo_size < 8 || l->callinfo_size > 256)
        return zs_fail(err, ZS_E_LAYOUT, "%s: callinfo_size %d is absurd", source, l->callinfo_size);
    int32_t ci_ptr = zs_layout_member(l, model->callinfo_pointer);
    if (!member_fits(l->callinfo_call, 8, l->callinfo_size) || !member_fits(ci_ptr, 8, l->callinfo_size))
        return zs_fail(err, ZS_E_LAYOUT, "%s: CallInfo members lie outside callinfo_size %d",
                       source, l->callinfo_size);
    if (l->body_size < 8 || l->body_size > 256 || !member_fits(l->body_stmts, 8, l->body_size))
        return zs_fail(err, ZS_E_LAYOUT, "%s: body_size %d / body_stmts %d are inconsistent",
                       source, l->body_size, l->body_stmts);
    if (l->func_kind_size != 1 && l->func_kind_size != 2 && l->func_kind_size != 4)
        return zs_fail(err, ZS_E_LAYOUT, "%s: func_kind_size must be 1, 2 or 4", source);
    /* libstdc++ is the one C++ library supported: the recorder reads a
     * vector's {begin, end, end_of_storage} as one 24-byte header, and the
     * resolver a string's {data, size} inside its 32 bytes. */
    if (l->vector_begin != 0 || l->vector_end != 8)
        return zs_fail(err, ZS_E_LAYOUT,
                       "%s: vector_begin must be 0 and vector_end 8 (libstdc++'s std::vector)",
                       source);
    if (!member_fits(l->string_data, 8, 32) || !member_fits(l->string_size, 8, 32) ||
        abs(l->string_data - l->string_size) < 8)
        return zs_fail(err, ZS_E_LAYOUT,
                       "%s: string_data/string_size must be two 8-byte members of a 32-byte "
                       "std::string", source);
    if (l->location_first_line == l->location_last_line ||
        l->location_filename == l->location_first_line)
        return zs_fail(err, ZS_E_LAYOUT, "%s: Location members overlap", source);
    if (zs_layout_has_zam(l) &&
        (!l->zam.sym_body_vtable[0] || !l->zam.sym_body_exec[0] || l->zam.inst_size < 16 || l->zam.inst_size % 8 ||
         !member_fits(l->zam.inst_loc, 8, l->zam.inst_size) ||
         !member_fits(l->zam.locinfo_func_name, 32, OFFSET_MAX) ||
         !member_fits(l->zam.locinfo_loc, 8, OFFSET_MAX) ||
         !member_fits(l->zam.locinfo_parent, 8, OFFSET_MAX) ||
         l->zam.body_insts == l->zam.body_end_pc ||
         !l->zam.sym_coalesced_vtable[0] != !l->zam.coalesced_orig_func ||
         (l->zam.sym_scopes[0] &&
          (!l->zam.sym_funcval_vtable[0] || !l->zam.sym_global_scope[0] || !member_fits(l->zam.scope_ordered_vars, 16, OFFSET_MAX) ||
           !member_fits(l->zam.id_name, 8, OFFSET_MAX) || !member_fits(l->zam.id_val, 8, OFFSET_MAX) ||
           !member_fits(l->zam.funcval_func, 8, OFFSET_MAX)))))
        return zs_fail(err, ZS_E_LAYOUT,
                       "%s: the zam_ members are inconsistent (a vtable symbol, an 8-aligned "
                       "instruction size of 16 or more holding its loc; the coalesced vtable and "
                       "orig_func together)", source);
    const zs_pktsrc_layout *p = &l->pktsrc;
    if (zs_layout_has_pktsrc(l) &&
        (!member_fits(p->mgr_pkt_src, 8, OFFSET_MAX) || p->mgr_pkt_src % 8 || p->mgr_list > 1 ||
         (!p->sym_pcap_vtable[0] && !p->sym_af_packet_vtable[0]) ||
         (p->sym_pcap_vtable[0] && (!member_fits(p->pcap_stats, ZS_PKTSRC_STATS_SIZE, OFFSET_MAX) ||
                                    p->pcap_stats % 8 || !member_fits(p->pcap_is_live, 1, OFFSET_MAX))) ||
         (p->sym_af_packet_vtable[0] &&
          (!member_fits(p->af_packet_stats, ZS_PKTSRC_STATS_SIZE, OFFSET_MAX) || p->af_packet_stats % 8 ||
           !member_fits(p->af_packet_is_live, 1, OFFSET_MAX)))))
        return zs_fail(err, ZS_E_LAYOUT,
                       "%s: the pktsrc_ members are inconsistent (8-aligned pointers and counters "
                       "within %d bytes, mgr_list 0 or 1, and at least one source's vtable)", source,
                       OFFSET_MAX);
    return 0;
}

int32_t zs_layout_member(const zs_layout *l, size_t member)
{
    int32_t v;
    memcpy(&v, (const char *)l + member, sizeof v);
    return v;
}

int zs_layout_equal(const zs_layout *a, const zs_layout *b)
{
    for (size_t i = 0; i < FIELD_COUNT; i++) {
        const char *x = (const char *)a + fields[i].offset, *y = (const char *)b + fields[i].offset;
        int same = fields[i].type == F_SYMBOL ? !strcmp(x, y)
                 : fields[i].type == F_MODEL  ? *(const zs_model *)x == *(const zs_model *)y
                                              : *(const int32_t *)x == *(const int32_t *)y;
        if (!same)
            return 0;
    }
    return 1;
}
