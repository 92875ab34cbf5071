/* SPDX-License-Identifier: BSD-3-Clause */
/* unwind-compare: the compiled unwind rules (recorder/rec_cfi.c) checked
 * against libdwfl's unwinder, the oracle, on a live process.
 *
 *   unwind-compare PID SAMPLES [STACK_BYTES]
 *
 * Stops the process SAMPLES times (about 200 a second), copies its
 * registers and STACK_BYTES of stack (default 16384, the recorder's copy),
 * resumes it, then unwinds each copy both ways. Prints the samples, how
 * many needed the general path, the mismatches (the first few in full) and
 * the CPU time of each way per unwind; and each distinct PC's function
 * from the sorted symbol tables (recorder/rec_symbols.c) against libdwfl's.
 * Exit status 1 when any unwind made with the compiled rules, or any
 * function, differs from libdwfl's. */
#include "native/rec_cfi.h"
#include "native/rec_dwfl_unwind.h"
#include "native/rec_symbols.h"
#include "native/rec_unwinder.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES 256
#define MAX_STACK (1 << 20)
#define SHOWN_MISMATCHES 3

static int die(const char *what)
{
    fprintf(stderr, "unwind-compare: %s: %s\n", what, strerror(errno));
    exit(2);
}

/* The frames up to a fiber's entry, where the recorder's unwinder cuts
 * the stack (rec_unwinder.c): all of them when there is none. */
static size_t up_to_fiber_entry(Dwfl *dwfl, const uint64_t *pcs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        Dwfl_Module *mod = dwfl_addrmodule(dwfl, pcs[i]);
        const char *name = mod ? dwfl_module_addrname(mod, pcs[i]) : NULL;
        if (name && rec_unwinder_is_fiber_entry(name))
            return i + 1;
    }
    return n;
}

/* Names the frames with the sorted tables (rec_symbols.c) and with
 * libdwfl; counts the PCs named and those put in different functions (the
 * first few shown), each PC once. A function is its symbol's start: of its
 * aliases the tables name it by a fixed rule (rec_symbol_names.h),
 * without its version, libdwfl by whichever its table lists first. */
static void compare_names(Dwfl *dwfl, rec_symbols *syms, const uint64_t *pcs, size_t n, long *named,
                          long *differ, long *fallback)
{
    static uint64_t seen[1 << 16];
    for (size_t i = 0; i < n; i++) {
        uint64_t slot = (pcs[i] * 0x9e3779b97f4a7c15ULL) >> 48;
        if (seen[slot] == pcs[i])
            continue;
        seen[slot] = pcs[i];
        Dwfl_Module *mod = dwfl_addrmodule(dwfl, pcs[i]);
        if (!mod)
            continue;
        GElf_Off off;
        GElf_Sym sym;
        const char *theirs = dwfl_module_addrinfo(mod, pcs[i], &off, &sym, NULL, NULL, NULL);
        uint64_t start = 0;
        const char *mine = rec_symbols_find(syms, mod, pcs[i], &start);
        (*named)++;
        if (!mine) {
            (*fallback)++;
        } else if (!theirs || start != pcs[i] - off) {
            if ((*differ)++ < SHOWN_MISMATCHES)
                fprintf(stderr, "unwind-compare: pc 0x%llx named %s (at 0x%llx), by libdwfl %s (at 0x%llx)\n",
                        (unsigned long long)pcs[i], mine, (unsigned long long)start,
                        theirs ? theirs : "(none)", (unsigned long long)(pcs[i] - off));
        }
    }
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[n / 2];
}

static double cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* One stop, copy and resume. 0, or -1 when the process is gone. */
static int take(pid_t pid, rec_dwfl_copy *c, uint8_t *buf, size_t want)
{
    if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) != 0)
        die("PTRACE_INTERRUPT");
    int status;
    while (waitpid(pid, &status, __WALL) < 0)
        if (errno != EINTR)
            die("waitpid");
    if (WIFEXITED(status) || WIFSIGNALED(status))
        return -1;
    int sig = WIFSTOPPED(status) && (status >> 16) == 0 ? WSTOPSIG(status) : 0;
    if (ptrace(PTRACE_GETREGS, pid, 0, &c->regs) != 0)
        die("PTRACE_GETREGS");
    struct iovec local = {buf, want}, remote = {(void *)(uintptr_t)c->regs.rsp, want};
    ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    c->len = got > 0 ? (size_t)got : 0;
    /* A signal that stopped it is handed back; the interrupt's own stop is not. */
    ptrace(PTRACE_CONT, pid, 0, (void *)(uintptr_t)(sig == SIGSTOP || sig == SIGTRAP ? 0 : sig));
    return 0;
}

