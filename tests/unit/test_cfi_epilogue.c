/* SPDX-License-Identifier: BSD-3-Clause */
/* The compiled unwind rules (recorder/rec_cfi.c) on a leaf stopped at the
 * `ret` of a frame-pointer function, under a caller that uses rbp as its
 * frame pointer: the state of libbroker's prometheus-cpp code (built -O0)
 * that made 1.2 % of a real zeek's native stacks end two frames deep.
 *
 * GCC's epilogue CFI keeps "rbp saved at CFA-16" past `pop %rbp` up to the
 * `ret`: that slot is below the stack pointer, outside the copy, while rbp
 * already holds the caller's value. A child runs the two functions below
 * (their CFI written as GCC writes it) in a loop; the test single-steps it
 * to the leaf's `nop` (inside the frame) and to its `ret`, copies the stack
 * from rsp as the recorder does, and unwinds: both must reach main through
 * the caller with the compiled rules, not end early or go the general way. */
#include "check.h"
#include "native/rec_cfi.h"

#include <elfutils/libdwfl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

void zs_fp_caller(void);
extern const char zs_fp_leaf[], zs_fp_leaf_nop[], zs_fp_leaf_ret[], zs_fp_caller_end[];

/* A frame-pointer prologue and its CFI, as GCC writes them at -O0. */
#define FP_PROLOGUE                  \
    "  .cfi_startproc\n"             \
    "  push %rbp\n"                  \
    "  .cfi_def_cfa_offset 16\n"     \
    "  .cfi_offset %rbp, -16\n"      \
    "  mov %rsp, %rbp\n"             \
    "  .cfi_def_cfa_register %rbp\n"

__asm__(".text\n"
        ".globl zs_fp_leaf, zs_fp_leaf_nop, zs_fp_leaf_ret\n"
        ".type zs_fp_leaf, @function\n"
        "zs_fp_leaf:\n"
        FP_PROLOGUE
        "zs_fp_leaf_nop:\n"
        "  nop\n"
        "  pop %rbp\n"
        "  .cfi_def_cfa %rsp, 8\n"
        "zs_fp_leaf_ret:\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size zs_fp_leaf, .-zs_fp_leaf\n"
        ".globl zs_fp_caller, zs_fp_caller_end\n"
        ".type zs_fp_caller, @function\n"
        "zs_fp_caller:\n"
        FP_PROLOGUE
        "  sub $32, %rsp\n"
        "1:\n"
        "  call zs_fp_leaf\n"
        "  jmp 1b\n"
        "  .cfi_endproc\n"
        "zs_fp_caller_end:\n"
        ".size zs_fp_caller, .-zs_fp_caller\n");

#define STACK_COPY 8192

/* Steps the stopped child until its rip is at; 0 once there. */
static int step_to(pid_t pid, const void *at, struct user_regs_struct *regs)
{
    for (int i = 0; i < 100000; i++) {
        if (ptrace(PTRACE_GETREGS, pid, 0, regs) != 0)
            return -1;
        if (regs->rip == (uint64_t)(uintptr_t)at)
            return 0;
        int status;
        if (ptrace(PTRACE_SINGLESTEP, pid, 0, 0) != 0 || waitpid(pid, &status, 0) != pid ||
            !WIFSTOPPED(status))
            return -1;
    }
    return -1;
}

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

/* Unwinds the child stopped at `at` with the compiled rules; the frames
 * must run leaf, caller, then main. */
static void unwind_at(pid_t pid, Dwfl *dwfl, const void *at, const char *what)
{
    struct user_regs_struct regs;
    CHECK(step_to(pid, at, &regs) == 0);
    static uint8_t stack[STACK_COPY];
    struct iovec local = {stack, sizeof stack}, remote = {(void *)(uintptr_t)regs.rsp, sizeof stack};
    ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    CHECK(got > 64);
    uint64_t pcs[64], sps[64];
    rec_cfi cfi = {0};
    rec_cfi_start start = {regs.rip, regs.rsp, regs.rbp, stack, got > 0 ? (size_t)got : 0};
    rec_cfi_frames out = {pcs, sps, 64, 0, 0};
    int rc = rec_cfi_unwind(&cfi, dwfl, &start, &out);
    GElf_Sym sym;
    Dwfl_Module *mod = out.n > 2 ? dwfl_addrmodule(dwfl, pcs[2]) : NULL;
    const char *third = mod ? dwfl_module_addrsym(mod, pcs[2], &sym, NULL) : NULL;
    fprintf(stderr, "%s: rc %d, %zu frames, the third in %s\n", what, rc, out.n, third ? third : "?");
    CHECK(rc == REC_CFI_DONE);
    CHECK(out.n >= 3);
    CHECK(pcs[0] == (uint64_t)(uintptr_t)at);
    CHECK(out.n > 1 && pcs[1] >= (uint64_t)(uintptr_t)zs_fp_caller &&
          pcs[1] < (uint64_t)(uintptr_t)zs_fp_caller_end);
    CHECK(third && strcmp(third, "main") == 0);
    rec_cfi_clear(&cfi);
}

int main(void)
{
    pid_t pid = fork();
    if (pid == 0) { /* the child: the caller's loop, forever, at the parent's addresses */
        zs_fp_caller();
        _exit(0);
    }
    CHECK(pid > 0);
    usleep(100000);
    CHECK(ptrace(PTRACE_ATTACH, pid, 0, 0) == 0);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFSTOPPED(status));
    Dwfl *dwfl = dwfl_begin(&callbacks);
    CHECK(dwfl && dwfl_linux_proc_report(dwfl, pid) == 0 && dwfl_report_end(dwfl, NULL, NULL) == 0);
    unwind_at(pid, dwfl, zs_fp_leaf_nop, "inside the leaf (CFA = rbp + 16)");
    unwind_at(pid, dwfl, zs_fp_leaf_ret, "at the leaf's ret, after pop %rbp (CFA = rsp + 8)");
    dwfl_end(dwfl);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    CHECK_MAIN_END;
}
