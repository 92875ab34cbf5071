/* SPDX-License-Identifier: BSD-3-Clause OR GPL-2.0-only */
/* The kernel's types that the BPF programs read, declared here with just the
 * members they use instead of a vmlinux.h dumped from the build machine's
 * BTF: the object is then the same whatever kernel built it (or none), and
 * libbpf relocates each member against the running kernel's BTF at load
 * time (CO-RE), by name. The rest (map types, flags) is the kernel's stable
 * user-space API.
 *
 * A member whose name or size changed between kernels is read through a
 * bpf_core_field_exists() test, never assumed. Registers are not declared:
 * pt_regs' layout on x86-64 is fixed (user_regs_struct's first 21 words),
 * and the perf event context allows only whole-word loads anyway, which a
 * relocation to a narrower member (6.9's 2-byte cs) would break. */
#ifndef ZS_KERNEL_TYPES_H
#define ZS_KERNEL_TYPES_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <stdbool.h>

/* The CPU a task runs or last ran on: in thread_info from 5.16 on x86. */
struct thread_info {
    unsigned int cpu;
} __attribute__((preserve_access_index));

struct sched_entity {
    unsigned long long exec_start; /* the run queue's clock when it last ran or was switched */
    unsigned long long sum_exec_runtime; /* CPU time, as of its last switch or tick */
} __attribute__((preserve_access_index));

struct task_struct {
    struct thread_info thread_info;
    struct sched_entity se;
    unsigned int __state; /* 5.14 on */
    void *stack;          /* the kernel stack; pt_regs at its top */
    unsigned int flags;
    int on_cpu;
    int pid;
    int tgid;
    unsigned long nvcsw;  /* voluntary switches away */
    unsigned long nivcsw; /* involuntary ones */
} __attribute__((preserve_access_index));

/* A task iterator's context (iter/task, 5.8): the task it visits, and
 * the seq_file its reader reads (bpf_seq_write). */
struct seq_file;
struct bpf_iter_meta {
    struct seq_file *seq;
} __attribute__((preserve_access_index));
struct bpf_iter__task {
    struct bpf_iter_meta *meta;
    struct task_struct *task;
} __attribute__((preserve_access_index));

/* Before 5.14, the state was `state`, a long. */
struct task_struct___old {
    long state;
} __attribute__((preserve_access_index));

/* pt_regs' words (x86-64), as in user_regs_struct. */
enum zs_reg {
    ZS_REG_CS = 17,
    ZS_REG_SP = 19,
    ZS_REG_SS = 20,
};

/* The user segment selectors of a 64-bit process (__USER_CS, __USER_DS):
 * registers that carry them are the task's user registers. */
#define ZS_USER_CS 0x33
#define ZS_USER_SS 0x2b

/* Where the entry code saves a task's user registers: the top of its kernel
 * stack (THREAD_SIZE, 16 KiB on x86-64 without KASAN; no padding above
 * them on x86-64). Only where the kernel lacks bpf_task_pt_regs (before
 * 5.15); the registers found there are checked (ZS_USER_CS, ZS_USER_SS). */
#define ZS_THREAD_SIZE 16384
#define ZS_PT_REGS_SIZE (21 * 8)

#endif
