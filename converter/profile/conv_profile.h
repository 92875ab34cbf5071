/* SPDX-License-Identifier: BSD-3-Clause */
/* The converter's resolved, aggregated profile: what every output format
 * (pprof, folded, summary) and the sqlite cache work from. Functions and
 * locations are interned; a stack is a list of location ids. Nothing here
 * grows with the number of samples, only with distinct stacks. */
#ifndef CONV_PROFILE_H
#define CONV_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/conv_lane.h"
#include "profile/conv_timeline.h"

typedef struct conv_function {
    char *name;      /* "HTTP::parse", "connection_state_remove base/.../main.zeek:329" */
    char *file;      /* "" for BiFs, unresolved frames and empty_call_stack; native
                        functions: their source file, CONV_NATIVE_FILE when unknown */
    int start_line;
    int native;      /* a native (C++) function of a --native recording */
} conv_function;

typedef struct conv_location {
    uint32_t function; /* index into functions */
    int line;
    uint32_t mapping;  /* native frames: 1 + index into mappings; 0: none */
    uint64_t address;  /* native frames: the PC in the process; ZAM frames and
                          the functions inlined there: the instruction; 0: none */
    int inlined;       /* a function inlined at that PC (or ZAM instruction)
                          into the next outer location of its stack (same
                          mapping and address): pprof makes them one Location
                          of several Lines, the other outputs frames of their
                          own */
} conv_location;

/* A file mapped into a profiled process (a pprof Mapping): native
 * locations in it point at it. */
typedef struct conv_mapping {
    uint64_t start, limit, file_offset;
    char *file;
    char *build_id; /* hex, "" when unknown */
} conv_mapping;

/* A profiled process: merged profiles of several hosts keep them apart. */
typedef struct conv_process {
    char *host; /* "" when unknown */
    char *node; /* cluster node name, "" when unknown */
    uint32_t pid;
} conv_process;

typedef struct conv_stack {
    uint32_t process; /* index into processes */
    uint32_t pid;     /* processes[process].pid */
    uint32_t nlocs;
    uint32_t *locs;  /* location indexes, OUTERMOST first */
    uint64_t count;  /* samples */
} conv_stack;

/* Facts about the recording(s), for output comments and the summary. */
typedef struct conv_meta {
    char *zeek_version;      /* "3.0.1"; several joined with ", " when merged */
    char *host;
    char *recorder_version;
    int64_t start_wall_ns;   /* unix time of the first sample's recording start */
    int64_t duration_ns;     /* span covered by samples */
    int64_t period_ns;       /* sampling period: 1e9 / rate */
    uint64_t samples;
    uint64_t skipped;        /* ticks the recorder could not take */
    uint64_t unresolved;     /* samples with at least one [unresolved] frame */
    uint64_t torn;           /* nonblocking reads rejected */
    /* Format 7, a sampler that marks each sample on or off the CPU (BPF):
     * marked (merged: every recording is). off_cpu: of the samples the
     * other filters kept, those taken off the CPU; the wall-clock view
     * counts them in samples, the on-CPU view (cpu_view) leaves them out. */
    int marked; /* conv_marked */
    int cpu_view;
    uint64_t off_cpu;
} conv_meta;

/* conv_meta.marked: how a recording's samples stand to the CPU. */
enum conv_marked {
    CONV_UNMARKED = 0,        /* ptrace (or before format 7): wall-clock */
    CONV_MARKED = 1,          /* each sample on or off the CPU */
    CONV_MARKED_CPU_ONLY = 2, /* --cpu-only: no off-CPU sample was taken */
};

