/* SPDX-License-Identifier: BSD-3-Clause */
/* A layout says how to walk one Zeek build's interpreter objects: which model
 * of the call stack it has (which pointers to follow) and the offsets and
 * sizes of every member the profiler reads. Zeek-specific offsets live only
 * here and in zs_layout_table.c; code asks the layout. */
#ifndef ZS_LAYOUT_H
#define ZS_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "zs_error.h"

typedef enum zs_model {
    /* Zeek 3.0-8.0: call_stack of {call, func}, plus g_frame_stack whose
     * innermost Frame's next_stmt gives the innermost line. */
    ZS_MODEL_FRAME_STACK = 1,
    /* Zeek 8.1+: call_stack of {call, frame}; every call has a Frame (on
     * the target's C++ stack) with function and next_stmt. */
    ZS_MODEL_CALLINFO_FRAME = 2,
} zs_model;

enum { ZS_SYMBOL_MAX = 128 };

/* -O ZAM (optional: inst_size 0 when the layout knows no ZAM). A ZBody is
 * recognised by its vtable symbol, its instruction loop by sym_body_exec;
 * its instruction array (insts, end_pc of inst_size-byte ZInsts) by the
 * members below. Each ZInst's loc is a shared_ptr (its pointer first) to a
 * ZAMLocInfo {func_name (a std::string), loc (a shared_ptr to a Location),
 * parent (a shared_ptr to the ZAMLocInfo of the enclosing statement)}. */
typedef struct zs_zam_layout {
    char sym_body_vtable[ZS_SYMBOL_MAX];
    char sym_body_exec[ZS_SYMBOL_MAX];
    int32_t body_insts;
    int32_t body_end_pc;
    int32_t inst_size;
    int32_t inst_loc;
    int32_t locinfo_func_name;
    int32_t locinfo_loc;
    int32_t locinfo_parent;
    /* Optional (keys of their own): an event's handlers coalesced into one
     * body run as a CoalescedScriptFunc, known by this vtable symbol, whose
     * orig_func (an IntrusivePtr) is the Func with the handlers' bodies.
     * Empty / 0 when not known. */
    char sym_coalesced_vtable[ZS_SYMBOL_MAX];
    int32_t coalesced_orig_func;
    /* Optional (all or none): the script functions by name, for the
     * extents of the functions ZAM inlined (7.2 on, its locations name
     * only the innermost one). sym_scopes is Scope.cc's scope stack (a
     * vector of ScopePtr), whose first is the global scope: its
     * ordered_vars (a vector of IDPtr) at scope_ordered_vars; an ID's name
     * (a char *) and val at id_name and id_val; a FuncVal (known by its
     * vtable symbol) holds its Func at funcval_func. sym_global_scope is
     * global_scope(), exported, which finds sym_scopes where its own
     * (local) symbol was stripped. */
    char sym_scopes[ZS_SYMBOL_MAX];
    char sym_global_scope[ZS_SYMBOL_MAX];
    char sym_funcval_vtable[ZS_SYMBOL_MAX];
    int32_t scope_ordered_vars;
    int32_t id_name;
    int32_t id_val;
    int32_t funcval_func;
    /* Not in the layout text: what a CoalescedScriptFunc's vtable pointer
     * holds in the process at hand (the recorder finds it by the symbol;
     * a recording's PROCESS record carries it, as zam_coalesced_vtable);
     * 0: unknown, every Func is read as itself. */
    uint64_t coalesced_vtable_at;
    /* The same for a ZBody's vtable (PROCESS: zam_body_vtable): which
     * bodies are ZAM bodies, whose instruction arrays may be read. */
    uint64_t body_vtable_at;
} zs_zam_layout;

/* The packet source's counters, for the load record (optional: empty
 * symbols when the layout knows none; each source kind all or none). The
 * global sym_iosource_mgr points to the I/O manager, whose member at
 * mgr_pkt_src points to the packet source (mgr_list 1, Zeek 3.0: is a
 * std::list of them, the first node's value the source, ZS_LIST_NODE_VALUE
 * bytes into the node); by its vtable pointer that is a
 * PcapSource (libpcap: live or a trace file) or an AF_PacketSource, each
 * with its own copy of the PktSrc::Stats counters (ZS_PKTSRC_STATS_*) at
 * *_stats and of its Properties' is_live flag at *_is_live. */
typedef struct zs_pktsrc_layout {
    char sym_iosource_mgr[ZS_SYMBOL_MAX];
    int32_t mgr_pkt_src;
    int32_t mgr_list;
    char sym_pcap_vtable[ZS_SYMBOL_MAX];
    int32_t pcap_stats;
    int32_t pcap_is_live;
    char sym_af_packet_vtable[ZS_SYMBOL_MAX];
    int32_t af_packet_stats;
    int32_t af_packet_is_live;
} zs_pktsrc_layout;

