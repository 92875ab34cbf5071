/* SPDX-License-Identifier: BSD-3-Clause */
/* Built-in layouts for x86_64 GCC/libstdc++ builds of Zeek, keyed by the
 * version string: a key "M.m" matches every "M.m.p" (and "M.m.p-debug",
 * "M.m.p-rc1", ...), a key "M.m.p" only that patch release. The first match
 * wins, so patch-release keys come before their series' key.
 *
 * Each entry says how it was obtained. "Verified" entries were compared
 * with the DWARF of a real build. "Derived" entries were computed from that
 * release's headers: the data members of Obj/BroObj, Location, Func (and
 * Func::Body), CallInfo and Frame, with their base classes, vtables and
 * member types, were reproduced in a scratch C++ file and their offsets
 * printed with GCC 12 (Debian 12) and libstdc++; the same method gives the
 * verified numbers for 3.0.1, 8.0.10 and 8.2.2. Derived entries have not
 * been checked against a real build's DWARF. docs/layouts.md has the table. */
#include <stdio.h>
#include <string.h>

#include "zs_layout.h"

/* libstdc++ containers: vector {begin, end, end_of_storage}; string {data, size}. */
#define LIBSTDCXX .vector_begin = 0, .vector_end = 8, .string_data = 0, .string_size = 8

/* -O ZAM in 7.0-8.x (src/script_opt/ZAM/ZBody.h, ZInst.h, Profile.h): ZBody's
 * insts and end_pc at 88 and 96, ZInst 88 bytes with its loc at 64,
 * ZAMLocInfo {func_name 0, modules 32, loc 80, parent 96}. Verified
 * against the DWARF of a real 8.2.2, 9.0.0-rc1 and 7.0.11; 8.0.10's and
 * 7.1.1's headers give the same offsets (GCC 12, not checked against their
 * DWARF). 7.2 is not in the table (its ZAM bodies show as before, without
 * instructions): its locations lack the chains as 8.x's do, and its ID
 * differs from both 7.0's and 8.0's.
 * CoalescedScriptFunc's orig_func follows ScriptFunc: at 176 on 7.0 (its
 * DWARF) and 7.1 (headers: a member moved, the size the same), at 192 on 8.1+
 * (DWARF of the real 8.2.2), at 184 on 8.0 (its ScriptFunc ends in
 * {StmtPtr, int} where 8.1 has a 24-byte Func::Body; from the v8.0.10
 * headers). The script functions by name: Scope::ordered_vars at 120, ID's
 * name and val at 32 and 64, FuncVal's func_val at 32 (the real 8.2.2's
 * DWARF; Scope.h, ID.h and Val.h are the same in 8.0.10). */
#define ZAM_BASE .sym_body_vtable = "_ZTVN4zeek6detail5ZBodyE", \
    .sym_body_exec = "_ZN4zeek6detail5ZBody4ExecEPNS0_5FrameERNS0_12StmtFlowTypeE", \
    .body_insts = 88, .body_end_pc = 96, .inst_size = 88, .inst_loc = 64, \
    .locinfo_func_name = 0, .locinfo_loc = 80, .locinfo_parent = 96, \
    .sym_coalesced_vtable = "_ZTVN4zeek6detail19CoalescedScriptFuncE"
/* 7.0 and 7.1 chain each location through the calls it was inlined at:
 * no scope needed. */
#define ZAM_7 .zam = {ZAM_BASE, .coalesced_orig_func = 176}
#define ZAM_8(orig_func) .zam = {ZAM_BASE, .coalesced_orig_func = orig_func, \
    .sym_scopes = "_ZN4zeek6detailL6scopesE", .sym_global_scope = "_ZN4zeek6detail12global_scopeEv", \
    .sym_funcval_vtable = "_ZTVN4zeek7FuncValE", \
    .scope_ordered_vars = 120, .id_name = 32, .id_val = 64, .funcval_func = 32}

/* Zeek 3.0: Location has a vtable; Func::kind is a 4-byte enum.
 * Verified against the DWARF of a real Zeek 3.0.1 (GCC 12).
 * Used for 3.0.0 and 3.0.1 only (src/Frame.h is the same in both). */
