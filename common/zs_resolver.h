/* SPDX-License-Identifier: BSD-3-Clause */
/* Turns raw addresses into names, files and lines by walking Zeek's objects
 * through a zs_memory. Written once for both stages: the recorder runs it on
 * the live process through the capturing reader (so every byte it needs lands
 * in the recording), the converter on the snapshot image. */
#ifndef ZS_RESOLVER_H
#define ZS_RESOLVER_H

#include <stddef.h>
#include <stdint.h>

#include "zs_format.h"
#include "zs_layout.h"
#include "zs_memory.h"

enum { ZS_MAX_BODIES = 1024, ZS_MAX_STRING = 4096 };

typedef struct zs_location {
    char *file; /* NULL when the object has no location */
    int first_line;
    int last_line;
} zs_location;

typedef struct zs_func_info {
    char *name;
    int builtin;
    size_t nbodies;
    zs_location *bodies;
    uint64_t *body_stmts; /* each body's statement (a ZBody under ZAM) */
    /* An event whose handlers ZAM coalesced into one body runs as a
     * CoalescedScriptFunc: read as the event's own Func (the bodies above
     * are its handlers), with that one body here; 0 otherwise. */
    uint64_t coalesced_body;
} zs_func_info;

enum { ZS_MAX_ZAM_CHAIN = 16 };

/* A function ZAM inlined, where it runs. */
typedef struct zs_zam_line {
    char *func;
    char *file;
    int line;
} zs_zam_line;

/* What a frame is in the profile. */
typedef struct zs_frame_info {
    char *name;      /* "HTTP::parse", "http_reply base/protocols/http/main.zeek:120" */
    char *file;      /* "" for BiFs and unresolved frames */
    int start_line;  /* first line of the running body */
    int line;        /* line being executed */
    int unresolved;  /* the Func could not be read from the memory source */
    /* A ZAM-compiled frame: the functions inlined into it at its
     * instruction, outermost first (not separate frames of the stack). */
    zs_zam_line *inlined;
    size_t ninlined;
    /* A ZAM frame that is itself a function ZAM inlined into the frame
     * outside it (zs_zam_frame_is_inlined). */
    int zam_inlined;
} zs_frame_info;

/* 0, or -1 when the object cannot be read (out is then empty). */
int zs_resolve_func(const zs_memory *m, const zs_layout *l, uint64_t func, zs_func_info *out);
int zs_resolve_location(const zs_memory *m, const zs_layout *l, uint64_t obj, zs_location *out);
void zs_func_info_free(zs_func_info *f);
void zs_location_free(zs_location *loc);
/* The inlining chain of ZAM instruction inst, innermost first (up to
 * ZS_MAX_ZAM_CHAIN): 0, or -1 when not even its own location reads. */
int zs_resolve_zam(const zs_memory *m, const zs_layout *l, uint64_t inst, zs_zam_line *chain,
                   size_t *n);
void zs_zam_line_free(zs_zam_line *z);
/* One ZAMLocInfo (the loc of a ZInst): its function's name and Location;
 * *parent the next one out (0: none). 0, or -1 when it cannot be read. */
int zs_resolve_zam_info(const zs_memory *m, const zs_layout *l, uint64_t info, zs_zam_line *out,
                        uint64_t *parent);
/* A NUL-terminated string of at most ZS_MAX_STRING bytes; NULL when it
 * cannot be read. */
char *zs_read_cstring(const zs_memory *m, uint64_t addr);

/* Whether a frame of f running ZAM instruction stmt (zs_stmt_is_zam) is a
 * function ZAM inlined into the frame outside it: the instruction lies in
 * none of f's own bodies. The recorder writes such frames where the
 * instruction's locations do not chain (Zeek 7.2 on). 0 when not, or
 * when that cannot be read. */
int zs_zam_frame_is_inlined(const zs_memory *m, const zs_layout *l, const zs_func_info *f,
                            uint64_t stmt);
/* Always fills out (unresolved frames get "[unresolved 0x...]"); -1 on
 * out-of-memory only. */
int zs_resolve_frame(const zs_memory *m, const zs_layout *l, const zs_frame *frame,
                     zs_frame_info *out);
/* zs_resolve_frame for a Func already resolved (f; NULL when it could not
 * be read): a caller that meets one Func in many frames resolves it once. */
int zs_resolve_frame_of(const zs_memory *m, const zs_layout *l, const zs_func_info *f,
                        const zs_frame *frame, zs_frame_info *out);
void zs_frame_info_free(zs_frame_info *f);

/* Rewrites a script path in place into the one spelling every output uses:
 * "./" segments and repeated slashes go ("././extra.zeek" and
 * "./extra.zeek" are "extra.zeek", "/a//b/./c" is "/a/b/c"). ".." is left
 * alone: without the file system, "a/../b" need not be "b" (symlinks).
 * A path of only "./" segments becomes ".". Returns path. */
char *zs_path_normalize(char *path);

#endif
