#include "rec_native.h"

#include "rec_mixed.h"

#include <elf.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <time.h>

/* PC -> symbol id, open addressing; names by id. */
typedef struct pc_slot {
    uint64_t pc; /* 0: empty */
    uint32_t id;
    uint8_t entry; /* its symbol is an interpreter entry (rec_mixed.h) */
} pc_slot;

struct rec_native {
    pid_t pid;
    Dwfl *dwfl;
    int attached;
    /* The window's copy. */
    struct user_regs_struct regs;
    uint8_t stack[REC_NATIVE_STACK_BYTES];
    size_t stack_len;
    int beyond_copy; /* the unwind asked for stack above the copy */
    /* The unwind under way. */
    uint64_t *pcs;
    size_t npcs, max;
    /* Symbols. */
    pc_slot *by_pc;
    size_t by_pc_cap, by_pc_used;
    char **names;
    size_t nnames;
    uint64_t last_refresh_ns;
    unsigned refreshes;
    uint64_t truncated;
};

static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    (void)dwfl;
    if (*thread_argp)
        return 0; /* the main thread only */
    *thread_argp = arg;
    return ((rec_native *)arg)->pid;
}

/* Stack slots come from the copy; anything else is not needed by a CFI
 * unwind (the unwind tables are read from the module files). */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    (void)dwfl;
    rec_native *n = arg;
    uint64_t sp = n->regs.rsp;
    if (addr < sp || addr - sp + sizeof *result > n->stack_len) {
        /* Above the copy, within reach of a stack: the copy was too short. */
        if (addr >= sp && addr - sp < (64ULL << 20))
            n->beyond_copy = 1;
        return false;
    }
    memcpy(result, n->stack + (addr - sp), sizeof *result);
    return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
    const struct user_regs_struct *r = &((rec_native *)arg)->regs;
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

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A Dwfl over the modules of /proc/PID/maps, made again when a PC falls
 * outside them: a launched zeek maps its libraries after its exec, and
 * plugins are dlopen'ed later still. (Reporting the modules again into the
 * same Dwfl left libraries mapped since unknown to its unwinder: made anew,
 * at most ten times a second.) */
static int open_dwfl(rec_native *n)
{
    if (n->dwfl)
        dwfl_end(n->dwfl);
    n->dwfl = dwfl_begin(&proc_callbacks);
    n->last_refresh_ns = now_ns();
    if (!n->dwfl)
        return -1;
    dwfl_report_begin(n->dwfl);
    int rc = dwfl_linux_proc_report(n->dwfl, n->pid);
    dwfl_report_end(n->dwfl, NULL, NULL);
    if (rc != 0 || !dwfl_attach_state(n->dwfl, NULL, n->pid, &thread_callbacks, n)) {
        dwfl_end(n->dwfl);
        n->dwfl = NULL;
        return -1;
    }
    return 0;
}

/* A launched zeek maps its libraries in its first milliseconds: the first
 * refreshes come at once, later ones at most ten a second. */
static int may_refresh(rec_native *n)
{
    if (n->refreshes < 50 || now_ns() - n->last_refresh_ns > 100000000ULL) {
        n->refreshes++;
        return 1;
    }
    return 0;
}

rec_native *rec_native_new(pid_t pid, zs_error *err)
{
    rec_native *n = calloc(1, sizeof *n);
    if (!n) {
        zs_fail(err, ZS_E_NOMEM, "native frames");
        return NULL;
    }
    n->pid = pid;
    if (open_dwfl(n)) {
        zs_fail(err, ZS_E_TARGET, "pid %d: native unwinding cannot start: %s", (int)pid,
                dwfl_errmsg(-1));
        rec_native_free(n);
        return NULL;
    }
    return n;
}

void rec_native_free(rec_native *n)
{
    if (!n)
        return;
    if (n->dwfl)
        dwfl_end(n->dwfl);
    for (size_t i = 0; i < n->nnames; i++)
        free(n->names[i]);
    free(n->names);
    free(n->by_pc);
    free(n);
}

int rec_native_capture(rec_native *n)
{
    struct iovec regs = {&n->regs, sizeof n->regs};
    n->stack_len = 0;
    if (ptrace(PTRACE_GETREGSET, n->pid, NT_PRSTATUS, &regs) != 0)
        return -1;
    struct iovec local = {n->stack, sizeof n->stack};
    struct iovec remote = {(void *)(uintptr_t)n->regs.rsp, sizeof n->stack};
    /* Near the top of the stack the copy is shorter: a partial read. */
    ssize_t got = process_vm_readv(n->pid, &local, 1, &remote, 1, 0);
    n->stack_len = got > 0 ? (size_t)got : 0;
    return 0;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
    rec_native *n = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(state, &pc, &activation))
        return DWARF_CB_ABORT;
    /* A return address points after the call: step back into it. */
    n->pcs[n->npcs++] = activation ? pc : pc - 1;
    return n->npcs < n->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static int unwind_once(rec_native *n, uint64_t *pcs, size_t max)
{
    n->beyond_copy = 0;
    n->pcs = pcs;
    n->npcs = 0;
    n->max = max;
    return dwfl_getthread_frames(n->dwfl, n->pid, frame_cb, n);
}