static void show(const char *label, const uint64_t *pcs, const uint64_t *sps, size_t n, int beyond)
{
    fprintf(stderr, "  %s: %zu frames%s\n", label, n, beyond ? ", beyond the copy" : "");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "    #%zu pc 0x%llx sp 0x%llx\n", i, (unsigned long long)pcs[i],
                (unsigned long long)sps[i]);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: unwind-compare PID SAMPLES [STACK_BYTES]\n");
        return 2;
    }
    pid_t pid = (pid_t)atoi(argv[1]);
    long samples = atol(argv[2]);
    size_t want = argc > 3 ? (size_t)atol(argv[3]) : 16384;
    if (pid <= 0 || samples <= 0 || want < 64 || want > MAX_STACK) {
        fprintf(stderr, "unwind-compare: bad PID, SAMPLES or STACK_BYTES\n");
        return 2;
    }
    static const Dwfl_Callbacks callbacks = {.find_elf = dwfl_linux_proc_find_elf,
                                             .find_debuginfo = dwfl_standard_find_debuginfo};
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (!dwfl || dwfl_linux_proc_report(dwfl, pid) != 0 || dwfl_report_end(dwfl, NULL, NULL) != 0)
        die("reading the modules");
    static uint64_t dwfl_pcs[MAX_FRAMES], dwfl_sps[MAX_FRAMES];
    uint8_t *buf = malloc(want);
    if (!buf)
        die("malloc");
    static rec_dwfl_copy c;
    c = (rec_dwfl_copy){.stack = buf, .pcs = dwfl_pcs, .sps = dwfl_sps, .max = MAX_FRAMES};
    if (!rec_dwfl_attach(dwfl, &c)) {
        fprintf(stderr, "unwind-compare: dwfl_attach_state: %s\n", dwfl_errmsg(-1));
        return 2;
    }
    if (ptrace(PTRACE_SEIZE, pid, 0, 0) != 0)
        die("PTRACE_SEIZE");
    rec_cfi cfi = {0};
    uint64_t pcs[MAX_FRAMES], sps[MAX_FRAMES];
    long general = 0, mismatches = 0, frames = 0, fibers = 0, named = 0, differ = 0, fallback = 0;
    rec_symbols syms = {0};
    double compiled_us = 0, dwfl_us = 0, compiled_max = 0, dwfl_max = 0;
    double *compiled_each = calloc((size_t)samples, sizeof *compiled_each);
    double *dwfl_each = calloc((size_t)samples, sizeof *dwfl_each);
    if (!compiled_each || !dwfl_each)
        die("calloc");
    long taken = 0;
    for (long i = 0; i < samples; i++, taken++) {
        if (take(pid, &c, buf, want) != 0) {
            fprintf(stderr, "unwind-compare: pid %d is gone after %ld samples\n", (int)pid, i);
            break;
        }
        rec_cfi_start start = {c.regs.rip, c.regs.rsp, c.regs.rbp, c.stack, c.len};
        rec_cfi_frames mine = {pcs, sps, MAX_FRAMES, 0, 0};
        double t0 = cpu_us();
        int rc = rec_cfi_unwind(&cfi, dwfl, &start, &mine);
        double t1 = cpu_us();
        rec_dwfl_unwind(dwfl, &c);
        double t2 = cpu_us();
        if (rc == REC_CFI_NOMEM)
            die("rec_cfi_unwind");
        compiled_each[i] = t1 - t0;
        dwfl_each[i] = t2 - t1;
        compiled_us += t1 - t0;
        dwfl_us += t2 - t1;
        compiled_max = t1 - t0 > compiled_max ? t1 - t0 : compiled_max;
        dwfl_max = t2 - t1 > dwfl_max ? t2 - t1 : dwfl_max;
        frames += (long)c.n;
        compare_names(dwfl, &syms, c.pcs, c.n, &named, &differ, &fallback);
        /* Unwinds cut at a fiber's entry are compared up to it. */
        size_t cut = up_to_fiber_entry(dwfl, pcs, mine.n);
        if (cut < mine.n || (rc == REC_CFI_GENERAL && cut < up_to_fiber_entry(dwfl, c.pcs, c.n))) {
            mine.n = c.n = cut;
            mine.beyond_copy = c.beyond_copy = 0;
            rc = REC_CFI_DONE;
            fibers++;
        }
        if (rc == REC_CFI_GENERAL) {
            if (general++ < SHOWN_MISMATCHES)
                fprintf(stderr, "unwind-compare: sample %ld: general path at frame %zu, pc 0x%llx\n", i,
                        mine.n - 1, (unsigned long long)pcs[mine.n - 1]);
        } else if (mine.n != c.n || mine.beyond_copy != c.beyond_copy ||
                   memcmp(pcs, c.pcs, c.n * sizeof *pcs) || memcmp(sps, c.sps, c.n * sizeof *sps)) {
            if (mismatches++ < SHOWN_MISMATCHES) {
                fprintf(stderr, "unwind-compare: sample %ld differs\n", i);
                show("compiled rules", pcs, sps, mine.n, mine.beyond_copy);
                show("libdwfl", c.pcs, c.sps, c.n, c.beyond_copy);
            }
        }
        usleep(5000);
    }
    ptrace(PTRACE_DETACH, pid, 0, 0);
    if (!taken) {
        fprintf(stderr, "unwind-compare: no sample taken\n");
        return 2;
    }
    samples = taken;
    printf("samples %ld frames_avg %.1f cut_at_fiber %ld general %ld mismatches %ld compiled_us_p50 %.2f compiled_us_avg %.2f "
           "compiled_us_max %.1f libdwfl_us_p50 %.2f libdwfl_us_avg %.2f libdwfl_us_max %.1f rules %zu "
           "pcs_named %ld named_differently %ld left_to_libdwfl %ld\n",
           samples, (double)frames / (double)samples, fibers, general, mismatches, median(compiled_each, samples),
           compiled_us / (double)samples, compiled_max, median(dwfl_each, samples), dwfl_us / (double)samples, dwfl_max, cfi.nrules,
           named, differ, fallback);
    rec_symbols_clear(&syms);
    rec_cfi_clear(&cfi);
    dwfl_end(dwfl);
    free(buf);
    free(compiled_each);
    free(dwfl_each);
    return mismatches || differ ? 1 : 0;
}
