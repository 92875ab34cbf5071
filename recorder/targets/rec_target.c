/* SPDX-License-Identifier: BSD-3-Clause */
#include "targets/rec_target.h"
#include "base/rec_constants.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "targets/rec_inspect.h"
#include "frames/rec_memory.h"
#include "frames/rec_model.h"
#include "targets/rec_access.h"
#include "zs_elf.h"
#include "zs_maps.h"
#include "zs_resolver.h"

const char *rec_layout_source_name(rec_layout_source s)
{
    switch (s) {
    case REC_LAYOUT_FILE: return "layout file";
    case REC_LAYOUT_DWARF: return "DWARF";
    case REC_LAYOUT_BUILTIN: return "built-in table";
    }
    return "?";
}

static int permission_error(pid_t pid, const char *what, zs_error *err)
{
    char why[512];
    rec_access_denied_why(pid, why, sizeof why);
    return zs_fail(err, ZS_E_PERMISSION, "pid %d: cannot read %s: %s", (int)pid, what, why);
}

/* No process pid: where the recorder runs in a container's PID namespace,
 * the pid the user has (from the host) may well be another number there. */
static int no_process(pid_t pid, zs_error *err)
{
    return zs_fail(err, ZS_E_NO_PROCESS, "no process with pid %d%s", (int)pid,
                   rec_access_host_pids() ? "" : " in the recorder's PID namespace (it runs in a "
                   "container, whose pids are not the host's: run the recorder on the host, or give "
                   "the pid as the container numbers it)");
}

/* The load bias of a PIE: where the mapping of the executable's first page
 * landed, found by the executable's inode (paths differ in containers). */
/* How often the maps are read for an executable being exec'd, 2 ms apart. */
#define EXEC_MAP_ATTEMPTS 10

static int load_bias(pid_t pid, const zs_elf_info *info, uint64_t *bias, zs_error *err)
{
    char path[64], line[4608];
    struct stat st;
    *bias = 0;
    if (!info->is_pie)
        return 0;
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    if (stat(path, &st) != 0)
        return permission_error(pid, path, err);
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    /* In an exec, /proc/PID/exe names the new executable before the kernel
     * maps it (and a process at nice 19 on a busy host can wait there long):
     * looked at again a few times, then left to the caller to retry. */
    for (int attempt = 0; attempt < EXEC_MAP_ATTEMPTS; attempt++) {
        FILE *f = fopen(path, "r");
        if (!f)
            return permission_error(pid, path, err);
        int found = 0;
        while (!found && fgets(line, sizeof line, f)) {
            zs_maps_line m;
            if (zs_maps_parse(line, strlen(line), &m) == 0 && m.inode == (uint64_t)st.st_ino &&
                m.offset == 0) {
                *bias = m.start - info->first_vaddr;
                found = 1;
            }
        }
        fclose(f);
        if (found)
            return 0;
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    return zs_fail(err, ZS_E_STARTING, "pid %d: executable not mapped yet in %s (the process is in "
                   "the middle of its exec: try again)", (int)pid, path);
}

static void read_ns_pid(rec_target *t)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/status", (int)t->pid);
    t->ns_pid = t->pid;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "NSpid:", 6))
            continue;
        char *last = strrchr(line, '\t'); /* innermost namespace comes last */
        if (last)
            t->ns_pid = (pid_t)atoi(last + 1);
    }
    fclose(f);
}

static void read_cmdline(rec_target *t)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)t->pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(t->cmdline, 1, sizeof t->cmdline - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (t->cmdline[i] == '\0' || t->cmdline[i] == '\n')
            t->cmdline[i] = ' ';
    while (n && t->cmdline[n - 1] == ' ')
        n--;
    t->cmdline[n] = '\0';
}

/* Cluster node name from the process environment (CLUSTER_NODE=worker-1). */
static void read_node(rec_target *t)
{
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)t->pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
        if (!strncmp(buf + i, "CLUSTER_NODE=", 13)) {
            snprintf(t->node, sizeof t->node, "%s", buf + i + 13);
            return;
        }
    }
}