static const zs_layout zeek_3_0 = {
    .model = ZS_MODEL_FRAME_STACK,
    .sym_call_stack = "call_stack",
    .sym_frame_stack = "g_frame_stack",
    .sym_version = "version",
    .sym_network_time = "network_time",
    .callinfo_size = 24, .callinfo_call = 0, .callinfo_func = 8, .callinfo_frame = 0,
    .frame_next_stmt = 144, .frame_function = 0,
    .obj_location = 8,
    .location_filename = 8, .location_first_line = 16, .location_last_line = 20,
    .func_kind = 56, .func_kind_size = 4, .func_kind_builtin = 1,
    .func_name = 72, .func_bodies = 24, .body_size = 16, .body_stmts = 0,
    LIBSTDCXX,
};

/* Zeek 3.0.2 - 3.0.14: as 3.0.1, but 3.0.2 ("Fix reference counting issues
 * related to lambdas/closures") added Frame::weak_refs and
 * Frame::weak_closure_ref before next_stmt, which moves it from 144 to 160
 * (Frame 224 bytes). Derived from the v3.0.2 and v3.0.14 headers (src/Obj.h,
 * src/Func.h, src/Frame.h, src/List.h; identical in between), offsets
 * computed with GCC 12; not checked against a real build's DWARF. */
static const zs_layout zeek_3_0_2 = {
    .model = ZS_MODEL_FRAME_STACK,
    .sym_call_stack = "call_stack",
    .sym_frame_stack = "g_frame_stack",
    .sym_version = "version",
    .sym_network_time = "network_time",
    .callinfo_size = 24, .callinfo_call = 0, .callinfo_func = 8, .callinfo_frame = 0,
    .frame_next_stmt = 160, .frame_function = 0,
    .obj_location = 8,
    .location_filename = 8, .location_first_line = 16, .location_last_line = 20,
    .func_kind = 56, .func_kind_size = 4, .func_kind_builtin = 1,
    .func_name = 72, .func_bodies = 24, .body_size = 16, .body_stmts = 0,
    LIBSTDCXX,
};

/* Zeek 3.1: Location lost its vtable (filename 0, lines 8/12); BroObj, Func
 * and Frame as in 3.0.2+ (List<T> still has two non-static const int
 * members, 24 bytes). Plain symbols. Derived from the v3.1.5 headers
 * (src/Obj.h, src/Func.h, src/Frame.h, src/List.h; the same in v3.1.0),
 * offsets computed with GCC 12; not checked against a real build's DWARF. */
static const zs_layout zeek_3_1 = {
    .model = ZS_MODEL_FRAME_STACK,
    .sym_call_stack = "call_stack",
    .sym_frame_stack = "g_frame_stack",
    .sym_version = "version",
    .sym_network_time = "network_time",
    .callinfo_size = 24, .callinfo_call = 0, .callinfo_func = 8, .callinfo_frame = 0,
    .frame_next_stmt = 160, .frame_function = 0,
    .obj_location = 8,
    .location_filename = 0, .location_first_line = 8, .location_last_line = 12,
    .func_kind = 56, .func_kind_size = 4, .func_kind_builtin = 1,
    .func_name = 72, .func_bodies = 24, .body_size = 16, .body_stmts = 0,
    LIBSTDCXX,
};

/* Zeek 3.2: the big move into namespaces. call_stack is already
 * zeek::detail::call_stack (src/Func.cc), but network_time is still the
 * plain global of src/Net.cc (zeek::run_state came in 4.0). Frame was
 * reworked (bools packed after size, unique_ptr'd element array and offset
 * map, 16-byte List): next_stmt 88 (Frame 120). Func gained unique_id
 * before type, which leaves kind 56 and name 72 where they were. Derived
 * from the v3.2.4 headers (src/Obj.h, src/Func.h, src/Frame.h, src/List.h;
 * the same in v3.2.0), offsets computed with GCC 12; not checked against a
 * real build's DWARF. */