/* PktSrc::Stats, the same in every version from 3.0 to 9.0: uint64
 * received, dropped, link, bytes_received (then more, not read). */
enum {
    ZS_PKTSRC_STATS_RECEIVED = 0,
    ZS_PKTSRC_STATS_DROPPED = 8,
    ZS_PKTSRC_STATS_LINK = 16,
    ZS_PKTSRC_STATS_BYTES = 24,
    ZS_PKTSRC_STATS_SIZE = 32,
};
/* libstdc++'s std::list: the list object's first word is its first node;
 * a node is {next, prev} and then its value. */
enum { ZS_LIST_NODE_VALUE = 16 };

typedef struct zs_layout {
    zs_model model;
    char sym_call_stack[ZS_SYMBOL_MAX];
    char sym_frame_stack[ZS_SYMBOL_MAX]; /* empty for ZS_MODEL_CALLINFO_FRAME */
    char sym_version[ZS_SYMBOL_MAX];
    char sym_network_time[ZS_SYMBOL_MAX];

    int32_t callinfo_size;
    int32_t callinfo_call;
    int32_t callinfo_func;  /* frame-stack model */
    int32_t callinfo_frame; /* callinfo-frame model */

    int32_t frame_next_stmt;
    int32_t frame_function; /* callinfo-frame model */

    int32_t obj_location;
    int32_t location_filename;
    int32_t location_first_line;
    int32_t location_last_line;

    int32_t func_kind;
    int32_t func_kind_size;
    int32_t func_kind_builtin; /* the enum value that marks a BiF */
    int32_t func_name;
    int32_t func_bodies;
    int32_t body_size;
    int32_t body_stmts;

    /* libstdc++: vector {begin, end, cap}, string {data, size, ...} */
    int32_t vector_begin;
    int32_t vector_end;
    int32_t string_data;
    int32_t string_size;

    zs_zam_layout zam;
    zs_pktsrc_layout pktsrc;
} zs_layout;

/* Whether l can read ZAM-compiled bodies. */
static inline int zs_layout_has_zam(const zs_layout *l) { return l->zam.inst_size > 0; }
/* Whether l can find script functions by name (for ZAM's inlined ones). */
static inline int zs_layout_has_zam_scope(const zs_layout *l)
{
    return zs_layout_has_zam(l) && l->zam.sym_scopes[0];
}

/* Whether l can find the packet source (and then which kinds it reads). */
static inline int zs_layout_has_pktsrc(const zs_layout *l) { return l->pktsrc.sym_iosource_mgr[0] != 0; }

/* Finds the built-in layout for a Zeek version string ("6.0.3", "8.0.10-debug").
 * Returns NULL when no built-in layout covers it. */
const zs_layout *zs_layout_builtin(const char *zeek_version);
/* Gives l (a layout from DWARF, say) the built-in table's ZAM members for
 * that version when it has none. */
void zs_layout_add_builtin_zam(zs_layout *l, const char *zeek_version);
/* The same for the packet source's members (their own table: they change
 * with other releases than the interpreter's). */
void zs_layout_add_builtin_pktsrc(zs_layout *l, const char *zeek_version);

/* Versions covered by the built-in table, for messages and --help. */
void zs_layout_builtin_versions(char *buf, size_t size);

/* Plain-text format: "key = value" lines, '#' comments. Every key required
 * but the zam_ ones: all or none, and within them the two coalesced ones
 * and the scope ones each a group of its own (all or none); and the
 * pktsrc_ ones: the manager's, the PcapSource's and the AF_PacketSource's
 * each a group (all or none), the two sources' only with the manager's,
 * pktsrc_mgr_list optional with them (0 when absent). */
int zs_layout_parse(const char *text, size_t len, const char *source, zs_layout *out, zs_error *err);
int zs_layout_load(const char *path, zs_layout *out, zs_error *err);
/* Returns a malloc'd text in the format zs_layout_parse reads. */
char *zs_layout_format(const zs_layout *l);

/* Offsets within sane bounds, sizes large enough for the members read. */
int zs_layout_check(const zs_layout *l, const char *source, zs_error *err);

int zs_layout_equal(const zs_layout *a, const zs_layout *b);

/* What a model's layout must name beyond what every model reads. */
typedef struct zs_model_info {
    zs_model id;
    const char *name;       /* as layout files spell it */
    size_t stack_symbol;    /* offsetof the symbol of a second vector it reads, 0: none */
    size_t callinfo_pointer; /* offsetof the CallInfo member it follows (int32_t) */
} zs_model_info;

/* NULL for a model no table knows. */
const zs_model_info *zs_model_find(zs_model m);
const char *zs_model_name(zs_model m);

/* The int32_t member of l at offset member (an offsetof of zs_layout). */
int32_t zs_layout_member(const zs_layout *l, size_t member);

#endif
