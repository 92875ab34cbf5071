/* SPDX-License-Identifier: BSD-3-Clause */
#include "targets/rec_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The unprivileged identity the parse runs under (nobody/nogroup). */
enum { NOBODY_ID = 65534 };

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* Closes every descriptor but stdin/out/err and the ones in keep. */
static void close_others(const int *keep, int n)
{
    int sorted[8], m = 0;
    for (int i = 0; i < n && m < 8; i++)
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

/* Everything a parse needs: reading and mapping files, opening separate
 * debug files, memory, the clock, messages on the descriptors it was given,
 * exiting (abort included). Anything else fails with EPERM instead of
 * running. */
static int install_seccomp(void)
{
    static const int allowed[] = {
        SYS_read, SYS_pread64, SYS_write, SYS_close, SYS_fstat, SYS_newfstatat, SYS_statx,
        SYS_lseek, SYS_mmap, SYS_munmap, SYS_mremap, SYS_mprotect, SYS_brk, SYS_madvise,
        SYS_openat, SYS_openat2, SYS_readlink, SYS_readlinkat, SYS_getcwd, SYS_fcntl, SYS_dup,
        SYS_recvmsg, SYS_sendmsg, SYS_recvmmsg, SYS_sendmmsg, SYS_poll, SYS_ppoll,
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

int rec_sandbox_enter(const rec_sandbox_limits *lim, const int *keep, int nkeep)
{
    pid_t parent = getppid();
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Dies with the recorder. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        return -1;
    /* The recorder may run SCHED_FIFO: a parser must not. (Under the BPF
     * sampler it runs SCHED_BATCH, which the child keeps.) */
    int policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
    struct sched_param normal = {0};
    if (policy == SCHED_FIFO || policy == SCHED_RR)
        sched_setscheduler(0, SCHED_OTHER, &normal);
    setpriority(PRIO_PROCESS, 0, lim->nice);

    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        if (null > 2)
            close(null);
    }
    close_others(keep, nkeep);

    if (lim->cpu_seconds > 0) {
        struct rlimit cpu = {(rlim_t)lim->cpu_seconds, (rlim_t)lim->cpu_seconds + 1};
        setrlimit(RLIMIT_CPU, &cpu);
    }
    set_limit(RLIMIT_CORE, 0);
    set_limit(RLIMIT_FSIZE, 0);
    set_limit(RLIMIT_NPROC, 0);
    set_limit(RLIMIT_NOFILE, lim->open_files);
#ifndef UNDER_ASAN /* ASan reserves terabytes of address space */
    if (lim->address_space)
        set_limit(RLIMIT_AS, lim->address_space);
#endif

    if (geteuid() == 0 || getuid() == 0) {
        if (setgroups(0, NULL) != 0 || setresgid(NOBODY_ID, NOBODY_ID, NOBODY_ID) != 0 ||
            setresuid(NOBODY_ID, NOBODY_ID, NOBODY_ID) != 0)
            return -1;
        if (geteuid() == 0 || getuid() == 0) /* never parse as root */
            return -1;
        /* The kernel clears the parent-death signal when the ids change:
         * again, and the recorder may have died in between. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            return -1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_DUMPABLE, 0) != 0)
        return -1;
    return install_seccomp();
}