static const zs_layout zeek_3_2 = {
    .model = ZS_MODEL_FRAME_STACK,
    .sym_call_stack = "_ZN4zeek6detail10call_stackE",
    .sym_frame_stack = "g_frame_stack",
    .sym_version = "version",
    .sym_network_time = "network_time",
    .callinfo_size = 24, .callinfo_call = 0, .callinfo_func = 8, .callinfo_frame = 0,
    .frame_next_stmt = 88, .frame_function = 0,
    .obj_location = 8,
    .location_filename = 0, .location_first_line = 8, .location_last_line = 12,
    .func_kind = 56, .func_kind_size = 4, .func_kind_builtin = 1,
    .func_name = 72, .func_bodies = 24, .body_size = 16, .body_stmts = 0,
    LIBSTDCXX,
};

/* Zeek 4.0: the layout of 3.2; network_time moved to
 * zeek::run_state::network_time (new src/RunState.h/.cc). Derived from the
 * v4.0.9 headers (src/Obj.h, src/Func.h, src/Frame.h, src/RunState.h; Obj.h
 * of 4.0.0/4.0.1 differs only in an #include), offsets computed with GCC 12;
 * not checked against a real build's DWARF. */
static const zs_layout zeek_4_0 = {
    .model = ZS_MODEL_FRAME_STACK,
    .sym_call_stack = "_ZN4zeek6detail10call_stackE",
    .sym_frame_stack = "g_frame_stack",
    .sym_version = "version",
    .sym_network_time = "_ZN4zeek9run_state12network_timeE",
    .callinfo_size = 24, .callinfo_call = 0, .callinfo_func = 8, .callinfo_frame = 0,
    .frame_next_stmt = 88, .frame_function = 0,
    .obj_location = 8,
    .location_filename = 0, .location_first_line = 8, .location_last_line = 12,
    .func_kind = 56, .func_kind_size = 4, .func_kind_builtin = 1,
    .func_name = 72, .func_bodies = 24, .body_size = 16, .body_stmts = 0,
    LIBSTDCXX,
};

/* Zeek 4.1, 4.2 and 5.0: Frame gained current_offset, captures and
 * captures_offset_map before next_stmt: next_stmt 112 (Frame 152 in 4.x,
 * 160 in 5.0, which added Frame::assoc after it; 5.0 also dropped
 * Func::unique_id, which does not move kind or name). Derived from the
 * v4.1.1, v4.2.2 and v5.0.10 headers (src/Obj.h, src/Func.h, src/Frame.h;
 * each the same across its series but for comments and declarations),
 * offsets computed with GCC 12; not checked against a real build's DWARF. */
static const zs_layout zeek_4_1 = {
    .model = ZS_MODEL_FRAME_STACK,
    .sym_call_stack = "_ZN4zeek6detail10call_stackE",
    .sym_frame_stack = "g_frame_stack",
    .sym_version = "version",
    .sym_network_time = "_ZN4zeek9run_state12network_timeE",
    .callinfo_size = 24, .callinfo_call = 0, .callinfo_func = 8, .callinfo_frame = 0,
    .frame_next_stmt = 112, .frame_function = 0,
    .obj_location = 8,
    .location_filename = 0, .location_first_line = 8, .location_last_line = 12,
    .func_kind = 56, .func_kind_size = 4, .func_kind_builtin = 1,
    .func_name = 72, .func_bodies = 24, .body_size = 16, .body_stmts = 0,
    LIBSTDCXX,
};

/* Zeek 5.1: capture-by-reference closures removed ("removed deprecated
 * capture-by-reference closures"), taking closure, outer_ids and
 * offset_map out of Frame: next_stmt 80 (Frame 120). Derived from the
 * v5.1.3 headers (src/Obj.h, src/Func.h, src/Frame.h; the same in v5.1.0),
 * offsets computed with GCC 12; not checked against a real build's DWARF. */
static const zs_layout zeek_5_1 = {
    .model = ZS_MODEL_FRAME_STACK,
    .sym_call_stack = "_ZN4zeek6detail10call_stackE",
    .sym_frame_stack = "g_frame_stack",
    .sym_version = "version",
    .sym_network_time = "_ZN4zeek9run_state12network_timeE",
    .callinfo_size = 24, .callinfo_call = 0, .callinfo_func = 8, .callinfo_frame = 0,
    .frame_next_stmt = 80, .frame_function = 0,
    .obj_location = 8,
    .location_filename = 0, .location_first_line = 8, .location_last_line = 12,
    .func_kind = 56, .func_kind_size = 4, .func_kind_builtin = 1,
    .func_name = 72, .func_bodies = 24, .body_size = 16, .body_stmts = 0,
    LIBSTDCXX,
};

