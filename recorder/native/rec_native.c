/* SPDX-License-Identifier: BSD-3-Clause */
#include "native/rec_native.h"
#include "base/rec_constants.h"
#include "zs_grow.h"
#include "zs_intern.h"
#include "zs_maps.h"

#include "base/rec_clock.h"
#include "native/rec_mixed.h"
#include "base/rec_signals.h"
#include "native/rec_unwind_msg.h"
#include "native/rec_unwinder.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

/* How long an answer may take: the first unwind after a module list parses
 * the modules' unwind tables, a zeek binary's among them. */
enum { ANSWER_MS = 3000, MAX_SYMBOLS = 1 << 20, MAX_MODULES = 1 << 16, MAX_LOCATIONS = 1 << 22 };
enum { MAX_LINES = 1 << 23 }; /* source lines of all locations */


/* A message waiting for room in the socket (see post). */
typedef struct outbox_msg {
    uint32_t type, arg;
    void *payload;
    size_t len;
    int fd; /* -1: none */
} outbox_msg;

typedef struct asked_copy {
    uint64_t rsp, len;
} asked_copy;

/* Answers taken several to a system call, handed out one at a time. */
enum { RX_MAX = 16 };
/* Captures sent several to a system call, when the caller flushes (or
 * waits for an answer): at most TX_MAX of them, TX_BYTES in all. */
enum { TX_MAX = 128, TX_BYTES = 1 << 20 };

struct rec_native {
    pid_t pid;
    pid_t child;
    int sock;           /* -1 once the unwinder is gone */
    const char *broken; /* why it is gone */
    asked_copy asked[REC_NATIVE_ASKED]; /* a ring, the oldest at asked_head */
    unsigned asked_head;
    rec_stack_plan plan; /* what the answers say of the stack */
    /* Symbols by id, as the unwinder named them. */
    char **names;
    uint8_t *entry;
    size_t nnames, names_cap, entry_cap;
    /* Modules and locations by id, as the unwinder sent them. */
    rec_native_module *modules;
    size_t nmodules, modules_cap;
    rec_native_location *locations;
    size_t nlocations, locations_cap;
    rec_native_line *lines; /* the locations' source lines, in one pool */
    size_t nlines, lines_cap;
    uint64_t last_refresh_ns;
    unsigned refreshes;
    uint64_t started_ns;
    uint64_t files_hash; /* of the file-backed maps lines the unwinder has */
    uint64_t followed_ns; /* rec_native_follow_modules' last look */
    unsigned outstanding; /* unwinds asked for, not answered yet (the last ntx still queued) */
    uint64_t asked_ns;    /* when the oldest of them was sent */
    uint64_t truncated;
    uint64_t general; /* unwinds libdwfl's general path made */
    int copier;       /* no unwinder: the window's copy is for ZAM alone */
    outbox_msg *outbox; /* [outbox_head, noutbox): not sent yet, oldest first */
    size_t outbox_head, noutbox, outbox_cap;
    uint64_t outbox_moved_ns; /* when the socket last took one of them */
    const uint8_t *msg; /* the answer being read: one of rx */
    uint8_t rx[RX_MAX][UW_MAX_ANSWER];
    struct iovec rx_iov[RX_MAX];
    struct mmsghdr rx_m[RX_MAX];
    unsigned rx_count, rx_next; /* received, and the next to hand out */
    uint8_t *tx;                /* captures not sent yet, each a whole message */
    size_t tx_used, tx_cap, tx_at[TX_MAX + 1], ntx;
};

static void outbox_clear(rec_native *n);

/* The unwinder is of no more use: it goes, and the samples keep their
 * script frames. */
static void give_up(rec_native *n, const char *why)
{
    if (n->sock >= 0) {
        close(n->sock);
        n->sock = -1;
    }
    outbox_clear(n);
    free(n->tx);
    n->tx = NULL;
    n->tx_used = n->tx_cap = n->ntx = 0;
    /* Killed, not waited for: a dying process's teardown can take longer
     * than a tick (hundreds of ms for a sanitized one on a busy host); the
     * sampling loop reaps it with the targets' stops. */
    if (n->child > 0) {
        kill(n->child, SIGKILL);
        n->child = 0;
    }
    if (!n->broken)
        n->broken = why;
}