static int outside_modules(rec_native *n)
{
    for (size_t i = 0; i < n->npcs; i++)
        if (!dwfl_addrmodule(n->dwfl, n->pcs[i]))
            return 1;
    return n->npcs == 0;
}

size_t rec_native_unwind(rec_native *n, uint64_t *pcs, size_t max, int *truncated)
{
    *truncated = 0;
    if (!n->stack_len || !max || !n->dwfl)
        return 0;
    int rc = unwind_once(n, pcs, max);
    if (outside_modules(n) && may_refresh(n) && open_dwfl(n) == 0)
        rc = unwind_once(n, pcs, max); /* the unwind needs every module's CFI */
    /* Cut short: it needed stack above the copy, or ran out of room. (Its
     * return code tells nothing: many systems end every unwind in an error
     * at the outermost frame.) */
    (void)rc;
    if (n->npcs == max || n->beyond_copy) {
        *truncated = 1;
        n->truncated++;
    }
    /* Innermost first from libdwfl; the recording wants outermost first. */
    for (size_t i = 0; i < n->npcs / 2; i++) {
        uint64_t t = pcs[i];
        pcs[i] = pcs[n->npcs - 1 - i];
        pcs[n->npcs - 1 - i] = t;
    }
    return n->npcs;
}

static uint64_t hash_pc(uint64_t pc) { return (pc * 0x9E3779B97F4A7C15ULL) >> 17; }

static int grow(rec_native *n)
{
    size_t cap = n->by_pc_cap ? n->by_pc_cap * 2 : 1024;
    pc_slot *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < n->by_pc_cap; i++) {
        if (!n->by_pc[i].pc)
            continue;
        size_t k = hash_pc(n->by_pc[i].pc) & (cap - 1);
        while (t[k].pc)
            k = (k + 1) & (cap - 1);
        t[k] = n->by_pc[i];
    }
    free(n->by_pc);
    n->by_pc = t;
    n->by_pc_cap = cap;
    return 0;
}

/* The name of pc: its symbol, or its module and offset. */
static char *name_of(rec_native *n, uint64_t pc)
{
    Dwfl_Module *mod = n->dwfl ? dwfl_addrmodule(n->dwfl, pc) : NULL;
    if (!mod && may_refresh(n) && open_dwfl(n) == 0)
        mod = dwfl_addrmodule(n->dwfl, pc); /* mapped since: a plugin */
    char buf[512];
    if (!mod) {
        snprintf(buf, sizeof buf, "[unknown 0x%llx]", (unsigned long long)pc);
        return strdup(buf);
    }
    GElf_Off off;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
    if (name)
        return strdup(name);
    Dwarf_Addr start;
    const char *path = dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
    const char *base = path ? strrchr(path, '/') : NULL;
    snprintf(buf, sizeof buf, "[%s+0x%llx]", base ? base + 1 : path ? path : "?",
             (unsigned long long)(pc - start));
    return strdup(buf);
}

int64_t rec_native_symbol(rec_native *n, uint64_t pc, const char **name, int *entry)
{
    if (!pc)
        pc = 1; /* 0 marks an empty slot */
    if ((n->by_pc_used + 1) * 2 > n->by_pc_cap && grow(n))
        return -1;
    size_t k = hash_pc(pc) & (n->by_pc_cap - 1);
    while (n->by_pc[k].pc && n->by_pc[k].pc != pc)
        k = (k + 1) & (n->by_pc_cap - 1);
    if (n->by_pc[k].pc) {
        *name = n->names[n->by_pc[k].id];
        *entry = n->by_pc[k].entry;
        return n->by_pc[k].id;
    }
    char *s = name_of(n, pc);
    if (!s)
        return -1;
    /* Several PCs share a symbol: one id per name. */
    uint32_t id = 0;
    while (id < n->nnames && strcmp(n->names[id], s))
        id++;
    if (id == n->nnames) {
        char **more = realloc(n->names, (n->nnames + 1) * sizeof *more);
        if (!more) {
            free(s);
            return -1;
        }
        n->names = more;
        n->names[n->nnames++] = s;
    } else {
        free(s);
    }
    n->by_pc[k].pc = pc;
    n->by_pc[k].id = id;
    n->by_pc[k].entry = (uint8_t)rec_mixed_is_entry(n->names[id]);
    n->by_pc_used++;
    *name = n->names[id];
    *entry = n->by_pc[k].entry;
    return id;
}

uint64_t rec_native_truncated(const rec_native *n) { return n->truncated; }