/* Zeek 5.2 - 7.2: event groups ("Reintroduce event groups") put a
 * std::set<EventGroupPtr> and a bool into Func::Body, which grows from 16 to
 * 72 bytes; kind is still a 4-byte enum. Frame as in 5.1 (6.0 dropped
 * Frame::call_loc after next_stmt; 6.2 added Func::all_bodies_enabled after
 * name; neither moves an offset read here). Derived from the v5.2.2, v6.0.9,
 * v6.1.1, v6.2.1, v7.0.11, v7.1.1 and v7.2.2 headers (src/Obj.h,
 * src/Func.h, src/Frame.h; each the same across its series), offsets
 * computed with GCC 12; checked against the DWARF of a real 7.0.11
 * (zeek_7_0 below, which adds ZAM). */
#define LAYOUT_5_2 \
    .model = ZS_MODEL_FRAME_STACK, \
    .sym_call_stack = "_ZN4zeek6detail10call_stackE", \
    .sym_frame_stack = "g_frame_stack", \
    .sym_version = "version", \
    .sym_network_time = "_ZN4zeek9run_state12network_timeE", \
    .callinfo_size = 24, .callinfo_call = 0, .callinfo_func = 8, .callinfo_frame = 0, \
    .frame_next_stmt = 80, .frame_function = 0, \
    .obj_location = 8, \
    .location_filename = 0, .location_first_line = 8, .location_last_line = 12, \
    .func_kind = 56, .func_kind_size = 4, .func_kind_builtin = 1, \
    .func_name = 72, .func_bodies = 24, .body_size = 72, .body_stmts = 0,

static const zs_layout zeek_5_2 = {
    LAYOUT_5_2
    LIBSTDCXX,
};

/* Zeek 7.0 and 7.1: 5.2's layout, checked against the DWARF of a real
 * Zeek 7.0.11 (GCC 12), and ZAM. */
static const zs_layout zeek_7_0 = {
    LAYOUT_5_2
    LIBSTDCXX, ZAM_7,
};

/* Zeek 8.0: namespaced symbols, Location without vtable, 1-byte kind.
 * Verified against the DWARF of a real Zeek 8.0.10 (GCC 12). */
static const zs_layout zeek_8_0 = {
    .model = ZS_MODEL_FRAME_STACK,
    .sym_call_stack = "_ZN4zeek6detail10call_stackE",
    .sym_frame_stack = "g_frame_stack",
    .sym_version = "version",
    .sym_network_time = "_ZN4zeek9run_state12network_timeE",
    .callinfo_size = 24, .callinfo_call = 0, .callinfo_func = 8, .callinfo_frame = 0,
    .frame_next_stmt = 80, .frame_function = 0,
    .obj_location = 8,
    .location_filename = 0, .location_first_line = 8, .location_last_line = 12,
    .func_kind = 56, .func_kind_size = 1, .func_kind_builtin = 1,
    .func_name = 72, .func_bodies = 24, .body_size = 24, .body_stmts = 0,
    LIBSTDCXX, ZAM_8(184),
};

/* Zeek 8.1 on: g_frame_stack is gone, CallInfo is {call, frame} and the
 * Frame carries the function. Verified against the DWARF of a real 8.2.2
 * and of a real 9.0.0-rc1 (ZAM's structures too: 9.0's ZBody adds its
 * profiling state after end_pc). Also used for 8.1, whose v8.1.2 headers
 * give the same offsets (GCC 12, not checked against its DWARF). */