/* One message of up to two payload parts, with a descriptor when fd >= 0,
 * if the socket has room now: 0, -2 when it has not, -1 when the unwinder
 * is gone. Never waits: an unwinder that stopped reading must not stop the
 * recorder. */
static int send_parts(rec_native *n, uint32_t type, uint32_t arg, const void *part1, size_t len1,
                      const void *part2, size_t len2, int fd)
{
    rec_unwind_head h = {type, arg};
    struct iovec iov[3] = {{&h, sizeof h}, {(void *)part1, len1}, {(void *)part2, len2}};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 3};
    if (fd >= 0) {
        memset(&control, 0, sizeof control);
        m.msg_control = control.buf;
        m.msg_controllen = sizeof control.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    for (;;) {
        if (n->sock < 0)
            return -1;
        if (sendmsg(n->sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN)
            return -2;
        give_up(n, "the unwinder exited");
        return -1;
    }
}

static void outbox_drop_head(rec_native *n)
{
    outbox_msg *o = &n->outbox[n->outbox_head++];
    if (o->fd >= 0)
        close(o->fd);
    free(o->payload);
    if (n->outbox_head == n->noutbox)
        n->outbox_head = n->noutbox = 0;
}

static void outbox_clear(rec_native *n)
{
    while (n->outbox_head < n->noutbox)
        outbox_drop_head(n);
    free(n->outbox);
    n->outbox = NULL;
    n->outbox_cap = 0;
}

/* Sends what waits in the outbox, oldest first, as far as the socket has
 * room: 0 when it is empty, -2 when some still waits, -1 when the unwinder
 * is given up (gone, or it took nothing for ANSWER_MS). */
static int outbox_flush(rec_native *n)
{
    while (n->outbox_head < n->noutbox) {
        outbox_msg *o = &n->outbox[n->outbox_head];
        int rc = send_parts(n, o->type, o->arg, o->payload, o->len, NULL, 0, o->fd);
        if (rc == -2 && rec_now_ns() - n->outbox_moved_ns > (uint64_t)ANSWER_MS * 1000000ULL) {
            give_up(n, "the unwinder stopped reading for 3 s");
            return -1;
        }
        if (rc)
            return rc;
        outbox_drop_head(n);
        n->outbox_moved_ns = rec_now_ns();
    }
    return 0;
}

/* A message the unwinder must have before the next capture (a module
 * list's part): sent now if the socket has room, else kept, with a copy of
 * fd, for outbox_flush, which every submit calls first. 0, or -1 when the
 * unwinder is gone or there is no memory. */
static int post(rec_native *n, uint32_t type, uint32_t arg, const void *payload, size_t len, int fd)
{
    int rc = n->outbox_head < n->noutbox ? -2 : send_parts(n, type, arg, payload, len, NULL, 0, fd);
    if (rc != -2)
        return rc;
    if (n->outbox_head == n->noutbox)
        n->outbox_moved_ns = rec_now_ns();
    void *copy = malloc(len ? len : 1);
    int fd_copy = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (!copy || (fd >= 0 && fd_copy < 0) ||
        zs_grow(&n->outbox, &n->outbox_cap, n->noutbox + 1, sizeof *n->outbox, 16)) {
        free(copy);
        if (fd_copy >= 0)
            close(fd_copy);
        give_up(n, "out of memory for the unwinder's module list");
        return -1;
    }
    memcpy(copy, payload, len);
    n->outbox[n->noutbox++] = (outbox_msg){type, arg, copy, len, fd_copy};
    return 0;
}

/* A module file as the target maps it (its own mount namespace, deleted
 * or replaced since), else by its path. Opened by root, parsed by nobody. */
static int open_module(pid_t pid, const char *range, const char *path)
{
    char p[96];
    snprintf(p, sizeof p, "/proc/%d/map_files/%s", (int)pid, range);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    return fd >= 0 ? fd : open(path, O_RDONLY | O_CLOEXEC);
}

/* The vdso, copied from the target into a memory file: its unwind table
 * for samples taken in clock_gettime and friends. */
static int vdso_image(pid_t pid, uint64_t start, uint64_t end)
{
    size_t len = (size_t)(end - start);
    if (end <= start || len > (1 << 20))
        return -1;
    void *buf = malloc(len);
    int fd = buf ? memfd_create("zeek-spy-vdso", MFD_CLOEXEC) : -1;
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)start, len};
    if (fd >= 0 && (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)len ||
                    write(fd, buf, len) != (ssize_t)len)) {
        close(fd);
        fd = -1;
    }
    free(buf);
    return fd;
}

