/* SPDX-License-Identifier: BSD-3-Clause */
#include "targets/rec_inspect.h"
#include "targets/rec_inspect_cache_priv.h"
#include "targets/rec_sandbox.h"
#include "base/rec_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zs_dwarf.h"

/* Address space beyond the mapped file (the executable and a separate
 * debug file are mapped whole): libdw's tables of a 500 MB DWARF fit. */
#define ELF_HEADROOM ((rlim_t)1 << 30)
#define DWARF_HEADROOM ((rlim_t)4 << 30)

static const char TEST_CRASH_ENV[] = "ZEEK_SPY_TEST_CRASH_INSPECT";
static const char TEST_SLOW_ENV[] = "ZEEK_SPY_TEST_SLOW_INSPECT";

/* ---- the child ---- */

static void write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(3);
        p += n;
        len -= (size_t)n;
    }
}

static void child(const rec_inspect_request *req, int exe_fd, int root_fd, int out_fd,
                  off_t file_size)
{
    int keep[] = {exe_fd, root_fd, out_fd};
    rec_sandbox_limits lim = {
        .cpu_seconds = req->want_dwarf ? REC_INSPECT_DWARF_SECONDS : REC_INSPECT_ELF_SECONDS,
        .address_space = (rlim_t)file_size + (req->want_dwarf ? DWARF_HEADROOM : ELF_HEADROOM),
        .open_files = 64,
        .nice = 10,
    };
    const char *who = req->real_path ? req->real_path : req->path;
    const char *slow = getenv(TEST_SLOW_ENV), *colon = slow ? strrchr(slow, ':') : NULL;
    if (colon && colon > slow) { /* "PATH-PART:MS": that executable's parse takes MS longer */
        char part[256];
        snprintf(part, sizeof part, "%.*s", (int)(colon - slow), slow);
        if (strstr(who, part))
            usleep((useconds_t)atoi(colon + 1) * 1000);
    }
    if (rec_sandbox_enter(&lim, keep, 3) != 0)
        _exit(2);
    const char *crash = getenv(TEST_CRASH_ENV);
    if (crash && *crash && strstr(who, crash))
        abort();

    rec_inspect_verdict *v = calloc(1, sizeof *v);
    if (!v)
        _exit(4);
    zs_elf_symbol syms[REC_INSPECT_MAX_SYMS];
    for (int i = 0; i < req->nsyms; i++)
        syms[i] = (zs_elf_symbol){.name = req->syms[i]};
    v->elf_rc = zs_elf_lookup_fd(exe_fd, req->path, syms, (size_t)req->nsyms, &v->info, &v->elf_err);
    for (int i = 0; i < req->nsyms; i++)
        v->syms[i] = (rec_inspect_symbol){syms[i].value, syms[i].size, syms[i].found};
    v->dwarf_rc = -1;
    if (req->want_dwarf && v->elf_rc == 0) {
        zs_dwarf_source src = {.fd = exe_fd, .name = req->path, .real_path = req->real_path,
                               .root_fd = root_fd};
        v->dwarf_rc = zs_dwarf_layout_from(&src, v->info.build_id, req->zeek_version, &v->layout,
                                           &v->dwarf_err);
    }
    write_all(out_fd, v, sizeof *v);
    _exit(0);
}

/* ---- the parent ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads the verdict until it is whole, the child closes the pipe, or the
 * deadline passes; the number of bytes read, or -1 on timeout. */