static const zs_layout zeek_8_2 = {
    .model = ZS_MODEL_CALLINFO_FRAME,
    .sym_call_stack = "_ZN4zeek6detail10call_stackE",
    .sym_frame_stack = "",
    .sym_version = "version",
    .sym_network_time = "_ZN4zeek9run_state12network_timeE",
    .callinfo_size = 16, .callinfo_call = 0, .callinfo_func = 0, .callinfo_frame = 8,
    .frame_next_stmt = 80, .frame_function = 64,
    .obj_location = 8,
    .location_filename = 0, .location_first_line = 8, .location_last_line = 12,
    .func_kind = 56, .func_kind_size = 1, .func_kind_builtin = 1,
    .func_name = 72, .func_bodies = 24, .body_size = 24, .body_stmts = 0,
    LIBSTDCXX, ZAM_8(192),
};

typedef struct entry {
    /* "3.0" matches "3.0.13", "3.0.13-debug"; "3.0.1" matches "3.0.1",
     * "3.0.1-debug" but not "3.0.10". */
    const char *prefix;
    const zs_layout *layout;
} entry;

static const entry table[] = {
    {"3.0.0", &zeek_3_0},
    {"3.0.1", &zeek_3_0},
    {"3.0", &zeek_3_0_2},
    {"3.1", &zeek_3_1},
    {"3.2", &zeek_3_2},
    {"4.0", &zeek_4_0},
    {"4.1", &zeek_4_1},
    {"4.2", &zeek_4_1},
    {"5.0", &zeek_4_1},
    {"5.1", &zeek_5_1},
    {"5.2", &zeek_5_2},
    {"6.0", &zeek_5_2},
    {"6.1", &zeek_5_2},
    {"6.2", &zeek_5_2},
    {"7.0", &zeek_7_0},
    {"7.1", &zeek_7_0},
    {"7.2", &zeek_5_2},
    {"8.0", &zeek_8_0},
    {"8.1", &zeek_8_2},
    {"8.2", &zeek_8_2},
    {"9.0", &zeek_8_2},
};
enum { TABLE_SIZE = sizeof table / sizeof table[0] };

static int version_matches(const char *version, const char *prefix)
{
    size_t n = strlen(prefix);
    return !strncmp(version, prefix, n) && (version[n] == '.' || version[n] == '-' || version[n] == '\0');
}

const zs_layout *zs_layout_builtin(const char *zeek_version)
{
    if (!zeek_version)
        return NULL;
    for (size_t i = 0; i < TABLE_SIZE; i++)
        if (version_matches(zeek_version, table[i].prefix))
            return table[i].layout;
    return NULL;
}

void zs_layout_add_builtin_zam(zs_layout *l, const char *zeek_version)
{
    const zs_layout *b = zs_layout_builtin(zeek_version);
    if (zs_layout_has_zam(l) || !b || !zs_layout_has_zam(b))
        return;
    l->zam = b->zam;
}

/* The packet source's members (zs_pktsrc_layout), by version: the I/O
 * manager's pkt_src at 56 from 4.0 on; each source's own Properties
 * (is_live 4 bytes before its Stats) and Stats follow its PktSrc, whose
 * size changed with Packet's: PcapSource's and AF_PacketSource's Stats at
 * 344 (4.0), 368 (5.0.0-5.0.7), 376 (5.0.8-5.1, 5.2.0, 7.2, 8.0), 384
 * (5.2.1 on, 8.2, 9.0), 392 (6.0-7.1, 8.1). AF_Packet is built in from 5.2
 * (as iosource::pktsrc, iosource::af_packet from 8.1). Derived: offsetof
 * over each release's own headers with GCC 12 and libstdc++, identical
 * within each series but 5.0 and 5.2 (8.2.2's and 9.0.0-rc1's headers are
 * the same here); 8.2.2's checked against a real build reading a live
 * interface, libpcap and AF_Packet (docs/layouts.md). 3.0 has a plain
 * iosource_mgr whose Manager (no vtable) keeps a std::list of sources at
 * 32, and PcapSource outside namespace zeek (v3.0.1 headers, the same in
 * 3.0.0-3.0.14). */
#define PKTSRC_MGR .sym_iosource_mgr = "_ZN4zeek12iosource_mgrE", .mgr_pkt_src = 56, .mgr_list = 0
#define PCAP(stats) .sym_pcap_vtable = "_ZTVN4zeek8iosource4pcap10PcapSourceE", .pcap_stats = stats, \
    .pcap_is_live = (stats) - 4