static int seen_before(char **paths, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(paths[i], path) == 0)
            return 1;
    return 0;
}

/* A maps line that names a file, into the hash: what changes when a
 * library or plugin is mapped, not when the heap grows. */
static uint64_t hash_file_line(uint64_t h, const char *line, size_t len, const char *path)
{
    return path[0] == '/' ? zs_fnv1a(h, line, len) : h;
}

/* Sends the target's modules: each file once, then /proc/PID/maps, then
 * the vdso. The unwinder reads nothing of the target by itself. */
static int send_modules(rec_native *n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)n->pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    /* A line as long as its path (up to PATH_MAX and more): read whole, or
     * its tail would pass for a line of its own. */
    char *text = NULL, **paths = NULL, *line = NULL;
    size_t len = 0, text_cap = 0, npaths = 0, paths_cap = 0, line_cap = 0;
    uint64_t vdso_start = 0, vdso_end = 0, files_hash = ZS_FNV_SEED;
    int rc = 0;
    ssize_t got;
    while (rc == 0 && (got = getline(&line, &line_cap, f)) > 0) {
        size_t l = (size_t)got;
        if (len + l > UW_MAX_MAPS || zs_grow(&text, &text_cap, len + l, 1, 64 << 10)) {
            rc = -1;
            break;
        }
        memcpy(text + len, line, l);
        len += l;
        line[strcspn(line, "\n")] = '\0';
        zs_maps_line m;
        if (zs_maps_parse(line, strlen(line), &m))
            continue;
        const char *name = m.path; /* runs to the line's end: a string */
        files_hash = hash_file_line(files_hash, line, strlen(line), name);
        if (strcmp(name, "[vdso]") == 0) {
            vdso_start = m.start;
            vdso_end = m.end;
        }
        if (name[0] != '/' || seen_before(paths, npaths, name))
            continue;
        char *copy = strdup(name);
        if (!copy || zs_grow(&paths, &paths_cap, npaths + 1, sizeof *paths, 64)) {
            free(copy);
            rc = -1;
            break;
        }
        paths[npaths++] = copy;
        char range[48];
        snprintf(range, sizeof range, "%" PRIx64 "-%" PRIx64, m.start, m.end);
        int fd = open_module(n->pid, range, name);
        if (fd >= 0) {
            rc = post(n, UW_FILE, 0, name, strlen(name), fd);
            close(fd);
        }
    }
    fclose(f);
    free(line);
    for (size_t i = 0; i < npaths; i++)
        free(paths[i]);
    free(paths);
    for (size_t at = 0; rc == 0 && at < len; at += UW_MAPS_PART)
        rc = post(n, UW_MAPS_TEXT, 0, text + at, len - at < UW_MAPS_PART ? len - at : UW_MAPS_PART, -1);
    free(text);
    if (rc == 0) {
        int vdso = vdso_start ? vdso_image(n->pid, vdso_start, vdso_end) : -1;
        rc = post(n, UW_MAPS_END, vdso >= 0, &vdso_start, sizeof vdso_start, vdso);
        if (vdso >= 0)
            close(vdso);
    }
    n->last_refresh_ns = rec_now_ns();
    n->files_hash = files_hash;
    return rc;
}

/* The file-backed lines of the target's maps, hashed as send_modules
 * hashes them; 0 when they cannot be read. */
static uint64_t files_hash_now(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    uint64_t h = ZS_FNV_SEED;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) > 0) {
        line[strcspn(line, "\n")] = '\0';
        zs_maps_line m;
        if (zs_maps_parse(line, strlen(line), &m) == 0)
            h = hash_file_line(h, line, strlen(line), m.path);
    }
    free(line);
    fclose(f);
    return h;
}

int rec_native_follow_modules(rec_native *n, uint64_t now_ns)
{
    if (n->sock < 0 || n->copier || now_ns - n->started_ns > REC_NATIVE_FOLLOW_MODULES_NS ||
        now_ns - n->followed_ns < REC_NATIVE_FOLLOW_EVERY_NS)
        return 0;
    n->followed_ns = now_ns;
    uint64_t h = files_hash_now(n->pid);
    if (!h || h == n->files_hash)
        return 0;
    return send_modules(n) == 0 ? 1 : -1;
}

