#include "rec_inspect.h"
#include "rec_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zs_dwarf.h"

/* The unprivileged identity the parse runs under (nobody/nogroup). */
enum { NOBODY_ID = 65534 };

/* Address space beyond the mapped file (the executable and a separate
 * debug file are mapped whole): libdw's tables of a 500 MB DWARF fit. */
#define ELF_HEADROOM ((rlim_t)1 << 30)
#define DWARF_HEADROOM ((rlim_t)4 << 30)

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static const char TEST_CRASH_ENV[] = "ZEEK_SPY_TEST_CRASH_INSPECT";

/* ---- the child ---- */

/* Closes every descriptor but stdin/out/err and the ones in keep. */
static void close_others(const int *keep, int n)
{
    int sorted[4], m = 0;
    for (int i = 0; i < n; i++)
        if (keep[i] > 2)
            sorted[m++] = keep[i];
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            int t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    unsigned lo = 3;
    for (int i = 0; i < m; i++) {
        if ((unsigned)sorted[i] > lo)
            syscall(SYS_close_range, lo, (unsigned)sorted[i] - 1, 0);
        lo = (unsigned)sorted[i] + 1;
    }
    syscall(SYS_close_range, lo, ~0U, 0);
}

static void set_limit(int resource, rlim_t value)
{
    struct rlimit r = {value, value};
    setrlimit(resource, &r);
}

/* Everything the parse needs: reading and mapping files, opening separate
 * debug files, memory, the clock, exiting (abort included). Anything else
 * fails with EPERM instead of running. */
static int install_seccomp(void)
{
    static const int allowed[] = {
        SYS_read, SYS_pread64, SYS_write, SYS_close, SYS_fstat, SYS_newfstatat, SYS_statx,
        SYS_lseek, SYS_mmap, SYS_munmap, SYS_mremap, SYS_mprotect, SYS_brk, SYS_madvise,
        SYS_openat, SYS_openat2, SYS_readlink, SYS_readlinkat, SYS_getcwd, SYS_fcntl,
        SYS_futex, SYS_getrandom, SYS_clock_gettime, SYS_rt_sigprocmask, SYS_rt_sigreturn,
        SYS_getpid, SYS_gettid, SYS_tgkill, SYS_exit, SYS_exit_group,
        /* harmless, and needed by the sanitizers' runtime (ZS_SANITIZE) */
        SYS_sigaltstack, SYS_rt_sigaction, SYS_sched_yield, SYS_prlimit64, SYS_getrlimit,
    };
    enum { N = sizeof allowed / sizeof allowed[0] };
    struct sock_filter f[4 + N + 2];
    int k = 0;
    f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    for (int i = 0; i < N; i++) /* match: jump to ALLOW, the last instruction */
        f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i],
                                              (unsigned char)(N - i), 0);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {(unsigned short)k, f};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

/* Gives up everything the parse does not need; 0 when the child may go on
 * parsing. Root becomes nobody: a parser bug then owns nothing. */
static int sandbox(const int *keep, int nkeep, off_t file_size, int dwarf)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Dies with the recorder. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        return -1;
    /* The recorder may run SCHED_FIFO: a parse must not. */
    struct sched_param normal = {0};
    sched_setscheduler(0, SCHED_OTHER, &normal);
    setpriority(PRIO_PROCESS, 0, 10);

    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        if (null > 2)
            close(null);
    }
    close_others(keep, nkeep);

    int seconds = dwarf ? REC_INSPECT_DWARF_SECONDS : REC_INSPECT_ELF_SECONDS;
    struct rlimit cpu = {(rlim_t)seconds, (rlim_t)seconds + 1};
    setrlimit(RLIMIT_CPU, &cpu);
    set_limit(RLIMIT_CORE, 0);
    set_limit(RLIMIT_FSIZE, 0);
    set_limit(RLIMIT_NPROC, 0);
    set_limit(RLIMIT_NOFILE, 64);
#ifndef UNDER_ASAN /* ASan reserves terabytes of address space */
    set_limit(RLIMIT_AS, (rlim_t)file_size + (dwarf ? DWARF_HEADROOM : ELF_HEADROOM));
#endif

    if (geteuid() == 0 || getuid() == 0) {
        if (setgroups(0, NULL) != 0 || setresgid(NOBODY_ID, NOBODY_ID, NOBODY_ID) != 0 ||
            setresuid(NOBODY_ID, NOBODY_ID, NOBODY_ID) != 0)
            return -1;
        if (geteuid() == 0 || getuid() == 0) /* never parse as root */
            return -1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_DUMPABLE, 0) != 0)
        return -1;
    return install_seccomp();
}

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
    if (sandbox(keep, 3, file_size, req->want_dwarf) != 0)
        _exit(2);
    const char *crash = getenv(TEST_CRASH_ENV);
    const char *who = req->real_path ? req->real_path : req->path;
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
static ssize_t read_verdict(int fd, rec_inspect_verdict *v, double deadline)
{
    size_t got = 0;
    while (got < sizeof *v) {
        double left = deadline - now_s();
        if (left <= 0)
            return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR && rec_signals_stop_requested())
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
    ssize_t got = read_verdict(pipefd[0], v, deadline);
    close(pipefd[0]);
    if (got < 0)
        kill(pid, SIGKILL);
    if (got == -2) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return zs_fail(err, ZS_E_TARGET, "%s: inspection interrupted by a stop signal", shown);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got < 0)
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