static int read_version(rec_target *t, uint64_t addr, zs_error *err)
{
    char v[sizeof t->zeek_version];
    pid_t pid = t->pid;
    zs_memory mem = rec_live_memory(&pid);
    if (zs_mem_read(&mem, addr, v, sizeof v)) {
        if (errno == EPERM || errno == EACCES)
            return permission_error(t->pid, "its memory", err);
        return zs_fail(err, ZS_E_NOT_ZEEK, "pid %d: cannot read the version string", (int)t->pid);
    }
    v[sizeof v - 1] = '\0';
    size_t len = strlen(v);
    for (size_t i = 0; i < len; i++)
        if (!isprint((unsigned char)v[i]))
            return zs_fail(err, ZS_E_NOT_ZEEK, "pid %d (%s): the version symbol holds no string",
                           (int)t->pid, t->exe);
    if (!len || !isdigit((unsigned char)v[0]))
        return zs_fail(err, ZS_E_NOT_ZEEK, "pid %d (%s): version '%s' is not a Zeek version",
                       (int)t->pid, t->exe, v);
    memcpy(t->zeek_version, v, len + 1);
    return 0;
}

/* Every symbol name a layout can use: the built-in table's and DWARF's
 * (a --layout file's are added), so that one inspection answers for all. */
static const char *const KNOWN_SYMS[] = {
    "version", "call_stack", "_ZN4zeek6detail10call_stackE", "g_frame_stack",
    "network_time", "_ZN4zeek9run_state12network_timeE", "_ZTVN4zeek6detail5ZBodyE",
    "_ZTVN4zeek6detail19CoalescedScriptFuncE", "_ZN4zeek6detailL6scopesE",
    "_ZN4zeek6detail12global_scopeEv", "_ZTVN4zeek7FuncValE", "_ZN4zeek12iosource_mgrE",
    "_ZTVN4zeek8iosource4pcap10PcapSourceE", "_ZTVN4zeek8iosource9af_packet15AF_PacketSourceE",
    "_ZTVN4zeek8iosource6pktsrc15AF_PacketSourceE", "iosource_mgr", "_ZTVN8iosource4pcap10PcapSourceE",
};

/* Itanium C++ ABI: an object's vtable pointer points past the vtable's
 * offset-to-top and typeinfo words. */
enum { VTABLE_ADDRESS_POINT = 16 };

static void want_sym(rec_inspect_request *req, const char *name)
{
    for (int i = 0; i < req->nsyms; i++)
        if (!strcmp(req->syms[i], name))
            return;
    if (*name && req->nsyms < REC_INSPECT_MAX_SYMS)
        req->syms[req->nsyms++] = name;
}

/* The inspected executable's symbol NAME; -1 when it was not asked for. */
static int inspected_sym(const rec_inspect_request *req, const rec_inspect_verdict *v,
                         const char *name, zs_elf_symbol *out)
{
    for (int i = 0; i < req->nsyms; i++) {
        if (!strcmp(req->syms[i], name)) {
            *out = (zs_elf_symbol){name, v->syms[i].value, v->syms[i].size, v->syms[i].found};
            return 0;
        }
    }
    return -1;
}

/* Where an optional symbol (ZAM's, the packet source's) is in the process (plus skip: a vtable's
 * address point); 0 when the layout names none or the executable lacks it. */
static uint64_t zam_symbol(const rec_inspect_request *req, const rec_inspect_verdict *v,
                           const char *name, uint64_t bias, uint64_t skip)
{
    zs_elf_symbol sym = {0};
    if (!name[0] || inspected_sym(req, v, name, &sym) || !sym.found)
        return 0;
    return sym.value + bias + skip;
}

/* Where Scope.cc's scope stack is when its own (local) symbol was stripped
 * with the rest of .symtab: global_scope() opens by loading the vector's
 * first element, RIP-relative (REX.W mov disp32(%rip), reg). 0 when the
 * function at fn does not open so. */
static uint64_t scopes_from_accessor(pid_t pid, uint64_t fn)
{
    uint8_t code[7];
    int32_t disp;
    zs_memory mem = rec_live_memory(&pid);
    if (!fn || zs_mem_read(&mem, fn, code, sizeof code) || (code[0] & 0xf8) != 0x48 ||
        code[1] != 0x8b || (code[2] & 0xc7) != 0x05)
        return 0;
    memcpy(&disp, code + 3, sizeof disp);
    return fn + sizeof code + (uint64_t)(int64_t)disp;
}