#define AF_PACKET(ns, stats) .sym_af_packet_vtable = "_ZTVN4zeek8iosource" ns "15AF_PacketSourceE", \
    .af_packet_stats = stats, .af_packet_is_live = (stats) - 4
#define AF_PKTSRC "6pktsrc"
#define AF_OWN "9af_packet"

typedef struct pktsrc_entry {
    const char *prefix; /* as table[]'s */
    zs_pktsrc_layout pktsrc;
} pktsrc_entry;

static const pktsrc_entry pktsrc_table[] = {
    {"3.0", {.sym_iosource_mgr = "iosource_mgr", .mgr_pkt_src = 32, .mgr_list = 1,
             .sym_pcap_vtable = "_ZTVN8iosource4pcap10PcapSourceE", .pcap_stats = 336, .pcap_is_live = 332}},
    {"4.0", {PKTSRC_MGR, PCAP(344)}},
    {"5.0.8", {PKTSRC_MGR, PCAP(376)}},
    {"5.0.9", {PKTSRC_MGR, PCAP(376)}},
    {"5.0.10", {PKTSRC_MGR, PCAP(376)}},
    {"5.0", {PKTSRC_MGR, PCAP(368)}},
    {"5.1", {PKTSRC_MGR, PCAP(376)}},
    {"5.2.0", {PKTSRC_MGR, PCAP(376), AF_PACKET(AF_PKTSRC, 376)}},
    {"5.2", {PKTSRC_MGR, PCAP(384), AF_PACKET(AF_PKTSRC, 384)}},
    {"6.0", {PKTSRC_MGR, PCAP(392), AF_PACKET(AF_PKTSRC, 392)}},
    {"6.1", {PKTSRC_MGR, PCAP(392), AF_PACKET(AF_PKTSRC, 392)}},
    {"6.2", {PKTSRC_MGR, PCAP(392), AF_PACKET(AF_PKTSRC, 392)}},
    {"7.0", {PKTSRC_MGR, PCAP(392), AF_PACKET(AF_PKTSRC, 392)}},
    {"7.1", {PKTSRC_MGR, PCAP(392), AF_PACKET(AF_PKTSRC, 392)}},
    {"7.2", {PKTSRC_MGR, PCAP(376), AF_PACKET(AF_PKTSRC, 376)}},
    {"8.0", {PKTSRC_MGR, PCAP(376), AF_PACKET(AF_PKTSRC, 376)}},
    {"8.1", {PKTSRC_MGR, PCAP(392), AF_PACKET(AF_OWN, 392)}},
    {"8.2", {PKTSRC_MGR, PCAP(384), AF_PACKET(AF_OWN, 384)}},
    {"9.0", {PKTSRC_MGR, PCAP(384), AF_PACKET(AF_OWN, 384)}},
};

void zs_layout_add_builtin_pktsrc(zs_layout *l, const char *zeek_version)
{
    if (zs_layout_has_pktsrc(l) || !zeek_version)
        return;
    for (size_t i = 0; i < sizeof pktsrc_table / sizeof pktsrc_table[0]; i++)
        if (version_matches(zeek_version, pktsrc_table[i].prefix)) {
            l->pktsrc = pktsrc_table[i].pktsrc;
            return;
        }
}

/* Length of the "major.minor" part of a key. */
static size_t major_minor_len(const char *key)
{
    const char *dot = strchr(key, '.');
    const char *dot2 = dot ? strchr(dot + 1, '.') : NULL;
    return dot2 ? (size_t)(dot2 - key) : strlen(key);
}

void zs_layout_builtin_versions(char *buf, size_t size)
{
    size_t n = 0;
    if (!size)
        return;
    buf[0] = '\0';
    /* One "M.m.x" per series: the patch-release keys are covered by it. */
    for (size_t i = 0; i < TABLE_SIZE && n < size; i++) {
        size_t len = major_minor_len(table[i].prefix);
        if (i && major_minor_len(table[i - 1].prefix) == len &&
            !strncmp(table[i - 1].prefix, table[i].prefix, len))
            continue;
        n += (size_t)snprintf(buf + n, size - n, "%s%.*s.x", n ? ", " : "", (int)len,
                              table[i].prefix);
    }
}