typedef struct conv_profile conv_profile;
struct conv_profile {
    conv_function *functions;
    size_t nfunctions, functions_cap;
    conv_location *locations;
    size_t nlocations, locations_cap;
    conv_mapping *mappings;
    size_t nmappings, mappings_cap;
    conv_stack *stacks;
    size_t nstacks, stacks_cap;
    conv_process *processes;
    size_t nprocesses, processes_cap;
    conv_meta meta;
    /* Per-sample times: NULL unless the reader was asked for them (an
     * output in time order); the cache never stores them. */
    conv_timeline *timeline;
    /* The load lane: NULL unless asked for (the flame graph); never cached. */
    conv_lane *lane;
    void *index; /* private intern tables (conv_profile.c) */
};

/* The pseudo-function of samples taken with an empty script call stack. */
#define CONV_EMPTY_STACK "empty_call_stack"
/* The file of a native (C++) function whose source file is not known (no
 * DWARF on the sensor). */
#define CONV_NATIVE_FILE "[native]"

/* Whether f is one body of an event or hook named "NAME FILE:LINE" (the
 * resolver names bodies so when a handler has several): its name already
 * says where it is. */
int conv_function_names_body(const conv_function *f);
/* Whether f is a native (C++) function of a --native recording. */
int conv_function_is_native(const conv_function *f);

conv_profile *conv_profile_new(void);
void conv_profile_free(conv_profile *p);

/* Interning: the same content always gives the same index. -1 on no memory. */
int64_t conv_profile_function(conv_profile *p, const char *name, const char *file, int start_line);
int64_t conv_profile_location(conv_profile *p, uint32_t function, int line);
/* A native function: file its source file, NULL when not known. */
int64_t conv_profile_native_function(conv_profile *p, const char *name, const char *file);
/* A native location: function at line (0: unknown) at address, in mapping
 * (1 + its index; 0: none); inlined as in conv_location. */
int64_t conv_profile_native_location(conv_profile *p, uint32_t function, int line, int inlined,
                                     uint32_t mapping, uint64_t address);
/* A ZAM frame's location (inlined 0) or a function ZAM inlined there
 * (inlined 1): placed at instruction inst, so that pprof makes them one
 * Location of several Lines, as a native PC with inlined functions. */
int64_t conv_profile_zam_location(conv_profile *p, uint32_t function, int line, int inlined,
                                  uint64_t inst);
int64_t conv_profile_mapping(conv_profile *p, uint64_t start, uint64_t limit, uint64_t file_offset,
                             const char *file, const char *build_id);
int64_t conv_profile_process(conv_profile *p, const char *host, uint32_t pid, const char *node);
/* Adds count samples to the stack (process, locs), merging with an equal one. */
int conv_profile_add_process_stack(conv_profile *p, uint32_t process, const uint32_t *locs,
                                   uint32_t nlocs, uint64_t count);
/* The same, giving the stack's index; -1 on no memory. */
int64_t conv_profile_intern_stack(conv_profile *p, uint32_t process, const uint32_t *locs,
                                  uint32_t nlocs, uint64_t count);
/* The same for a process known only by its pid. */
int conv_profile_add_stack(conv_profile *p, uint32_t pid, const uint32_t *locs, uint32_t nlocs,
                           uint64_t count);

/* Adds every stack of src into dst (re-interning), and merges src's meta.
 * src's timeline, if it has one, is moved into dst's (renumbered in place,
 * so that 10 million samples are not held twice): src loses it; so its
 * load lane. */
int conv_profile_merge(conv_profile *dst, conv_profile *src);
/* Each function's samples: flat[f] where it is the innermost frame,
 * cum[f] where it is on the stack (once per sample, recursion or not);
 * both arrays of nfunctions, zeroed by the caller. Returns the samples. */
uint64_t conv_profile_tally(const conv_profile *p, uint64_t *flat, uint64_t *cum);

/* Sets *s to a malloc'd copy of v (NULL stays NULL); 0 or -1. */
int conv_set_string(char **s, const char *v);
/* Appends ", v" to *s unless v is already in it (NULL v: nothing); 0 or -1. */
int conv_append_unique(char **s, const char *v);

#endif