static int choose_layout(rec_target *t, const rec_layout_choice *choice,
                         const rec_inspect_request *elf_req, zs_error *err)
{
    if (choice && choice->forced) {
        t->layout = *choice->forced;
        t->layout_source = REC_LAYOUT_FILE;
        return 0;
    }
    zs_error dwarf_err = {0};
    if (!(choice && choice->no_dwarf)) {
        /* The DWARF scan, sandboxed like the symbol lookup. Malformed DWARF
         * refuses the process: a built-in layout would half-trust a binary
         * that is damaged or made to mislead. */
        rec_inspect_request req = *elf_req;
        rec_inspect_verdict v;
        req.want_dwarf = 1;
        req.zeek_version = t->zeek_version;
        if (rec_inspect(&req, &v, err))
            return -1;
        if (v.elf_rc == 0 && v.dwarf_rc == 0) {
            t->layout = v.layout;
            zs_layout_add_builtin_zam(&t->layout, t->zeek_version);
            zs_layout_add_builtin_pktsrc(&t->layout, t->zeek_version);
            t->layout_source = REC_LAYOUT_DWARF;
            return 0;
        }
        dwarf_err = v.elf_rc ? v.elf_err : v.dwarf_err;
        if (dwarf_err.code == ZS_E_EXE_REFUSED) {
            /* Name the file, not /proc/PID/exe. */
            const char *why = dwarf_err.detail;
            size_t n = strlen(elf_req->path);
            if (!strncmp(why, elf_req->path, n) && !strncmp(why + n, ": ", 2))
                why += n + 2;
            return zs_fail(err, ZS_E_EXE_REFUSED, "pid %d (%s): %s", (int)t->pid, t->exe, why);
        }
    }
    const zs_layout *builtin = zs_layout_builtin(t->zeek_version);
    if (builtin) {
        t->layout = *builtin;
        zs_layout_add_builtin_pktsrc(&t->layout, t->zeek_version);
        t->layout_source = REC_LAYOUT_BUILTIN;
        return 0;
    }
    char known[256];
    zs_layout_builtin_versions(known, sizeof known);
    return zs_fail(err, ZS_E_UNSUPPORTED,
                   "pid %d: Zeek %s has no built-in layout (known: %s) and %s; on a host with "
                   "debug info run 'zeek-spy-record --print-layout' and pass the result with "
                   "--layout FILE",
                   (int)t->pid, t->zeek_version, known,
                   dwarf_err.code ? dwarf_err.detail : "no usable debug info");
}

int rec_target_exit_fd(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}