static ssize_t read_verdict(int fd, int cancel_fd, rec_inspect_verdict *v, double deadline)
{
    size_t got = 0;
    while (got < sizeof *v) {
        double left = deadline - now_s();
        if (left <= 0)
            return -1;
        struct pollfd p[2] = {{fd, POLLIN, 0}, {cancel_fd > 0 ? cancel_fd : -1, POLLIN, 0}};
        int r = poll(p, 2, (int)(left * 1000) + 1);
        if ((r < 0 && errno == EINTR && rec_signals_stop_requested()) || (r > 0 && p[1].revents))
            return -2; /* told to stop: a long DWARF parse must not delay it */
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue;
        if (r < 0)
            return (ssize_t)got;
        ssize_t n = read(fd, (char *)v + got, sizeof *v - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Reaps the child: a child that has answered but does not exit, by the
 * deadline or when told to stop, is killed (a blocking wait would hold the
 * recorder for as long as it lingers). Returns 0 when it exited by itself. */
static int reap(pid_t pid, int cancel_fd, double deadline, int *status)
{
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        struct pollfd p = {cancel_fd > 0 ? cancel_fd : -1, POLLIN, 0};
        if (now_s() >= deadline || rec_signals_stop_requested() || poll(&p, 1, 5) > 0)
            break;
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    return -1;
}

static void terminate(zs_error *e)
{
    e->detail[sizeof e->detail - 1] = '\0';
    if (e->code < 0 || e->code >= ZS_E__COUNT)
        e->code = ZS_E_EXE_REFUSED;
}

/* The child may have been subverted: keep its answer within bounds. */
static int plausible(const rec_inspect_request *req, rec_inspect_verdict *v)
{
    terminate(&v->elf_err);
    terminate(&v->dwarf_err);
    v->info.build_id[sizeof v->info.build_id - 1] = '\0';
    if (strspn(v->info.build_id, "0123456789abcdef") != strlen(v->info.build_id))
        return 0;
    if ((v->elf_rc != 0 && v->elf_rc != -1) || (v->dwarf_rc != 0 && v->dwarf_rc != -1))
        return 0;
    if (v->dwarf_rc == 0) {
        zs_error err = {0};
        if (!req->want_dwarf || zs_layout_check(&v->layout, req->path, &err) != 0)
            return 0;
        zs_layout *l = &v->layout;
        char *names[] = {l->sym_call_stack, l->sym_frame_stack, l->sym_version,
                         l->sym_network_time};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            names[i][ZS_SYMBOL_MAX - 1] = '\0';
    }
    return 1;
}

static int run_child(const rec_inspect_request *req, int exe_fd, const struct stat *st,
                     rec_inspect_verdict *v, zs_error *err);

int rec_inspect(const rec_inspect_request *req, rec_inspect_verdict *v, zs_error *err)
{
    const char *shown = req->shown ? req->shown : req->path;
    memset(v, 0, sizeof *v);
    if (req->nsyms < 0 || req->nsyms > REC_INSPECT_MAX_SYMS)
        return zs_fail(err, ZS_E_USAGE, "%s: too many symbols to inspect", shown);
    /* Opened here, by root: nobody could not open another user's
     * /proc/PID/exe. Nothing is parsed on this side. */
    int exe_fd = open(req->path, O_RDONLY | O_CLOEXEC);
    if (exe_fd < 0)
        return zs_fail(err, errno == EACCES ? ZS_E_PERMISSION : ZS_E_IO, "%s: %s", req->path,
                       strerror(errno));
    struct stat st;
    if (fstat(exe_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(exe_fd);
        return zs_fail(err, ZS_E_NOT_ZEEK, "%s: not a regular file", req->path);
    }
    if ((int64_t)st.st_size > ZS_ELF_MAX_FILE_BYTES) { /* not worth a fork */
        close(exe_fd);
        return zs_fail(err, ZS_E_EXE_REFUSED,
                       "%s: %lld bytes, more than the %lld an executable may have to be parsed",
                       shown, (long long)st.st_size, (long long)ZS_ELF_MAX_FILE_BYTES);
    }
    if (req->cache) {
        int known = rec_inspect_cache_find(req->cache, &st, req, v, err);
        if (known <= 0) {
            close(exe_fd);
            return known;
        }
    }
    int rc = run_child(req, exe_fd, &st, v, err);
    /* Remember a verdict, or a refusal of the file itself (its parse
     * crashed or ran out of time: doing it again would end the same way). */
    if (req->cache && (rc == 0 || err->code == ZS_E_EXE_REFUSED))
        rec_inspect_cache_keep(req->cache, &st, req, rc, v, err);
    return rc;
}

/* Forks the sandboxed child on exe_fd (closed here) and takes its verdict. */
static int run_child(const rec_inspect_request *req, int exe_fd, const struct stat *stp,
                     rec_inspect_verdict *v, zs_error *err)
{
    const char *shown = req->shown ? req->shown : req->path;
    struct stat st = *stp;
    int root_fd = -1, pipefd[2];
    if (req->want_dwarf && req->root_dir)
        root_fd = open(req->root_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        int e = errno;
        close(exe_fd);
        if (root_fd >= 0)
            close(root_fd);
        return zs_fail(err, ZS_E_IO, "%s: pipe: %s", shown, strerror(e));
    }
    int seconds = req->want_dwarf ? REC_INSPECT_DWARF_SECONDS : REC_INSPECT_ELF_SECONDS;
    double deadline = now_s() + seconds;
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        child(req, exe_fd, root_fd, pipefd[1], st.st_size);
    }
    int fork_errno = errno;
    close(pipefd[1]);
    close(exe_fd);
    if (root_fd >= 0)
        close(root_fd);
    if (pid < 0) {
        close(pipefd[0]);
        return zs_fail(err, ZS_E_IO, "%s: fork: %s", shown, strerror(fork_errno));
    }
    ssize_t got = read_verdict(pipefd[0], req->cancel_fd, v, deadline);
    close(pipefd[0]);
    int status = 0;
    int lingered = reap(pid, req->cancel_fd, got < 0 ? 0 : deadline, &status);
    if (got == -2 || (lingered && (rec_signals_stop_requested() ||
                                   (req->cancel_fd > 0 && now_s() < deadline))))
        return zs_fail(err, ZS_E_TARGET, "%s: inspection interrupted by a stop signal", shown);
    if (got < 0 || lingered)
        return zs_fail(err, ZS_E_EXE_REFUSED,
                       "%s: parsing the executable took more than %d s; refused", shown, seconds);
    if (WIFSIGNALED(status))
        return zs_fail(err, ZS_E_EXE_REFUSED,
                       "%s: parsing the executable crashed (signal %d, %s%s); refused", shown,
                       WTERMSIG(status), strsignal(WTERMSIG(status)),
                       WTERMSIG(status) == SIGXCPU ? ", CPU limit" : "");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got != (ssize_t)sizeof *v)
        return zs_fail(err, ZS_E_EXE_REFUSED,
                       "%s: parsing the executable failed (exit %d%s); refused", shown,
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                       WIFEXITED(status) && WEXITSTATUS(status) == 2 ? ": cannot drop privileges"
                                                                     : "");
    if (!plausible(req, v))
        return zs_fail(err, ZS_E_EXE_REFUSED, "%s: parsing the executable gave an implausible "
                       "answer; refused", shown);
    return 0;
}