/* A launched zeek maps its libraries in its first milliseconds: the first
 * refreshes come at once, later ones at most ten a second. */
static int may_refresh(rec_native *n)
{
    if (n->refreshes < 50 || rec_now_ns() - n->last_refresh_ns > 100000000ULL) {
        n->refreshes++;
        return 1;
    }
    return 0;
}

/* How long the unwinder lets captures queue up once it has caught up:
 * REC_NATIVE_BATCH of them at rate_hz, at most REC_NATIVE_BATCH_MAX_MS. */
unsigned rec_native_batch_ms(unsigned rate_hz)
{
    unsigned ms = rate_hz ? REC_NATIVE_BATCH * 1000u / rate_hz : 0;
    return ms < REC_NATIVE_BATCH_MAX_MS ? ms : REC_NATIVE_BATCH_MAX_MS;
}

rec_native *rec_native_new(pid_t pid, unsigned rate_hz, zs_error *err)
{
    rec_native *n = calloc(1, sizeof *n);
    if (!n) {
        zs_fail(err, ZS_E_NOMEM, "native frames");
        return NULL;
    }
    n->pid = pid;
    n->started_ns = rec_now_ns();
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        zs_fail(err, ZS_E_IO, "pid %d: native frames: socketpair: %s", (int)pid, strerror(errno));
        free(n);
        return NULL;
    }
    n->child = fork();
    if (n->child == 0) {
        close(sv[0]);
        rec_unwinder_main(sv[1], rec_native_batch_ms(rate_hz));
    }
    close(sv[1]);
    n->sock = sv[0];
    /* Room for every unwind out (while the unwinder is still reading the
     * modules' tables, the first ones queue up), of copies the size they
     * have before the stack's base is known (those to the base are
     * smaller; a socket full of larger ones makes the next sample go
     * without, counted): a limit, the memory used is what is queued. */
    int room = REC_NATIVE_SOCKET_CAPTURES *
               (int)(sizeof(struct user_regs_struct) + REC_NATIVE_STACK_BYTES + 64);
    if (setsockopt(n->sock, SOL_SOCKET, SO_SNDBUFFORCE, &room, sizeof room) != 0)
        setsockopt(n->sock, SOL_SOCKET, SO_SNDBUF, &room, sizeof room);
    if (n->child < 0) {
        zs_fail(err, ZS_E_IO, "pid %d: native frames: fork: %s", (int)pid, strerror(errno));
        n->child = 0;
        rec_native_free(n);
        return NULL;
    }
    if (send_modules(n) != 0) {
        zs_fail(err, ZS_E_TARGET, "pid %d: native unwinding cannot start: %s", (int)pid,
                n->broken ? n->broken : "its modules cannot be read");
        rec_native_free(n);
        return NULL;
    }
    return n;
}

rec_native *rec_native_copier(pid_t pid)
{
    rec_native *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->pid = pid;
    n->sock = -1;
    n->copier = 1;
    return n;
}

int rec_native_is_copier(const rec_native *n) { return n && n->copier; }

void rec_native_free(rec_native *n)
{
    if (!n)
        return;
    give_up(n, NULL);
    for (size_t i = 0; i < n->nnames; i++)
        free(n->names[i]);
    free(n->names);
    free(n->entry);
    for (size_t i = 0; i < n->nmodules; i++)
        free(n->modules[i].path);
    free(n->modules);
    free(n->locations);
    free(n->lines);
    free(n);
}

void rec_native_stack_plan(const rec_native *n, rec_stack_plan *plan) { *plan = n->plan; }

/* The next message from the unwinder; its payload length, -1 when it is
 * gone (or, final, the deadline passed), -2 when none is there yet
 * (deadline 0: do not wait; or not final and the deadline passed) or a
 * stop signal came first. */
