/* SPDX-License-Identifier: BSD-3-Clause */
/* The messages between the recorder and its sandboxed unwinder
 * (rec_unwinder.c), one per SOCK_SEQPACKET datagram, each starting with a
 * head. The recorder trusts nothing the unwinder says: every answer is
 * checked against these bounds before use. */
#ifndef REC_UNWIND_MSG_H
#define REC_UNWIND_MSG_H

#include <stdint.h>
#include <sys/user.h>

enum rec_unwind_msg_type {
    /* recorder -> unwinder */
    UW_FILE = 1,   /* payload: a module's path as /proc/PID/maps shows it; one fd */
    UW_MAPS_TEXT,  /* payload: the next part of /proc/PID/maps */
    UW_MAPS_END,   /* arg: 1 with a vdso image (payload: its uint64 address; one fd) */
    UW_UNWIND,     /* arg: stack bytes; payload: user_regs_struct, then the stack */
    /* unwinder -> recorder */
    UW_NAME,       /* arg: the next symbol id; payload: its name */
    UW_RESULT,     /* arg: frames; payload: uint32 flags, then uint32 location ids,
                      innermost first, then each frame's uint64 stack pointer
                      (its lowest byte; the next frame's is its CFA) */
    UW_MODULE,     /* arg: the next module id; payload: rec_unwind_module, then
                      build_id_len raw bytes, then path_len bytes of path */
    UW_LOCATION,   /* arg: the next location id; payload: rec_unwind_location */
    UW_LINES,      /* arg: the location just sent; payload: 1 to UW_MAX_INLINE
                      rec_unwind_line, innermost first (from the module's DWARF) */
};

/* A module, sent before the first location in it. */
typedef struct rec_unwind_module {
    uint64_t start, end;  /* the range it is mapped at */
    uint64_t file_offset; /* of the mapping at start */
    uint32_t build_id_len, path_len;
} rec_unwind_module;

/* A PC, sent before the first result holding it; its symbol and module
 * sent before it. */
typedef struct rec_unwind_location {
    uint64_t address; /* the PC, in the target */
    uint32_t module;  /* 0: none, else module id + 1 */
    uint32_t symbol;
} rec_unwind_location;

/* One source line of a location: the function running there (the first an
 * inlined one, the last the function the symbol names), in which file and
 * line; names (functions and files alike) are UW_NAME ids. */
typedef struct rec_unwind_line {
    uint32_t function, file, line;
} rec_unwind_line;

enum {
    UW_MAX_INLINE = 16,           /* lines per location (ZS_MAX_INLINE) */
    UW_MAX_LINE = 1 << 24,        /* more lines than a source file has */
    UW_MAX_NAME = 1024,           /* longer names are cut */
    UW_MAX_PATH = 4096,           /* a module's path (ZS_MAX_MODULE_PATH) */
    UW_MAX_BUILD_ID = 64,         /* bytes */
    UW_MAPS_PART = 32 << 10,
    UW_MAX_MAPS = 4 << 20,        /* more /proc/PID/maps than any zeek has */
    UW_MAX_FRAMES = 256,
    UW_MAX_STACK = 64 << 10,
    UW_MAX_MSG = 128 << 10,
    /* An answer (unwinder -> recorder) is at most this long: a RESULT of
     * UW_MAX_FRAMES frames (3 KiB), a MODULE with its path (4.2 KiB). */
    UW_MAX_ANSWER = 8 << 10,
};

enum {
    UW_BEYOND_COPY = 1,     /* the unwind needed stack above the copy */
    UW_OUTSIDE_MODULES = 2, /* a PC in no module: the module list is old */
    UW_ON_FIBER = 4,        /* the frames end at a fiber's entry */
    UW_GENERAL_PATH = 8,    /* unwound by libdwfl: some frame's rules are not compact (rec_cfi.h) */
};

typedef struct rec_unwind_head {
    uint32_t type;
    uint32_t arg;
} rec_unwind_head;

#endif
