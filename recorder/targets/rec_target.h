/* SPDX-License-Identifier: BSD-3-Clause */
/* A zeek process to be recorded: where its interpreter globals are, which
 * Zeek it is and which layout walks its objects. Found once, before the
 * first sample, from /proc and the executable's ELF symbols. */
#ifndef REC_TARGET_H
#define REC_TARGET_H

#include <stdint.h>
#include <sys/types.h>

#include "targets/rec_inspect.h"
#include "frames/rec_zam.h"
#include "zs_error.h"
#include "zs_layout.h"

typedef enum rec_layout_source {
    REC_LAYOUT_FILE,    /* --layout */
    REC_LAYOUT_DWARF,   /* the executable's debug info */
    REC_LAYOUT_BUILTIN, /* the table keyed by version */
} rec_layout_source;

typedef struct rec_target {
    pid_t pid;
    pid_t ns_pid;            /* pid inside the process's pid namespace */
    char exe[4096];          /* the executable as the process sees it */
    char build_id[81];
    char zeek_version[64];
    char node[128];          /* CLUSTER_NODE of the process, "" if none */
    char cmdline[512];       /* its arguments, space-separated */
    zs_layout layout;
    rec_layout_source layout_source;
    uint64_t call_stack;     /* runtime addresses of the globals */
    uint64_t frame_stack;    /* 0 in the callinfo-frame model */
    uint64_t network_time;   /* 0 when the symbol is absent */
    rec_zam_symbols zam;     /* body_vtable 0: no ZAM known */
    struct {                 /* the packet source's (0: not known) */
        uint64_t iosource_mgr, pcap_vtable, af_packet_vtable;
    } pktsrc;
} rec_target;

typedef struct rec_layout_choice {
    const zs_layout *forced; /* --layout, or NULL */
    int no_dwarf;            /* skip debug info, use the built-in table */
} rec_layout_choice;

/* How the executable is inspected (NULL: afresh, until done): verdicts
 * remembered across processes, and a descriptor that, once readable, gives
 * up the inspection under way (a recorder told to stop). */
typedef struct rec_target_inspector {
    rec_inspect_cache *cache;
    int cancel_fd; /* 0: none */
} rec_target_inspector;

/* Finds the globals, reads the version, chooses the layout. Touches the
 * process only by reading /proc and its memory. */
int rec_target_open(pid_t pid, const rec_layout_choice *choice, const rec_target_inspector *how,
                    rec_target *t, zs_error *err);

/* Reads the live process to confirm the layout fits: ordered, aligned
 * vectors, readable pointers, a printable Func name. */
int rec_target_check(const rec_target *t, const rec_target_inspector *how, zs_error *err);

const char *rec_layout_source_name(rec_layout_source s);

/* A descriptor that becomes readable when process pid exits (a pidfd,
 * Linux 5.3 on), or -1 where there is none. The caller closes it. */
int rec_target_exit_fd(pid_t pid);

/* 0 once the process has exited (gone, or a zombie not yet reaped): a poll
 * of exit_fd (rec_target_exit_fd) when it is one, else a read of /proc. */
int rec_target_alive(pid_t pid, int exit_fd);

#endif