static ssize_t receive(rec_native *n, rec_unwind_head *h, uint64_t deadline, int final)
{
    for (;;) {
        if (n->rx_next < n->rx_count) {
            const struct mmsghdr *m = &n->rx_m[n->rx_next];
            n->msg = n->rx[n->rx_next++];
            if (m->msg_len == 0 || m->msg_len < sizeof *h || (m->msg_hdr.msg_flags & MSG_TRUNC)) {
                give_up(n, m->msg_len == 0 ? "the unwinder exited (crashed?)"
                                           : "the unwinder's answer was cut or too long");
                return -1;
            }
            memcpy(h, n->msg, sizeof *h);
            return (ssize_t)m->msg_len - (ssize_t)sizeof *h;
        }
        /* What is there is taken without a poll first, as many answers as
         * there are in one system call, and one for finding none. */
        n->rx_next = n->rx_count = 0;
        for (unsigned k = 0; k < RX_MAX; k++) {
            n->rx_iov[k] = (struct iovec){n->rx[k], sizeof n->rx[k]};
            n->rx_m[k] = (struct mmsghdr){.msg_hdr = {.msg_iov = &n->rx_iov[k], .msg_iovlen = 1}};
        }
        int got = recvmmsg(n->sock, n->rx_m, RX_MAX, MSG_DONTWAIT, NULL);
        if (got > 0) {
            n->rx_count = (unsigned)got;
            continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            uint64_t now = rec_now_ns();
            if (!deadline || (now >= deadline && !final))
                return -2;
            if (now >= deadline) {
                give_up(n, "the unwinder did not answer within 3 s");
                return -1;
            }
            struct pollfd p = {n->sock, POLLIN, 0};
            if (poll(&p, 1, (int)((deadline - now) / 1000000) + 1) < 0 && errno == EINTR &&
                rec_signals_stop_requested())
                return -2;
            continue;
        }
        give_up(n, "the unwinder exited (crashed?)");
        return -1;
    }
}

/* A name the unwinder sent: ids come in order, names within bounds. */
static int add_name(rec_native *n, const rec_unwind_head *h, size_t len)
{
    if (h->arg != n->nnames || len == 0 || len >= UW_MAX_NAME || n->nnames >= MAX_SYMBOLS) {
        give_up(n, "the unwinder named a symbol out of order");
        return -1;
    }
    int room = !zs_grow(&n->names, &n->names_cap, n->nnames + 1, sizeof *n->names, 1024) &&
               !zs_grow(&n->entry, &n->entry_cap, n->nnames + 1, 1, 1024);
    char *name = room ? strndup((const char *)n->msg + sizeof *h, len) : NULL;
    if (!name) {
        give_up(n, "out of memory for native symbols");
        return -1;
    }
    n->names[n->nnames] = name;
    n->entry[n->nnames] = (uint8_t)rec_mixed_is_entry(name);
    n->nnames++;
    return 0;
}

/* A module the unwinder sent: in order, a range, lengths that add up, a
 * path with no NUL. */
static int add_module(rec_native *n, const rec_unwind_head *h, size_t len)
{
    rec_unwind_module m;
    const uint8_t *p = n->msg + sizeof *h;
    if (h->arg != n->nmodules || n->nmodules >= MAX_MODULES || len < sizeof m)
        return give_up(n, "the unwinder sent a module out of order"), -1;
    memcpy(&m, p, sizeof m);
    if (m.start >= m.end || m.build_id_len > UW_MAX_BUILD_ID || m.path_len == 0 ||
        m.path_len > UW_MAX_PATH || len != sizeof m + m.build_id_len + m.path_len ||
        memchr(p + sizeof m + m.build_id_len, '\0', m.path_len))
        return give_up(n, "the unwinder sent a module out of bounds"), -1;
    int room = !zs_grow(&n->modules, &n->modules_cap, n->nmodules + 1, sizeof *n->modules, 16);
    char *path = room ? strndup((const char *)p + sizeof m + m.build_id_len, m.path_len) : NULL;
    if (!path)
        return give_up(n, "out of memory for native modules"), -1;
    rec_native_module *mod = &n->modules[n->nmodules++];
    *mod = (rec_native_module){m.start, m.end, m.file_offset, "", path};
    static const char hex[] = "0123456789abcdef";
    for (uint32_t i = 0; i < m.build_id_len; i++) {
        mod->build_id[2 * i] = hex[p[sizeof m + i] >> 4];
        mod->build_id[2 * i + 1] = hex[p[sizeof m + i] & 15];
    }
    mod->build_id[2 * m.build_id_len] = '\0';
    return 0;
}

/* A location the unwinder sent: in order, of a symbol and module it sent
 * before, within that module's range. */