int rec_target_alive(pid_t pid, int exit_fd)
{
    if (exit_fd >= 0) {
        struct pollfd p = {.fd = exit_fd, .events = POLLIN};
        int ready = poll(&p, 1, 0);
        if (ready >= 0)
            return ready == 0;
    }
    char path[64], buf[512];
    /* The main thread's stat has the same state, without the process's
     * stat's sums over every thread (zeek has dozens): once a second for
     * each target of the BPF sampler. */
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The state follows the command name, which may itself hold ')'. */
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

int rec_target_open(pid_t pid, const rec_layout_choice *choice, const rec_target_inspector *how,
                    rec_target *t, zs_error *err)
{
    char exe_path[64];
    memset(t, 0, sizeof *t);
    t->pid = pid;
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
        return no_process(pid, err);
    snprintf(exe_path, sizeof exe_path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(exe_path, t->exe, sizeof t->exe - 1);
    if (n < 0)
        return errno == ENOENT ? no_process(pid, err) : permission_error(pid, exe_path, err);
    t->exe[n] = '\0';

    /* The executable is parsed in a sandboxed child (rec_inspect.h); this
     * side reads only /proc and the process's memory. */
    char shown[4200], root_dir[64];
    snprintf(shown, sizeof shown, "pid %d (%s)", (int)pid, t->exe);
    snprintf(root_dir, sizeof root_dir, "/proc/%d/root", (int)pid);
    rec_inspect_request req = {.path = exe_path, .shown = shown, .real_path = t->exe,
                               .root_dir = root_dir, .zeek_version = "",
                               .cache = how ? how->cache : NULL,
                               .cancel_fd = how ? how->cancel_fd : 0};
    for (size_t i = 0; i < sizeof KNOWN_SYMS / sizeof KNOWN_SYMS[0]; i++)
        want_sym(&req, KNOWN_SYMS[i]);
    if (choice && choice->forced) {
        want_sym(&req, choice->forced->sym_call_stack);
        want_sym(&req, choice->forced->sym_frame_stack);
        want_sym(&req, choice->forced->sym_network_time);
        want_sym(&req, choice->forced->zam.sym_body_vtable);
        want_sym(&req, choice->forced->zam.sym_coalesced_vtable);
        want_sym(&req, choice->forced->zam.sym_scopes);
        want_sym(&req, choice->forced->zam.sym_global_scope);
        want_sym(&req, choice->forced->zam.sym_funcval_vtable);
        want_sym(&req, choice->forced->pktsrc.sym_iosource_mgr);
        want_sym(&req, choice->forced->pktsrc.sym_pcap_vtable);
        want_sym(&req, choice->forced->pktsrc.sym_af_packet_vtable);
    }
    rec_inspect_verdict v;
    if (rec_inspect(&req, &v, err))
        return -1;
    if (v.elf_rc) {
        *err = v.elf_err;
        return -1;
    }
    zs_elf_info info = v.info;
    zs_elf_symbol version_sym = {"version"};
    inspected_sym(&req, &v, "version", &version_sym);
    snprintf(t->build_id, sizeof t->build_id, "%s", info.build_id);
    if (!version_sym.found)
        return zs_fail(err, ZS_E_NOT_ZEEK, "pid %d (%s) is not a zeek: no 'version' symbol",
                       (int)pid, t->exe);
    uint64_t bias;
    if (load_bias(pid, &info, &bias, err) || read_version(t, version_sym.value + bias, err) ||
        choose_layout(t, choice, &req, err))
        return -1;

    const char *names[3] = {t->layout.sym_call_stack, t->layout.sym_frame_stack,
                            t->layout.sym_network_time};
    zs_elf_symbol syms[3];
    const zs_model_info *model = zs_model_find(t->layout.model);
    if (!model || !rec_model_of(t->layout.model))
        return zs_fail(err, ZS_E_LAYOUT, "pid %d (%s, Zeek %s): the layout's model is not one "
                       "this recorder reads", (int)pid, t->exe, t->zeek_version);
    size_t nsyms = model->stack_symbol ? 2 : 1; /* required */
    for (size_t i = 0; i < 3; i++)
        if (inspected_sym(&req, &v, names[i], &syms[i]) != 0) /* an empty or unknown name */
            syms[i] = (zs_elf_symbol){names[i], 0, 0, 0};
    for (size_t i = 0; i < nsyms; i++)
        if (!syms[i].found)
            return zs_fail(err, ZS_E_NOT_ZEEK,
                           "pid %d (%s, Zeek %s): symbol %s of the %s layout not found "
                           "(a different model? try --layout)",
                           (int)pid, t->exe, t->zeek_version, syms[i].name,
                           zs_model_name(t->layout.model));
    t->call_stack = syms[0].value + bias;
    t->frame_stack = nsyms == 2 ? syms[1].value + bias : 0;
    t->network_time = syms[2].found && t->layout.sym_network_time[0] ? syms[2].value + bias : 0;
    if (zs_layout_has_zam(&t->layout)) {
        const zs_zam_layout *z = &t->layout.zam;
        t->zam.body_vtable = zam_symbol(&req, &v, z->sym_body_vtable, bias, VTABLE_ADDRESS_POINT);
        t->layout.zam.body_vtable_at = t->zam.body_vtable;
        t->layout.zam.coalesced_vtable_at =
            zam_symbol(&req, &v, z->sym_coalesced_vtable, bias, VTABLE_ADDRESS_POINT);
        t->zam.scopes = zam_symbol(&req, &v, z->sym_scopes, bias, 0);
        if (!t->zam.scopes)
            t->zam.scopes = scopes_from_accessor(pid, zam_symbol(&req, &v, z->sym_global_scope, bias, 0));
        t->zam.funcval_vtable = zam_symbol(&req, &v, z->sym_funcval_vtable, bias, VTABLE_ADDRESS_POINT);
    }
    if (zs_layout_has_pktsrc(&t->layout)) {
        const zs_pktsrc_layout *p = &t->layout.pktsrc;
        t->pktsrc.iosource_mgr = zam_symbol(&req, &v, p->sym_iosource_mgr, bias, 0);
        t->pktsrc.pcap_vtable = zam_symbol(&req, &v, p->sym_pcap_vtable, bias, VTABLE_ADDRESS_POINT);
        t->pktsrc.af_packet_vtable = zam_symbol(&req, &v, p->sym_af_packet_vtable, bias, VTABLE_ADDRESS_POINT);
    }
    read_ns_pid(t);
    read_node(t);
    read_cmdline(t);
    return 0;
}

/* A std::vector header {begin, end, end_of_storage} that is plausible for
 * elements of elem bytes. */
static int vector_ok(const uint64_t v[3], uint64_t elem)
{
    if (!v[0])
        return !v[1] && !v[2];
    /* The capacity too is a whole number of elements. */
    return v[0] <= v[1] && v[1] <= v[2] && v[0] % 8 == 0 && (v[1] - v[0]) % elem == 0 &&
           (v[2] - v[0]) % elem == 0 && (v[1] - v[0]) / elem <= 100000;
}

/* One look at the live call stack; 1 when it was empty (nothing to check
 * beyond the vectors), 0 when a Func was read and looked right. */
static int check_once(const rec_target *t, zs_memory *mem, zs_error *err)
{
    pid_t pid = t->pid;
    const zs_layout *l = &t->layout;
    uint64_t cs[3], fs[3];
    if (zs_mem_read(mem, t->call_stack, cs, sizeof cs))
        return zs_fail(err, ZS_E_LAYOUT, "pid %d: cannot read call_stack", (int)pid);
    if (!vector_ok(cs, (uint64_t)l->callinfo_size))
        return zs_fail(err, ZS_E_LAYOUT,
                       "pid %d: call_stack does not look like a vector of %d-byte CallInfo "
                       "(wrong layout for Zeek %s? see --layout)",
                       (int)pid, l->callinfo_size, t->zeek_version);
    if (t->frame_stack) {
        if (zs_mem_read(mem, t->frame_stack, fs, sizeof fs) || !vector_ok(fs, 8))
            return zs_fail(err, ZS_E_LAYOUT, "pid %d: g_frame_stack does not look like a vector "
                           "of pointers (wrong layout? see --layout)", (int)pid);
    }
    if (cs[0] == cs[1])
        return 1;
    uint8_t ci[256];
    uint64_t func;
    if (zs_mem_read(mem, cs[0], ci, (size_t)l->callinfo_size))
        return zs_fail(err, ZS_E_LAYOUT, "pid %d: call_stack points at unreadable memory", (int)pid);
    if (rec_model_of(l->model)->outermost_func(l, mem, ci, &func))
        return zs_fail(err, ZS_E_LAYOUT, "pid %d: CallInfo.frame is unreadable (wrong "
                       "model or layout? see --layout)", (int)pid);
    zs_func_info fi;
    if (zs_resolve_func(mem, l, func, &fi))
        return zs_fail(err, ZS_E_LAYOUT, "pid %d: the outermost call's Func cannot be read with "
                       "this layout (wrong layout for Zeek %s? see --layout)",
                       (int)pid, t->zeek_version);
    int printable = fi.name[0] != '\0';
    for (const char *c = fi.name; *c; c++)
        printable &= isprint((unsigned char)*c) != 0;
    zs_func_info_free(&fi);
    if (!printable)
        return zs_fail(err, ZS_E_LAYOUT, "pid %d: Func name is not printable text (wrong layout "
                       "for Zeek %s? see --layout)", (int)pid, t->zeek_version);
    return 0;
}

/* Sleeps ms, or less when the inspector is told to give up (then 1). */
static int pause_or_cancelled(const rec_target_inspector *how, int ms)
{
    struct pollfd p = {how && how->cancel_fd > 0 ? how->cancel_fd : -1, POLLIN, 0};
    return poll(&p, 1, ms) > 0;
}

int rec_target_check(const rec_target *t, const rec_target_inspector *how, zs_error *err)
{
    pid_t pid = t->pid;
    zs_memory mem = rec_live_memory(&pid);
    /* The target runs meanwhile: look a few times so that an idle moment
     * does not hide a wrong layout, without stopping it. A read that races
     * with a change can fail once; a wrong layout fails every time. */
    int failures = 0, rc = 1;
    for (int tries = 0; tries < 40 && rc != 0; tries++) {
        rc = check_once(t, &mem, err);
        if (rc < 0 && ++failures >= 3)
            return -1;
        if (rc != 0 && pause_or_cancelled(how, 5))
            return zs_fail(err, ZS_E_TARGET, "pid %d: check interrupted", (int)pid);
    }
    return 0;
}
