/* SPDX-License-Identifier: BSD-3-Clause */
/* What a zeek's load is, once a second, without stopping it: its packet
 * source's own counters and whether it reads an interface (zeek's memory,
 * one read a second), how far network_time is behind the wall clock, and
 * the bytes waiting in its packet sockets (/proc). A value that cannot be
 * read is left out of the record, never guessed. */
#ifndef REC_LOAD_H
#define REC_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zs_format.h"
#include "zs_layout.h"

typedef struct rec_load_reader {
    pid_t pid;
    zs_pktsrc_layout layout;
    uint64_t mgr_global;         /* &iosource_mgr in the process; 0: unknown */
    uint64_t pcap_vtable, af_packet_vtable; /* their address points; 0: unknown */
    uint64_t network_time;       /* &network_time; 0: unknown */
    uint64_t mgr, node, src;     /* found so far (0: not yet; node: mgr_list's first) */
    int src_af_packet;           /* src is AF_Packet's */
    uint64_t *inodes;            /* the process's sockets, as last scanned */
    size_t ninodes, inodes_cap;
    uint64_t next_scan_ns;
    int packet_fd;               /* /proc/PID/net/packet, kept open: one pread a second; -1 */
    char *packet_text;           /* what it last read */
} rec_load_reader;

/* Addresses in the process (0: none), the layout's offsets. */
typedef struct rec_load_globals {
    uint64_t iosource_mgr, pcap_vtable, af_packet_vtable, network_time;
} rec_load_globals;

void rec_load_init(rec_load_reader *r, pid_t pid, const zs_layout *layout, rec_load_globals g);
void rec_load_free(rec_load_reader *r);

/* The load now (now_ns on CLOCK_MONOTONIC for the scans' pace, wall_ns on
 * CLOCK_REALTIME for the lag) into out (t_us and pid are the caller's),
 * and network_time into *nt when it was read. Finding the packet source
 * takes a step a second (the manager, its source, the source's counters),
 * each in that second's one read. */
void rec_load_read(rec_load_reader *r, uint64_t now_ns, uint64_t wall_ns, zs_load *out, double *nt);

#endif