static int add_location(rec_native *n, const rec_unwind_head *h, size_t len)
{
    rec_unwind_location l;
    if (h->arg != n->nlocations || n->nlocations >= MAX_LOCATIONS || len != sizeof l)
        return give_up(n, "the unwinder sent a location out of order"), -1;
    memcpy(&l, n->msg + sizeof *h, sizeof l);
    const rec_native_module *m = l.module && l.module <= n->nmodules ? &n->modules[l.module - 1] : NULL;
    if (l.symbol >= n->nnames || l.module > n->nmodules ||
        (m && (l.address < m->start || l.address >= m->end)))
        return give_up(n, "the unwinder sent a location out of bounds"), -1;
    if (zs_grow(&n->locations, &n->locations_cap, n->nlocations + 1, sizeof *n->locations, 1024))
        return give_up(n, "out of memory for native locations"), -1;
    n->locations[n->nlocations++] = (rec_native_location){l.address, l.module, l.symbol, 0, 0};
    return 0;
}

/* The source lines of the location just sent: once, 1 to UW_MAX_INLINE of
 * them, of names sent before, on lines a file can have. */
static int add_lines(rec_native *n, const rec_unwind_head *h, size_t len)
{
    rec_unwind_line l[UW_MAX_INLINE];
    size_t count = len / sizeof l[0];
    rec_native_location *at = n->nlocations ? &n->locations[n->nlocations - 1] : NULL;
    if (!at || h->arg != n->nlocations - 1 || at->nlines || count == 0 || count > UW_MAX_INLINE ||
        len != count * sizeof l[0] || n->nlines + count > MAX_LINES)
        return give_up(n, "the unwinder sent lines out of order"), -1;
    memcpy(l, n->msg + sizeof *h, len);
    for (size_t i = 0; i < count; i++)
        if (l[i].function >= n->nnames || l[i].file >= n->nnames || l[i].line == 0 ||
            l[i].line > UW_MAX_LINE)
            return give_up(n, "the unwinder sent lines out of bounds"), -1;
    if (zs_grow(&n->lines, &n->lines_cap, n->nlines + count, sizeof *n->lines, 1024))
        return give_up(n, "out of memory for native lines"), -1;
    for (size_t i = 0; i < count; i++)
        n->lines[n->nlines + i] = (rec_native_line){l[i].function, l[i].file, l[i].line};
    at->line_at = (uint32_t)n->nlines;
    at->nlines = (uint32_t)count;
    n->nlines += count;
    return 0;
}

int rec_native_flush(rec_native *n)
{
    int rc = n->sock < 0 ? -1 : outbox_flush(n);
    if (rc || !n->ntx)
        return rc;
    struct mmsghdr m[TX_MAX];
    struct iovec iov[TX_MAX];
    for (size_t k = 0; k < n->ntx; k++) {
        iov[k] = (struct iovec){n->tx + n->tx_at[k], n->tx_at[k + 1] - n->tx_at[k]};
        m[k] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[k], .msg_iovlen = 1}};
    }
    int sent;
    while ((sent = sendmmsg(n->sock, m, (unsigned)n->ntx, MSG_NOSIGNAL | MSG_DONTWAIT)) < 0 && errno == EINTR)
        ;
    if (sent < 0 && errno != EAGAIN) {
        give_up(n, "the unwinder exited");
        return -1;
    }
    if (sent <= 0)
        return -2; /* no room: they wait for the next flush */
    /* The oldest capture asked for was still here (queued since a poll
     * took it, up to a cut before): its answer's clock starts now. */
    if (n->ntx == n->outstanding)
        n->asked_ns = rec_now_ns();
    size_t done = (size_t)sent, from = n->tx_at[done];
    memmove(n->tx, n->tx + from, n->tx_used - from);
    for (size_t k = done; k <= n->ntx; k++)
        n->tx_at[k - done] = n->tx_at[k] - from;
    n->ntx -= done;
    n->tx_used -= from;
    return n->ntx ? -2 : 0;
}

