/* SPDX-License-Identifier: BSD-3-Clause */
/* The recording format (spec: docs/recording-format.md). A recording is a
 * series of independent zstd frames; decompressed and concatenated they hold
 * an 8-byte magic, a varint format version, then records:
 *     u8 type, varint payload length, payload
 * A record never spans two frames, so a file cut anywhere loses only the
 * frame being written. */
#ifndef ZS_FORMAT_H
#define ZS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define ZS_MAGIC "ZSPYREC\n"
enum { ZS_MAGIC_LEN = 8 };

/* Bumped when a reader of the previous version would misread a file. Readers
 * read every version up to their own; record types they do not know are
 * skipped (and counted), so adding a record type needs no bump, unless
 * skipping it loses what the file means (7: samples). */
enum { ZS_FORMAT_VERSION = 8 }; /* 2: native frames (func 0) and SYMBOL records;
                                   3: a native frame names a LOCATION, no longer a SYMBOL;
                                   4: each frame of a STACK says its kind;
                                   5: a STACK opens with the first frames of an earlier one;
                                   6: a script frame's stmt may name a ZAM instruction;
                                   7: SAMPLES_OFF_CPU, samples taken off the CPU;
                                   8: LOAD, zeek's packets, lag and queue a second */

typedef enum zs_record_type {
    ZS_REC_HEADER = 1,   /* kv pairs: recorder_version, host, start_wall_ns, ... */
    ZS_REC_PROCESS = 2,  /* varint pid, kv pairs: exe, build_id, zeek_version, layout, ... */
    ZS_REC_STACK = 3,    /* varint id, varint pid, varint n, n frames, outermost first.
                            Format 5: after pid, varint base (0: none, else the id + 1
                            of an earlier stack of that pid) and, with a base, varint
                            shared: the stack is base's first shared frames, then
                            the n frames written.
                            Format 4: a frame is varint (first << 2 | kind) (zs_frame_kind),
                            a script frame's first the Func, followed by varint stmt;
                            a native frame's first its LOCATION id. Formats 1-3:
                            varint func, varint stmt (func 0: native, stmt its id) */
    ZS_REC_SAMPLES = 4,  /* varint n, n x varint dt_us (since the previous sample,
                            of either SAMPLES type), n x varint stack id: a batch,
                            in columns. Format 7, a sampler that tells them apart
                            (header key sampler not "ptrace"): taken on the CPU */
    ZS_REC_SNAPSHOT = 5, /* varint pid, varint address, varint length, bytes */
    ZS_REC_EVENT = 6,    /* varint t_us, varint pid, varint kind, varint value, string */
    ZS_REC_TRAILER = 7,  /* varint samples, varint skipped, varint end t_us */
    ZS_REC_NETTIME = 8,  /* varint t_us, varint pid, 8-byte little-endian double:
                            Zeek's network_time as read with the sample at t_us */
    ZS_REC_SYMBOL = 9,   /* varint pid, varint id, string name: a native function
                            of that process, named on the sensor (mangled) */
    ZS_REC_MODULE = 10,  /* varint pid, varint id, string build_id (hex), string path,
                            varint start, varint end, varint file_offset: a file
                            mapped into that process, as /proc/PID/maps shows it */
    ZS_REC_LOCATION = 11, /* varint pid, varint id, varint module (0: none, else
                             module id + 1), varint address (module-relative;
                             absolute without a module), varint symbol: one
                             native PC (format 3) */
    ZS_REC_LINES = 12,    /* varint pid, varint location, varint n, n x (varint
                             function, varint file, varint line), innermost
                             first: a LOCATION's source lines and inlined
                             functions; function and file are SYMBOL ids */
    ZS_REC_SAMPLES_OFF_CPU = 13, /* format 7: as SAMPLES, samples taken while the
                                    process was off its CPU (one per tick that passed
                                    while it was away, with the stack it left with) */
    ZS_REC_STACK_WAITS = 14, /* varint stack id: the samples of this stack (script
                                frames only) wait for their native frames, which a
                                NATIVE_LATE record may bring later */
    ZS_REC_NATIVE_LATE = 15, /* varint pid, varint t_us, varint stack id: the sample
                                of pid at t_us written with a waiting stack has this
                                stack (its native frames mixed in) instead. A reader
                                that skips both (before them) shows such samples
                                with their script frames, as they were written */
    ZS_REC_LOAD = 16,        /* format 8: varint t_us, varint pid, varint what
                                (zs_load_what bits), then the values what says
                                are there, in this order: varint received,
                                dropped, link, bytes (the packet source's own
                                counters, since it opened), varint lag_us (wall
                                clock minus network_time, a live source's; 0 when
                                behind by less), varint queue (bytes waiting in
                                zeek's packet sockets). Read once a second */
} zs_record_type;

