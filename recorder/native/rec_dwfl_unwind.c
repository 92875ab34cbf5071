/* SPDX-License-Identifier: BSD-3-Clause */
#include "native/rec_dwfl_unwind.h"

#include "native/rec_cfi.h"

#include <elfutils/libdw.h>
#include <string.h>

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    (void)dwfl;
    if (*thread_argp)
        return 0; /* one thread: the one whose stack was copied */
    *thread_argp = arg;
    return 1;
}

/* Stack slots come from the copy; a CFI unwind needs nothing else (the
 * unwind tables are read from the module files). */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    (void)dwfl;
    rec_dwfl_copy *c = arg;
    uint64_t sp = c->regs.rsp;
    if (addr < sp || addr - sp + sizeof *result > c->len) {
        /* Above the copy, within reach of a stack: the copy was too short. */
        if (addr >= sp && addr - sp < REC_UNWIND_STACK_REACH)
            c->beyond_copy = 1;
        return false;
    }
    memcpy(result, c->stack + (addr - sp), sizeof *result);
    return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
    const struct user_regs_struct *r = &((rec_dwfl_copy *)arg)->regs;
    /* The x86-64 DWARF register numbers: rax rdx rcx rbx rsi rdi rbp rsp,
     * r8..r15, then the return address column, which is the PC. */
    Dwarf_Word dw[17] = {r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp,
                         r->r8,  r->r9,  r->r10, r->r11, r->r12, r->r13, r->r14, r->r15,
                         r->rip};
    return dwfl_thread_state_registers(thread, 0, 17, dw);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = next_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

bool rec_dwfl_attach(Dwfl *dwfl, rec_dwfl_copy *c)
{
    return dwfl_attach_state(dwfl, NULL, 1, &thread_callbacks, c);
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
    rec_dwfl_copy *c = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(state, &pc, &activation))
        return DWARF_CB_ABORT;
    /* Where the frame starts: the recorder places each 8.1+ script frame
     * by its Frame's address between this and the next frame's. rsp is
     * always known on x86-64 (the caller's is the callee's CFA); should it
     * not be, the frame is taken as empty. */
    Dwarf_Word sp;
    if (dwfl_frame_reg(state, 7, &sp) != 0)
        sp = c->n ? c->sps[c->n - 1] : c->regs.rsp;
    c->sps[c->n] = sp;
    /* A return address points after the call: step back into it. */
    c->pcs[c->n++] = activation ? pc : pc - 1;
    return c->n < c->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

void rec_dwfl_unwind(Dwfl *dwfl, rec_dwfl_copy *c)
{
    c->n = 0;
    c->beyond_copy = 0;
    dwfl_getthread_frames(dwfl, 1, frame_cb, c); /* its code tells nothing: many
                                                     unwinds end in an error */
}