int rec_native_submit(rec_native *n, const rec_raw_native *c)
{
    if (n->sock < 0 || !c->taken || !c->stack_len)
        return -1;
    if (n->outstanding == REC_NATIVE_ASKED)
        return REC_NATIVE_NOT_YET;
    rec_unwind_head h = {UW_UNWIND, (uint32_t)c->stack_len};
    size_t len = sizeof h + sizeof c->regs + c->stack_len;
    if ((n->ntx == TX_MAX || n->tx_used + len > TX_BYTES) && rec_native_flush(n) == -1)
        return -1;
    if (n->ntx == TX_MAX || n->tx_used + len > TX_BYTES)
        return REC_NATIVE_NOT_YET; /* the unwinder is behind */
    if (zs_grow(&n->tx, &n->tx_cap, n->tx_used + len, 1, 64 << 10))
        return REC_NATIVE_NOT_YET;
    uint8_t *at = n->tx + n->tx_used;
    memcpy(at, &h, sizeof h);
    memcpy(at + sizeof h, &c->regs, sizeof c->regs);
    memcpy(at + sizeof h + sizeof c->regs, c->stack, c->stack_len);
    n->tx_at[n->ntx] = n->tx_used;
    n->tx_used += len;
    n->tx_at[++n->ntx] = n->tx_used;
    n->asked[(n->asked_head + n->outstanding) % REC_NATIVE_ASKED] =
        (asked_copy){c->regs.rsp, c->stack_len};
    if (!n->outstanding++)
        n->asked_ns = rec_now_ns();
    return 0;
}

/* The frames' stack pointers, innermost first: from the copy's rsp up,
 * never down, never past its end (the unwinder read each frame's return
 * address inside the copy). */
static int stack_pointers_ok(const uint64_t *sps, size_t count, asked_copy c)
{
    uint64_t at = c.rsp;
    for (size_t i = 0; i < count; i++) {
        if (sps[i] < at || sps[i] - c.rsp > c.len)
            return 0;
        at = sps[i];
    }
    return 1;
}

/* A RESULT's frames into frames, outermost first, each with its extent
 * [sp, cfa): the next outer frame's sp is its CFA; the outermost one's,
 * unknown, is taken as the copy's end. -1 when out of bounds. */
static ssize_t take_result(rec_native *n, const rec_unwind_head *h, size_t len,
                           rec_mixed_native *frames, size_t max, unsigned *marks)
{
    uint32_t ids[1 + UW_MAX_FRAMES];
    uint64_t sps[UW_MAX_FRAMES];
    asked_copy c = n->asked[n->asked_head];
    n->asked_head = (n->asked_head + 1) % REC_NATIVE_ASKED;
    if (h->arg > UW_MAX_FRAMES || len != (1 + h->arg) * sizeof ids[0] + h->arg * sizeof sps[0]) {
        give_up(n, "the unwinder's answer was out of bounds");
        return -1;
    }
    memcpy(ids, n->msg + sizeof *h, (1 + h->arg) * sizeof ids[0]);
    memcpy(sps, n->msg + sizeof *h + (1 + h->arg) * sizeof ids[0], h->arg * sizeof sps[0]);
    if (!stack_pointers_ok(sps, h->arg, c)) {
        give_up(n, "the unwinder's stack pointers were out of bounds");
        return -1;
    }
    size_t m = h->arg < max ? h->arg : max;
    for (size_t i = 0; i < m; i++) {
        size_t inner = h->arg - 1 - i; /* innermost first from the unwinder */
        uint32_t id = ids[1 + inner];
        if (id >= n->nlocations) {
            give_up(n, "the unwinder's answer named no known location");
            return -1;
        }
        uint64_t cfa = inner + 1 < h->arg ? sps[inner + 1] : c.rsp + c.len;
        frames[i] = (rec_mixed_native){zs_native_frame(id), n->entry[n->locations[id].symbol], sps[inner], cfa};
    }
    uint32_t flags = ids[0];
    *marks = 0;
    n->plan.last_beyond = (flags & UW_BEYOND_COPY) != 0;
    /* A whole unwind: its outermost frame is the thread's entry, the base
     * of every later stack (a fiber's stack or a module list out of date
     * says nothing of it). */
    if (h->arg && !(flags & (UW_BEYOND_COPY | UW_ON_FIBER | UW_OUTSIDE_MODULES))) {
        uint64_t base = sps[h->arg - 1] + REC_NATIVE_STACK_BASE_SLACK;
        if (base > n->plan.base && base - c.rsp <= REC_NATIVE_STACK_MAX)
            n->plan.base = base;
    }
    if (flags & UW_BEYOND_COPY) {
        *marks |= REC_NATIVE_TRUNCATED;
        n->truncated++;
    }
    if (flags & UW_ON_FIBER)
        *marks |= REC_NATIVE_ON_FIBER;
    n->general += (flags & UW_GENERAL_PATH) != 0;
    /* A PC outside the modules: a library or plugin mapped since; the next
     * stacks are unwound with it. */
    if ((flags & UW_OUTSIDE_MODULES) && may_refresh(n))
        send_modules(n);
    return (ssize_t)m;
}

