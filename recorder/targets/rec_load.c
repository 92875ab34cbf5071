/* SPDX-License-Identifier: BSD-3-Clause */
#include "targets/rec_load.h"

#include "frames/rec_memory.h"
#include "zs_grow.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A zeek's packet sockets are opened at its start and stay: its fds (a
 * readlink each, hundreds on a busy worker) are looked through only when
 * its namespace has packet sockets at all, then again after this long, or
 * after SCAN_SOON_NS while none of them was its own. */
#define SCAN_EVERY_NS 60000000000ULL
#define SCAN_SOON_NS 10000000000ULL
enum { MAX_PACKET_SOCKETS = 256 };
/* /proc/net/packet's lines are about 90 bytes: room for MAX_PACKET_SOCKETS. */
#define PACKET_TEXT_BYTES (32 * 1024)

void rec_load_init(rec_load_reader *r, pid_t pid, const zs_layout *layout, rec_load_globals g)
{
    memset(r, 0, sizeof *r);
    r->pid = pid;
    r->layout = layout->pktsrc;
    r->mgr_global = zs_layout_has_pktsrc(layout) ? g.iosource_mgr : 0;
    r->pcap_vtable = g.pcap_vtable;
    r->af_packet_vtable = g.af_packet_vtable;
    r->network_time = g.network_time;
    r->packet_fd = -1;
}

void rec_load_free(rec_load_reader *r)
{
    free(r->inodes);
    free(r->packet_text);
    if (r->packet_fd >= 0)
        close(r->packet_fd);
    r->inodes = NULL;
    r->packet_text = NULL;
    r->packet_fd = -1;
    r->ninodes = r->inodes_cap = 0;
}

/* The inodes of the process's sockets, from /proc/PID/fd. */
static void scan_sockets(rec_load_reader *r)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)r->pid);
    r->ninodes = 0;
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char link[320], target[64];
        unsigned long long ino;
        if (e->d_name[0] == '.')
            continue;
        snprintf(link, sizeof link, "%s/%s", path, e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (sscanf(target, "socket:[%llu]", &ino) != 1 ||
            zs_grow(&r->inodes, &r->inodes_cap, r->ninodes + 1, sizeof *r->inodes, 16))
            continue;
        r->inodes[r->ninodes++] = ino;
    }
    closedir(d);
}

static int own_socket(const rec_load_reader *r, uint64_t ino)
{
    for (size_t i = 0; i < r->ninodes; i++)
        if (r->inodes[i] == ino)
            return 1;
    return 0;
}

/* The text of the process's network namespace's /proc/net/packet, from
 * the descriptor kept open (a seq_file reads afresh from offset 0), NULL
 * when it cannot be read. Opened again after a failed read. */