/* What a LOAD record holds. */
typedef enum zs_load_what {
    ZS_LOAD_COUNTERS = 1, /* received, dropped, link, bytes */
    ZS_LOAD_LIVE = 2,     /* the source reads an interface (else a trace file) */
    ZS_LOAD_LAG = 4,      /* lag_us (live sources only) */
    ZS_LOAD_QUEUE = 8,    /* queue */
    ZS_LOAD_AF_PACKET = 16, /* the source is AF_Packet's (else libpcap's) */
    ZS_LOAD__ALL = 31,
} zs_load_what;

/* One LOAD record's values (absent ones 0, as what says). */
typedef struct zs_load {
    uint64_t t_us;
    uint32_t pid;
    uint32_t what;
    uint64_t received, dropped, link, bytes;
    uint64_t lag_us;
    uint64_t queue;
} zs_load;

typedef enum zs_event_kind {
    ZS_EV_TARGET_EXITED = 1, /* value: wait status */
    ZS_EV_SKIPPED = 2,       /* value: sampling ticks that could not be taken */
    ZS_EV_TORN = 3,          /* value: nonblocking reads rejected as torn */
    ZS_EV_DEEP_STACK = 4,    /* value: samples whose stack was cut at the maximum depth */
    ZS_EV_ATTACHED = 5,
    ZS_EV_DETACHED = 6,
    ZS_EV_SAMPLE_FAILED = 7, /* value: samples lost to a failed read */
    ZS_EV_CREDITED = 8,      /* value: samples written for ticks that passed while
                                a target waited to reach its stop (a copy of the
                                stack that stop found: it could not change) */
    ZS_EV_LATE_STOP = 9,     /* value: interrupts a target did not answer within
                                the stop deadline (its ticks are skipped) */
    ZS_EV_REPORT = 10,       /* message: one line of the recorder's end report
                                (pid: the process it is about, else 0), all of
                                it, as -v prints it; value 0 */
} zs_event_kind;

/* One frame as sampled. A script frame: the Func and the statement or call
 * expression whose location gives the line being executed, addresses in the
 * target. A native frame (--native): func 0 and stmt the id of a LOCATION
 * record of the same process (format 2: of a SYMBOL record). */
typedef struct zs_frame {
    uint64_t func;
    uint64_t stmt;
} zs_frame;

/* Where a STACK record's frames start (format 5): the first `shared`
 * frames of the stack base_plus1 - 1 (base_plus1 0: none). */
typedef struct zs_stack_base {
    uint64_t base_plus1;
    size_t shared;
} zs_stack_base;

static inline int zs_frame_is_native(const zs_frame *f) { return f->func == 0; }
/* Format 6: a script frame's stmt with its lowest bit set is the address
 * of the ZAM instruction (ZInst) its compiled body runs; statements and
 * instructions are 8-byte aligned, so the bit is free. */
enum { ZS_STMT_ZAM = 1 };
static inline int zs_stmt_is_zam(uint64_t stmt) { return (stmt & ZS_STMT_ZAM) != 0; }
static inline uint64_t zs_stmt_zam_inst(uint64_t stmt) { return stmt & ~(uint64_t)ZS_STMT_ZAM; }
static inline zs_frame zs_native_frame(uint64_t location) { return (zs_frame){0, location}; }