ssize_t rec_native_collect(rec_native *n, rec_mixed_native *frames, size_t max, unsigned *marks,
                           uint64_t wait_until_ns)
{
    *marks = 0;
    if (n->sock < 0 || !n->outstanding || rec_native_flush(n) == -1)
        return -1;
    /* The answer has ANSWER_MS from when it was asked for: waiting that
     * long in vain gives the unwinder up. */
    uint64_t answer_by = n->asked_ns + (uint64_t)ANSWER_MS * 1000000ULL;
    int final = wait_until_ns >= answer_by;
    uint64_t deadline = final ? answer_by : wait_until_ns;
    for (;;) {
        rec_unwind_head h;
        ssize_t len = receive(n, &h, deadline, final);
        if (len == -2)
            return final ? -1 : REC_NATIVE_NOT_YET;
        if (len < 0)
            return -1;
        int added = h.type == UW_NAME       ? add_name(n, &h, (size_t)len)
                    : h.type == UW_MODULE   ? add_module(n, &h, (size_t)len)
                    : h.type == UW_LOCATION ? add_location(n, &h, (size_t)len)
                    : h.type == UW_LINES    ? add_lines(n, &h, (size_t)len)
                                            : 1;
        if (added < 0)
            return -1;
        if (added == 0)
            continue;
        if (h.type != UW_RESULT) {
            give_up(n, "the unwinder's answer was out of bounds");
            return -1;
        }
        n->outstanding--;
        n->asked_ns = rec_now_ns(); /* the next answer's clock starts now */
        return take_result(n, &h, (size_t)len, frames, max, marks);
    }
}

const char *rec_native_name(const rec_native *n, uint64_t id)
{
    return id < n->nnames ? n->names[id] : "[unknown]";
}

const rec_native_location *rec_native_location_of(const rec_native *n, uint64_t id)
{
    return id < n->nlocations ? &n->locations[id] : NULL;
}

const rec_native_module *rec_native_module_of(const rec_native *n, uint64_t id)
{
    return id < n->nmodules ? &n->modules[id] : NULL;
}

const rec_native_line *rec_native_lines_of(const rec_native *n, const rec_native_location *l)
{
    return l->nlines ? &n->lines[l->line_at] : NULL;
}

const char *rec_native_broken(const rec_native *n) { return n->broken; }

pid_t rec_native_unwinder(const rec_native *n)
{
    return n->child > 0 ? n->child : 0;
}

void rec_native_reaped(rec_native *n, pid_t pid)
{
    if (n->child == pid)
        n->child = 0; /* its socket reports the end */
}

uint64_t rec_native_truncated(const rec_native *n) { return n->truncated; }

uint64_t rec_native_general(const rec_native *n) { return n->general; }


int rec_native_describe(const rec_native *n, uint64_t id, rec_out_location *out, zs_module *module)
{
    const rec_native_location *l = rec_native_location_of(n, id);
    if (!l)
        return 0;
    *out = (rec_out_location){id, l->address, {l->symbol, rec_native_name(n, l->symbol)}, NULL, 0};
    const rec_native_module *m = l->module ? rec_native_module_of(n, l->module - 1) : NULL;
    if (m) {
        *module = (zs_module){l->module - 1, m->build_id, m->path, m->start, m->end, m->file_offset};
        out->module = module;
    }
    const rec_native_line *lines = rec_native_lines_of(n, l);
    if (lines && l->nlines <= ZS_MAX_INLINE) {
        out->nlines = l->nlines;
        for (size_t i = 0; i < l->nlines; i++)
            out->lines[i] = (rec_out_line){{lines[i].function, rec_native_name(n, lines[i].function)},
                                           {lines[i].file, rec_native_name(n, lines[i].file)},
                                           lines[i].line};
    }
    return 1;
}
