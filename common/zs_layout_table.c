/* Built-in layouts for x86_64 GCC/libstdc++ builds of Zeek, keyed by the
 * major.minor of the version string. Each entry says how it was verified. */
#include <stdio.h>
#include <string.h>

#include "zs_layout.h"

/* libstdc++ containers: vector {begin, end, end_of_storage}; string {data, size}. */
#define LIBSTDCXX .vector_begin = 0, .vector_end = 8, .string_data = 0, .string_size = 8

/* Zeek 3.0: Location has a vtable; Func::kind is a 4-byte enum.
 * Verified against the DWARF of a real Zeek 3.0.1 (GCC 12). */
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
    LIBSTDCXX,
};

/* Zeek 8.1 on: g_frame_stack is gone, CallInfo is {call, frame} and the
 * Frame carries the function. Verified against the DWARF of a real 8.2.2. */
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
    LIBSTDCXX,
};

typedef struct entry {
    const char *major_minor; /* "3.0" matches "3.0.1", "3.0.13-debug" */
    const zs_layout *layout;
} entry;

static const entry table[] = {
    {"3.0", &zeek_3_0},
    {"8.0", &zeek_8_0},
    {"8.2", &zeek_8_2},
};

const zs_layout *zs_layout_builtin(const char *zeek_version)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        size_t n = strlen(table[i].major_minor);
        if (!strncmp(zeek_version, table[i].major_minor, n) &&
            (zeek_version[n] == '.' || zeek_version[n] == '-' || zeek_version[n] == '\0'))
            return table[i].layout;
    }
    return NULL;
}

void zs_layout_builtin_versions(char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof table / sizeof table[0] && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s.x", i ? ", " : "", table[i].major_minor);
}