/* What a frame of a format-4 STACK is: the low two bits of its first varint. */
typedef enum zs_frame_kind {
    ZS_FRAME_SCRIPT = 1,  /* Func and statement (varint stmt follows) */
    ZS_FRAME_NATIVE = 2,  /* a LOCATION id of the same process */
    ZS_FRAME_INLINED = 3, /* reserved: a script function the script compiler (ZAM)
                             inlined into the frame outside it; not written yet,
                             refused by this reader */
} zs_frame_kind;
enum { ZS_FRAME_KIND_BITS = 2 };
/* The largest Func address or location id a format-4 frame holds. */
#define ZS_FRAME_FIRST_MAX (UINT64_MAX >> ZS_FRAME_KIND_BITS)

/* Limits that keep hostile input bounded. */
enum {
    ZS_MAX_FRAMES = 1024,           /* frames per stack */
    /* Frames of all stacks of a format 5 file together, which a reader
     * keeps to build each stack from its base: 256 MiB of them. */
    ZS_MAX_KEPT_FRAMES = 1 << 24,
    ZS_MAX_KV = 256,                /* pairs per header/process record */
    ZS_MAX_FRAME_BYTES = 64 << 20,  /* decompressed bytes per zstd frame */
    ZS_MAX_SNAPSHOT_BYTES = 1 << 20, /* one snapshot region */
    /* All snapshot regions of a recording together: at most this allowance
     * plus RATIO times the compressed bytes read so far. Real snapshots
     * compress a few times; a file of highly compressible regions (a
     * decompression bomb) would otherwise make a converter allocate
     * thousands of times its size. */
    ZS_SNAPSHOT_ALLOWANCE = 64 << 20,
    ZS_SNAPSHOT_RATIO = 64,
    ZS_SAMPLE_BATCH = 4096,          /* samples per SAMPLES record (writer) */
    ZS_MAX_MODULE_PATH = 4096,       /* bytes of a MODULE's path (PATH_MAX) */
    ZS_MAX_BUILD_ID_HEX = 128,       /* hex digits of a build-id (64 bytes) */
    ZS_MAX_PIDS = 4096,              /* processes whose module and location ids a
                                        reader follows */
    ZS_MAX_INLINE = 16,              /* lines of one LINES record */
    ZS_MAX_LINE = 1 << 24            /* a line number */
};

/* A module (a mapped file) of a native stack: ids dense from 0 per process
 * within a file. start/end: the range it is mapped at; file_offset: the file
 * offset of its first mapping, so that pprof tools can map an address back
 * into the file. */
typedef struct zs_module {
    uint64_t id;
    const char *build_id; /* hex, "" when the file has none */
    const char *path;
    uint64_t start, end, file_offset;
} zs_module;

/* One native PC: ids dense from 0 per process within a file. */
typedef struct zs_native_location {
    uint64_t id;
    uint64_t module;  /* 0: none ([unknown], markers), else module id + 1 */
    uint64_t address; /* module-relative with a module, else absolute */
    uint64_t symbol;  /* a SYMBOL id of the same process */
} zs_native_location;

/* One source line of a native location: a function running there and the
 * file and line it is at; function and file are SYMBOL ids of the process. */
typedef struct zs_native_line {
    uint64_t function, file, line;
} zs_native_line;

/* A LOCATION's source lines, innermost first: the line the PC is on, in the
 * innermost inlined function, then each inlined call's site in its caller;
 * the last is in the function the location's symbol names. */
typedef struct zs_native_lines {
    uint64_t location;
    size_t n; /* 1 to ZS_MAX_INLINE */
    zs_native_line line[ZS_MAX_INLINE];
} zs_native_lines;

typedef struct zs_kv {
    const char *key;
    const char *value;
} zs_kv;

/* Looks a key up in a kv list; NULL when absent. */
const char *zs_kv_get(const zs_kv *items, size_t count, const char *key);

#endif