static const char *packet_table(rec_load_reader *r)
{
    if (!r->packet_text && !(r->packet_text = malloc(PACKET_TEXT_BYTES)))
        return NULL;
    if (r->packet_fd < 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/net/packet", (int)r->pid);
        if ((r->packet_fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            return NULL;
    }
    ssize_t got = pread(r->packet_fd, r->packet_text, PACKET_TEXT_BYTES - 1, 0);
    if (got < 0) {
        close(r->packet_fd);
        r->packet_fd = -1;
        return NULL;
    }
    r->packet_text[got] = '\0';
    return r->packet_text;
}

/* The receive queues of the process's packet sockets, from its network
 * namespace's /proc/net/packet ("sk RefCnt Type Proto Iface R Rmem User
 * Inode"); 0 when it has none there. */
static int packet_queue(rec_load_reader *r, uint64_t now_ns, uint64_t *bytes)
{
    uint64_t inode[MAX_PACKET_SOCKETS], rmem[MAX_PACKET_SOCKETS];
    size_t n = 0;
    const char *text = packet_table(r);
    for (const char *line = text; line && *line && n < MAX_PACKET_SOCKETS;) {
        unsigned long long sk, queued, ino;
        unsigned refs, type, proto, iface, running, user;
        if (sscanf(line, "%llx %u %u %x %u %u %llu %u %llu", &sk, &refs, &type, &proto, &iface,
                   &running, &queued, &user, &ino) == 9) {
            inode[n] = ino;
            rmem[n++] = queued;
        }
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (!n)
        return 0;
    if (now_ns >= r->next_scan_ns)
        scan_sockets(r);
    int found = 0;
    *bytes = 0;
    for (size_t i = 0; i < n; i++)
        if (own_socket(r, inode[i])) {
            *bytes += rmem[i];
            found = 1;
        }
    if (now_ns >= r->next_scan_ns)
        r->next_scan_ns = now_ns + (found ? SCAN_EVERY_NS : SCAN_SOON_NS);
    return found;
}

/* The next step toward the source's counters, with network_time, in one
 * read: the manager, then its source, then (once known) the source's
 * vtable pointer, counters and is_live. */
static void read_source(rec_load_reader *r, uint64_t wall_ns, zs_load *out, double *nt)
{
    const zs_pktsrc_layout *l = &r->layout;
    uint64_t word = 0, vptr = 0, stats[ZS_PKTSRC_STATS_SIZE / 8];
    uint8_t live = 0;
    double t = 0;
    struct iovec local[4], remote[4];
    size_t n = 0;
    if (r->network_time) {
        local[n] = (struct iovec){&t, sizeof t};
        remote[n++] = (struct iovec){(void *)(uintptr_t)r->network_time, sizeof t};
    }
    int32_t stats_at = r->src_af_packet ? l->af_packet_stats : l->pcap_stats;
    int32_t live_at = r->src_af_packet ? l->af_packet_is_live : l->pcap_is_live;
    if (r->src) {
        local[n] = (struct iovec){&vptr, sizeof vptr};
        remote[n++] = (struct iovec){(void *)(uintptr_t)r->src, sizeof vptr};
        local[n] = (struct iovec){stats, sizeof stats};
        remote[n++] = (struct iovec){(void *)(uintptr_t)(r->src + (uint64_t)stats_at), sizeof stats};
        local[n] = (struct iovec){&live, sizeof live};
        remote[n++] = (struct iovec){(void *)(uintptr_t)(r->src + (uint64_t)live_at), sizeof live};
    } else if (r->mgr_global) {
        uint64_t from = r->node ? r->node + ZS_LIST_NODE_VALUE
                        : r->mgr ? r->mgr + (uint64_t)l->mgr_pkt_src
                                 : r->mgr_global;
        local[n] = (struct iovec){&word, sizeof word};
        remote[n++] = (struct iovec){(void *)(uintptr_t)from, sizeof word};
    }
    if (!n || rec_readv(r->pid, local, remote, n) != 0) {
        r->mgr = r->node = r->src = 0; /* start over next second */
        return;
    }
    if (r->network_time)
        *nt = t;
    if (!r->src) {
        if (!r->mgr)
            r->mgr = word;
        else if (l->mgr_list && !r->node)
            /* The list's first node; an empty list's is the list itself. */
            r->node = word != r->mgr + (uint64_t)l->mgr_pkt_src ? word : 0;
        else if (word)
            r->src = word; /* its kind by its vtable pointer, next second */
        r->src_af_packet = 0;
        return;
    }
    int pcap = vptr && vptr == r->pcap_vtable, af = vptr && vptr == r->af_packet_vtable;
    if (!r->src_af_packet && !pcap && af && l->sym_af_packet_vtable[0]) {
        r->src_af_packet = 1; /* counters at AF_Packet's offsets, next second */
        return;
    }
    if (!(r->src_af_packet ? af : pcap)) {
        r->src = r->node = 0; /* replaced, or a source of a kind the layout does not know */
        return;
    }
    out->what |= ZS_LOAD_COUNTERS | (live ? ZS_LOAD_LIVE : 0) | (r->src_af_packet ? ZS_LOAD_AF_PACKET : 0);
    out->received = stats[ZS_PKTSRC_STATS_RECEIVED / 8];
    out->dropped = stats[ZS_PKTSRC_STATS_DROPPED / 8];
    out->link = stats[ZS_PKTSRC_STATS_LINK / 8];
    out->bytes = stats[ZS_PKTSRC_STATS_BYTES / 8];
    if (live && t > 0) {
        double lag = (double)wall_ns / 1e9 - t;
        out->what |= ZS_LOAD_LAG;
        out->lag_us = lag > 0 ? (uint64_t)(lag * 1e6) : 0;
    }
}

void rec_load_read(rec_load_reader *r, uint64_t now_ns, uint64_t wall_ns, zs_load *out, double *nt)
{
    out->what = 0;
    read_source(r, wall_ns, out, nt);
    /* A zeek reading a trace has no queue in front of it. */
    int trace = (out->what & ZS_LOAD_COUNTERS) && !(out->what & ZS_LOAD_LIVE);
    if (!trace && packet_queue(r, now_ns, &out->queue))
        out->what |= ZS_LOAD_QUEUE;
}
