/* SPDX-License-Identifier: BSD-3-Clause */
#include "native/rec_unwinder.h"
#include "zs_grow.h"

#include "base/rec_clock.h"
#include "native/rec_cfi.h"
#include "native/rec_dwfl_unwind.h"
#include "targets/rec_sandbox.h"
#include "native/rec_scopes.h"
#include "native/rec_symbols.h"
#include "native/rec_unwind_msg.h"
#include "zs_intern.h"
#include "zs_maps.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Address space for libdw's view of the modules (mapped whole). */
#define UNWINDER_ADDRESS_SPACE ((rlim_t)8 << 30)

static const char TEST_CRASH_ENV[] = "ZEEK_SPY_TEST_CRASH_UNWINDER";

/* Module files by path, as the recorder opened them. libdwfl's find_elf
 * callback has no argument of its own, hence file scope: this process
 * holds one Dwfl for one target. */
typedef struct module_file {
    char *path;
    int fd;
} module_file;

typedef struct file_table {
    module_file *v;
    size_t n, cap;
} file_table;

static file_table current_files;

/* Where code is mapped, from the module list: libdwfl's idea of a
 * module's extent can cover a library mapped since into a gap next to it. */
typedef struct code_range {
    uint64_t start, end;
} code_range;

/* Where each file mapping starts and which file offset it maps: a
 * module's file offset is its first mapping's. */
typedef struct file_map {
    uint64_t start, offset;
} file_map;

/* A module as sent to the recorder: one id per (path, range), across
 * module lists (a module list made anew keeps the ids of what stayed). */
typedef struct sent_module {
    uint64_t start, end;
    char *path;
} sent_module;

/* What a PC was sent as. */
typedef struct pc_entry {
    uint32_t location, symbol;
    uint32_t outside; /* in no module's code: the module list is old */
} pc_entry;

/* What a location says: its module, symbol and source lines (code no
 * symbol names: its PC too). Two PCs
 * that say the same are one location (nothing downstream tells them
 * apart but the address), so a leaf that lands on another instruction of
 * the same line makes no new location and no new stack. */
typedef struct location_key {
    uint32_t location; /* the id it was sent as */
    uint32_t module, symbol, nlines;
    rec_unwind_line lines[UW_MAX_INLINE];
    uint64_t pc; /* code no symbol names: the PC, each its own location, so
                    that its address (pprof -addresses) tells them apart; else 0 */
} location_key;

/* Messages to the recorder, sent together once every message received is
 * handled: one system call, and one wake-up of a recorder waiting for
 * them, for a poll's batch (a second's at low rates), not one a message.
 * An unwinder behind (short of a core, reading tables) sends what it has
 * every OUT_AFTER_NS all the same: its answers are not held back for as
 * long as it stays behind, nor lost with it should it crash. */
enum { OUT_MAX = 256, OUT_BYTES = 512 << 10, OUT_AFTER_NS = 20000000 };
typedef struct outgoing {
    uint8_t bytes[OUT_BYTES];
    size_t used;
    size_t at[OUT_MAX + 1]; /* message k is bytes [at[k], at[k + 1]) */
    size_t n;
    uint64_t first_ns; /* when the first message queued was */
} outgoing;

typedef struct unwinder {
    int sock;
    outgoing out;
    Dwfl *dwfl;
    code_range *code;
    size_t ncode;
    file_map *file_maps;
    size_t nfile_maps;
    sent_module *modules;
    size_t nmodules, modules_cap;
    uint32_t nlocations; /* sent so far: the next location's id */
    file_table pending; /* received since the last module list */
    char *maps;
    size_t maps_len, maps_cap;
    /* One sample's frames (its registers in copy.regs, its stack read
     * where its message was received). */
    uint64_t pcs[UW_MAX_FRAMES];
    uint64_t sps[UW_MAX_FRAMES];
    rec_dwfl_copy copy; /* the copy and its frames, as libdwfl's callbacks see them */
    rec_cfi cfi; /* the PCs' unwind rules, compiled once */
    rec_symbols symbols; /* the modules' symbols, sorted once */
    rec_scopes scopes;   /* the DWARF units' function ranges, listed once */
    /* PC -> location: the PCs named since the last module list. */
    zs_intern by_pc;
    pc_entry *pc_loc; /* by the PC's entry in by_pc */
    size_t npc, pc_cap;
    /* What each location sent since the last module list says. */
    zs_intern by_key;
    location_key *keys;
    size_t nkeys, keys_cap;
    /* Symbols: names are sent once, ids in the order they were sent. */
    zs_intern by_name;
    char **names;
    size_t nnames, names_cap;
} unwinder;

static void free_files(file_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        close(t->v[i].fd);
        free(t->v[i].path);
    }
    free(t->v);
    *t = (file_table){0};
}

static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                    char **file_name, Elf **elfp)
{
    (void)mod, (void)userdata, (void)base;
    *elfp = NULL;
    for (size_t i = 0; i < current_files.n; i++)
        if (strcmp(current_files.v[i].path, modname) == 0) {
            *file_name = strdup(modname);
            return dup(current_files.v[i].fd); /* libdwfl closes what it gets */
        }
    return -1;
}

static const Dwfl_Callbacks callbacks = {
    .find_elf = find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

/* The executable mappings of files (and the vdso) in the module list. */
static void add_file_map(unwinder *u, uint64_t start, uint64_t offset, size_t *cap)
{
    if (zs_grow(&u->file_maps, cap, u->nfile_maps + 1, sizeof *u->file_maps, 64))
        _exit(4);
    u->file_maps[u->nfile_maps++] = (file_map){start, offset};
}

static void find_code(unwinder *u)
{
    u->ncode = 0;
    u->nfile_maps = 0;
    size_t cap = 0, maps_cap = 0;
    for (const char *line = u->maps; line && line < u->maps + u->maps_len;) {
        const char *eol = memchr(line, '\n', (size_t)(u->maps + u->maps_len - line));
        size_t len = eol ? (size_t)(eol - line) : (size_t)(u->maps + u->maps_len - line);
        zs_maps_line m;
        if (zs_maps_parse(line, len, &m) == 0) {
            int file = m.path_len && m.path[0] == '/';
            int vdso = m.path_len == 6 && !memcmp(m.path, "[vdso]", 6);
            if (file)
                add_file_map(u, m.start, m.offset, &maps_cap);
            if (m.perms[2] == 'x' && (file || vdso)) {
                if (zs_grow(&u->code, &cap, u->ncode + 1, sizeof *u->code, 64))
                    _exit(4);
                u->code[u->ncode++] = (code_range){m.start, m.end};
            }
        }
        line += len + 1;
    }
}

static int in_code(const unwinder *u, uint64_t pc)
{
    for (size_t i = 0; i < u->ncode; i++)
        if (pc >= u->code[i].start && pc < u->code[i].end)
            return 1;
    return 0;
}

/* A new Dwfl over the module list just received (and the files sent before
 * it); the previous one and its files go. */
static void load_modules(unwinder *u, int vdso_fd, uint64_t vdso_start)
{
    if (u->dwfl)
        dwfl_end(u->dwfl);
    free_files(&current_files);
    current_files = u->pending;
    u->pending = (file_table){0};
    /* PCs named before may lie in modules known only now: named again
     * (their names keep their ids). */
    zs_intern_free(&u->by_pc);
    u->npc = 0;
    zs_intern_free(&u->by_key);
    u->nkeys = 0;
    rec_cfi_clear(&u->cfi);
    rec_symbols_clear(&u->symbols);
    rec_scopes_clear(&u->scopes);
    find_code(u);
    u->dwfl = dwfl_begin(&callbacks);
    if (!u->dwfl)
        return;
    dwfl_report_begin(u->dwfl);
    FILE *f = fmemopen(u->maps, u->maps_len ? u->maps_len : 1, "r");
    int rc = f ? dwfl_linux_proc_maps_report(u->dwfl, f) : -1;
    if (f)
        fclose(f);
    if (rc == 0 && vdso_fd >= 0)
        dwfl_report_elf(u->dwfl, "[vdso]", "[vdso]", dup(vdso_fd), vdso_start, false);
    dwfl_report_end(u->dwfl, NULL, NULL);
    if (rc != 0 || !rec_dwfl_attach(u->dwfl, &u->copy)) {
        dwfl_end(u->dwfl);
        u->dwfl = NULL;
    }
}

static uint64_t file_offset_at(const unwinder *u, uint64_t start)
{
    for (size_t i = 0; i < u->nfile_maps; i++)
        if (u->file_maps[i].start == start)
            return u->file_maps[i].offset;
    return 0;
}

/* The name of the PLT section (.plt, .plt.got, .plt.sec) pc lies in, or
 * NULL: no symbol covers a PLT stub, and naming each by its offset would
 * look like an unknown function of that module. */
static const char *plt_section(Dwfl_Module *mod, Dwarf_Addr pc)
{
    Dwarf_Addr bias, at = pc;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    Elf_Scn *scn = elf ? dwfl_module_address_section(mod, &at, &bias) : NULL;
    GElf_Shdr shdr;
    size_t strndx;
    if (!scn || !gelf_getshdr(scn, &shdr) || elf_getshdrstrndx(elf, &strndx) != 0)
        return NULL;
    const char *name = elf_strptr(elf, strndx, shdr.sh_name);
    return name && !strncmp(name, ".plt", 4) && strlen(name) < 16 ? name : NULL;
}

/* The name of pc: its symbol, its module's PLT, or its module's name for
 * code no symbol covers (*unnamed set): "[libfoo.so.1]", "[vdso]", one
 * function of that module, as perf and pprof name it (by offset, each
 * address would be a function of its own). */
static char *name_of(unwinder *u, uint64_t pc, int *unnamed)
{
    Dwfl_Module *mod = u->dwfl && in_code(u, pc) ? dwfl_addrmodule(u->dwfl, pc) : NULL;
    char buf[512];
    *unnamed = 0;
    if (!mod) /* one name for all of them: anonymous code does not aggregate */
        return strdup("[unknown]");
    /* Not libdwfl's lookup: it reads the module's whole table for each PC
     * no symbol covers (stripped libraries' own functions). */
    const char *name = rec_symbols_name(&u->symbols, mod, pc);
    if (name)
        return strndup(name, UW_MAX_NAME - 1);
    const char *path = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    const char *base = path ? strrchr(path, '/') : NULL;
    const char *module = base ? base + 1 : path ? path : "?";
    /* A file deleted since it was mapped (a package upgraded under a
     * running zeek) is the same module. */
    static const char deleted[] = " (deleted)";
    size_t len = strlen(module), cut = sizeof deleted - 1;
    int n = (int)(len > cut && !strcmp(module + len - cut, deleted) ? len - cut : len);
    const char *plt = plt_section(mod, pc);
    if (plt) /* a call through the PLT: one frame per module, not per stub */
        snprintf(buf, sizeof buf, "[%.*s %s]", n, module, plt);
    else if (module[0] == '[') /* "[vdso]": bracketed already */
        snprintf(buf, sizeof buf, "%.*s", n, module);
    else
        snprintf(buf, sizeof buf, "[%.*s]", n, module);
    *unnamed = !plt;
    return strdup(buf);
}

/* Sends every message queued, waiting for room as long as it takes (the
 * recorder reads them, or gives this process up). */
static void flush_or_exit(unwinder *u)
{
    outgoing *o = &u->out;
    struct mmsghdr m[OUT_MAX];
    struct iovec iov[OUT_MAX];
    for (size_t k = 0; k < o->n; k++) {
        iov[k] = (struct iovec){o->bytes + o->at[k], o->at[k + 1] - o->at[k]};
        m[k] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[k], .msg_iovlen = 1}};
    }
    for (size_t sent = 0; sent < o->n;) {
        int got = sendmmsg(u->sock, m + sent, (unsigned)(o->n - sent), MSG_NOSIGNAL);
        if (got < 0 && errno != EINTR)
            _exit(0); /* the recorder is gone */
        sent += got > 0 ? (size_t)got : 0;
    }
    o->n = o->used = 0;
}

/* Queues one message (sent by flush_or_exit, before this process waits). */
static void send_or_exit(unwinder *u, const rec_unwind_head *h, const void *payload, size_t len)
{
    outgoing *o = &u->out;
    if (o->n == OUT_MAX || o->used + sizeof *h + len > OUT_BYTES)
        flush_or_exit(u);
    if (sizeof *h + len > OUT_BYTES)
        _exit(4); /* no answer is that long */
    if (!o->n)
        o->first_ns = rec_now_ns();
    o->at[o->n] = o->used;
    memcpy(o->bytes + o->used, h, sizeof *h);
    memcpy(o->bytes + o->used + sizeof *h, payload, len);
    o->used += sizeof *h + len;
    o->at[++o->n] = o->used;
}

/* The module id of mod, sent to the recorder the first time (its range,
 * its first mapping's file offset, its build-id, its path). -1 when out
 * of memory. */
static int64_t module_id(unwinder *u, Dwfl_Module *mod)
{
    Dwarf_Addr start, end;
    const char *path = dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, NULL, NULL);
    if (!path || !*path || start >= end)
        return -2; /* nothing a recorder could use: the frame goes without */
    size_t path_len = strnlen(path, UW_MAX_PATH + 1);
    if (path_len > UW_MAX_PATH)
        return -2;
    for (size_t i = 0; i < u->nmodules; i++)
        if (u->modules[i].start == start && u->modules[i].end == end &&
            !strcmp(u->modules[i].path, path))
            return (int64_t)i;
    if (zs_grow(&u->modules, &u->modules_cap, u->nmodules + 1, sizeof *u->modules, 16))
        return -1;
    char *copy = strdup(path);
    if (!copy)
        return -1;
    u->modules[u->nmodules] = (sent_module){start, end, copy};
    /* The build-id note is read from the file: its Elf must be open. */
    Dwarf_Addr bias;
    dwfl_module_getelf(mod, &bias);
    const unsigned char *bits = NULL;
    GElf_Addr note_at;
    int bits_len = dwfl_module_build_id(mod, &bits, &note_at);
    if (bits_len < 0 || bits_len > UW_MAX_BUILD_ID || !bits)
        bits_len = 0;
    uint8_t msg[sizeof(rec_unwind_module) + UW_MAX_BUILD_ID + UW_MAX_PATH];
    rec_unwind_module m = {start, end, file_offset_at(u, start), (uint32_t)bits_len,
                           (uint32_t)path_len};
    memcpy(msg, &m, sizeof m);
    if (bits_len)
        memcpy(msg + sizeof m, bits, (size_t)bits_len);
    memcpy(msg + sizeof m + bits_len, path, path_len);
    rec_unwind_head head = {UW_MODULE, (uint32_t)u->nmodules};
    send_or_exit(u, &head, msg, sizeof m + (size_t)bits_len + path_len);
    return (int64_t)u->nmodules++;
}

/* Sends the next location: pc in module (0: none, else id + 1) named by
 * symbol. */
static uint32_t send_location(unwinder *u, uint64_t pc, uint32_t module, uint32_t symbol)
{
    rec_unwind_location l = {pc, module, symbol};
    rec_unwind_head head = {UW_LOCATION, u->nlocations};
    send_or_exit(u, &head, &l, sizeof l);
    return u->nlocations++;
}

static int same_name(const void *ctx, uint32_t id, const void *key)
{
    return !strcmp(((const unwinder *)ctx)->names[id], key);
}

/* The id of a symbol name (taken over); a name not seen before is given the
 * next id and sent first. -1 when out of memory. */
static int64_t name_id(unwinder *u, char *name)
{
    uint64_t h = zs_fnv1a(ZS_FNV_SEED, name, strlen(name));
    int64_t id = zs_intern_find(&u->by_name, h, same_name, u, name);
    if (id >= 0) {
        free(name);
        return id;
    }
    if (zs_grow(&u->names, &u->names_cap, u->nnames + 1, sizeof *u->names, 256))
        return free(name), -1;
    if (zs_intern_add(&u->by_name, h, (uint32_t)u->nnames))
        return free(name), -1;
    u->names[u->nnames] = name;
    rec_unwind_head head = {UW_NAME, (uint32_t)u->nnames};
    send_or_exit(u, &head, name, strlen(name));
    return (int64_t)u->nnames++;
}

/* A function DIE's name: its linkage name (mangled, as the symbol tables
 * name functions, so that an inlined function reads like an out-of-line
 * one), else its plain name; an inlined instance has both on its abstract
 * origin, which dwarf_attr_integrate follows. */
static const char *die_function_name(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *name = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
        name = dwarf_formstring(&attr);
    if (!name && dwarf_attr_integrate(die, DW_AT_name, &attr))
        name = dwarf_formstring(&attr);
    return name;
}

/* The file and line an inlined instance was called from, in its caller. */
static int call_site(Dwarf_Die *inlined, Dwarf_Files *files, size_t nfiles, const char **file,
                     Dwarf_Word *line)
{
    Dwarf_Attribute attr;
    Dwarf_Word index;
    if (!files || !dwarf_attr(inlined, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &index) ||
        index >= nfiles || !dwarf_attr(inlined, DW_AT_call_line, &attr) ||
        dwarf_formudata(&attr, line))
        return -1;
    *file = dwarf_filesrc(files, index, NULL, NULL);
    return *file ? 0 : -1;
}

/* Interns a name cut to the protocol's bound; -1 when out of memory. */
static int64_t text_id(unwinder *u, const char *text)
{
    char *copy = strndup(text, UW_MAX_NAME - 1);
    return copy ? name_id(u, copy) : -1;
}

/* Adds one line (function name, file, line) to out; the outermost
 * function is named by its symbol (outer_symbol) so that it stays the
 * function the location's symbol names. 0, 1 when it cannot be said (the
 * lines end there), -1 when out of memory. */
static int add_line(unwinder *u, rec_unwind_line *out, const char *function, int64_t symbol,
                    const char *file, Dwarf_Word line)
{
    if (!file || line == 0 || line > UW_MAX_LINE || (symbol < 0 && !function))
        return 1;
    int64_t f = symbol >= 0 ? symbol : text_id(u, function);
    int64_t s = f >= 0 ? text_id(u, file) : -1;
    if (s < 0)
        return -1;
    *out = (rec_unwind_line){(uint32_t)f, (uint32_t)s, (uint32_t)line};
    return 0;
}

/* The source lines of pc from its module's DWARF, innermost first: the
 * line pc is on, in the innermost inlined function, then each inlined
 * call's site in its caller, up to the function the symbol names. 0 when
 * there is no DWARF there, -1 when out of memory. */
static int lines_of(unwinder *u, Dwfl_Module *mod, uint64_t pc, uint32_t symbol,
                    rec_unwind_line *out)
{
    Dwarf_Addr bias;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias);
    Dwfl_Line *src = cu ? dwfl_module_getsrc(mod, pc) : NULL;
    int lineno = 0;
    const char *file = src ? dwfl_lineinfo(src, NULL, &lineno, NULL, NULL, NULL) : NULL;
    if (!file || lineno <= 0)
        return 0;
    Dwarf_Die scopes[UW_MAX_INLINE + 1];
    int nscopes = rec_scopes_at(&u->scopes, cu, pc - bias, scopes, UW_MAX_INLINE + 1);
    if (nscopes < 0)
        return -1;
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
        files = NULL;
    int n = 0, rc = 0;
    Dwarf_Word line = (Dwarf_Word)lineno;
    /* scopes run innermost first: inlined instances, then the subprogram
     * they lie in (not always listed: GCC's out-of-line copy of a function
     * that is also inlined elsewhere can be missing). */
    for (int i = 0; i < nscopes && n < UW_MAX_INLINE - 1 && rc == 0; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag == DW_TAG_subprogram)
            break;
        if (tag != DW_TAG_inlined_subroutine)
            continue;
        rc = add_line(u, &out[n], die_function_name(&scopes[i]), -1, file, line);
        n += rc == 0;
        if (rc == 0 && call_site(&scopes[i], files, nfiles, &file, &line) != 0)
            rc = 1; /* its caller's line is not known: the chain ends here */
    }
    /* The outermost: the function the symbol names, at the outermost
     * inlined call (or the PC's line). */
    if (rc == 0) {
        rc = add_line(u, &out[n], NULL, symbol, file, line);
        n += rc == 0;
    }
    /* A chain cut short would put its last line in the wrong function:
     * none then. */
    return rc < 0 ? -1 : rc > 0 ? 0 : n;
}

static uint64_t hash_key(const location_key *k)
{
    uint64_t h = zs_fnv1a(ZS_FNV_SEED, &k->module, 3 * sizeof k->module);
    h = zs_fnv1a(h, &k->pc, sizeof k->pc);
    return zs_fnv1a(h, k->lines, k->nlines * sizeof k->lines[0]);
}

static int same_key(const void *ctx, uint32_t id, const void *key)
{
    const location_key *a = &((const unwinder *)ctx)->keys[id], *b = key;
    return a->module == b->module && a->symbol == b->symbol && a->nlines == b->nlines &&
           a->pc == b->pc && !memcmp(a->lines, b->lines, a->nlines * sizeof a->lines[0]);
}

/* The location id of what k says: the one sent before, else a new one
 * sent now (at pc, with its lines). -1 when out of memory. */
static int64_t location_id(unwinder *u, location_key *k, uint64_t pc)
{
    uint64_t h = hash_key(k);
    int64_t known = zs_intern_find(&u->by_key, h, same_key, u, k);
    if (known >= 0)
        return u->keys[known].location;
    if (zs_grow(&u->keys, &u->keys_cap, u->nkeys + 1, sizeof *u->keys, 1024) ||
        zs_intern_add(&u->by_key, h, (uint32_t)u->nkeys))
        return -1;
    k->location = send_location(u, pc, k->module, k->symbol);
    if (k->nlines) {
        rec_unwind_head head = {UW_LINES, k->location};
        send_or_exit(u, &head, k->lines, k->nlines * sizeof k->lines[0]);
    }
    u->keys[u->nkeys++] = *k;
    return k->location;
}

/* The location of pc, worked out once per PC: its symbol and module are
 * sent before it, each once. NULL when out of memory. */
static const pc_entry *location(unwinder *u, uint64_t pc)
{
    uint64_t h = zs_mix64(pc); /* a bijection: the hash is the key */
    int64_t known = zs_intern_find(&u->by_pc, h, NULL, NULL, NULL);
    if (known >= 0)
        return &u->pc_loc[known];
    int unnamed;
    char *name = name_of(u, pc, &unnamed);
    int64_t id = name ? name_id(u, name) : -1;
    if (id < 0)
        return NULL;
    Dwfl_Module *mod = u->dwfl && in_code(u, pc) ? dwfl_addrmodule(u->dwfl, pc) : NULL;
    int64_t module = mod ? module_id(u, mod) : -2;
    if (module == -1)
        return NULL;
    location_key k = {.module = module >= 0 ? (uint32_t)module + 1 : 0, .symbol = (uint32_t)id,
                      .pc = unnamed ? pc : 0};
    int n = mod ? lines_of(u, mod, pc, (uint32_t)id, k.lines) : 0;
    if (n < 0)
        return NULL;
    k.nlines = (uint32_t)n;
    int64_t loc = location_id(u, &k, pc);
    if (loc < 0 || zs_grow(&u->pc_loc, &u->pc_cap, u->npc + 1, sizeof *u->pc_loc, 1024) ||
        zs_intern_add(&u->by_pc, h, (uint32_t)u->npc))
        return NULL;
    u->pc_loc[u->npc] = (pc_entry){(uint32_t)loc, (uint32_t)id, mod == NULL};
    return &u->pc_loc[u->npc++];
}

int rec_unwinder_is_fiber_entry(const char *name)
{
    return !strcmp(name, "__fiber_run_trampoline") || !strcmp(name, "__fiber_switch_trampoline");
}

/* Whether the frames unwound so far reach a fiber's entry: what lies
 * beyond it (the fiber's start routine, often without CFI) is cut anyway. */
static int reaches_fiber_entry(unwinder *u)
{
    for (size_t i = 0; i < u->copy.n; i++) {
        const pc_entry *at = location(u, u->pcs[i]);
        if (!at)
            _exit(4);
        if (rec_unwinder_is_fiber_entry(u->names[at->symbol]))
            return 1;
    }
    return 0;
}

static void unwind(unwinder *u)
{
    rec_dwfl_copy *c = &u->copy;
    uint32_t out[1 + UW_MAX_FRAMES + 2 * UW_MAX_FRAMES];
    uint32_t flags = 0;
    c->n = 0;
    c->beyond_copy = 0;
    if (u->dwfl && c->len) {
        rec_cfi_start start = {c->regs.rip, c->regs.rsp, c->regs.rbp, c->stack, c->len};
        rec_cfi_frames found = {c->pcs, c->sps, c->max, 0, 0};
        int rc = rec_cfi_unwind(&u->cfi, u->dwfl, &start, &found);
        if (rc == REC_CFI_NOMEM)
            _exit(4); /* the recorder carries on without */
        c->n = found.n;
        c->beyond_copy = found.beyond_copy;
        if (rc == REC_CFI_GENERAL && !reaches_fiber_entry(u)) {
            flags |= UW_GENERAL_PATH;
            rec_dwfl_unwind(u->dwfl, c);
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++) {
        /* Worked out once a PC (the module search, not each sample's). */
        const pc_entry *at = location(u, u->pcs[i]);
        if (!at)
            _exit(4); /* out of memory: the recorder carries on without */
        if (at->outside)
            flags |= UW_OUTSIDE_MODULES;
        out[1 + n++] = at->location;
        if (rec_unwinder_is_fiber_entry(u->names[at->symbol])) {
            flags |= UW_ON_FIBER; /* what lies beyond is not zeek's stack */
            break;
        }
    }
    if (!c->n)
        flags |= UW_OUTSIDE_MODULES;
    if (!(flags & UW_ON_FIBER) && (c->beyond_copy || c->n == UW_MAX_FRAMES))
        flags |= UW_BEYOND_COPY;
    out[0] = flags;
    memcpy(out + 1 + n, u->sps, n * sizeof u->sps[0]);
    rec_unwind_head h = {UW_RESULT, (uint32_t)n};
    send_or_exit(u, &h, out, (1 + n) * sizeof out[0] + n * sizeof u->sps[0]);
}

static int add_file(file_table *t, const char *path, size_t len, int fd)
{
    char *p = strndup(path, len);
    if (!p || zs_grow(&t->v, &t->cap, t->n + 1, sizeof *t->v, 16)) {
        free(p);
        return -1;
    }
    t->v[t->n++] = (module_file){p, fd};
    return 0;
}

static void handle(unwinder *u, const rec_unwind_head *h, const uint8_t *p, size_t len, int fd)
{
    switch (h->type) {
    case UW_FILE:
        if (fd < 0 || add_file(&u->pending, (const char *)p, len, fd) != 0)
            _exit(4);
        return;
    case UW_MAPS_TEXT: {
        if (zs_grow(&u->maps, &u->maps_cap, u->maps_len + len, 1, 64 << 10))
            _exit(4);
        memcpy(u->maps + u->maps_len, p, len);
        u->maps_len += len;
        return;
    }
    case UW_MAPS_END: {
        uint64_t vdso_start = 0;
        if (h->arg && len >= sizeof vdso_start)
            memcpy(&vdso_start, p, sizeof vdso_start);
        load_modules(u, h->arg ? fd : -1, vdso_start);
        if (fd >= 0)
            close(fd);
        free(u->maps);
        u->maps = NULL;
        u->maps_len = u->maps_cap = 0;
        return;
    }
    case UW_UNWIND:
        if (len < sizeof u->copy.regs || h->arg > UW_MAX_STACK || len - sizeof u->copy.regs < h->arg)
            _exit(5);
        memcpy(&u->copy.regs, p, sizeof u->copy.regs);
        /* Read in place (a copy of a few KiB a sample saved): the message
         * stays until the next is received, after this unwind. */
        u->copy.stack = p + sizeof u->copy.regs;
        u->copy.len = h->arg;
        unwind(u);
        return;
    default:
        _exit(5);
    }
}

/* Messages from the recorder, taken several to a system call. */
enum { IN_MAX = 8 };
typedef struct incoming {
    uint8_t *buf; /* IN_MAX slots of UW_MAX_MSG bytes */
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control[IN_MAX];
    struct iovec iov[IN_MAX];
    struct mmsghdr m[IN_MAX];
} incoming;

static int receive_some(int sock, incoming *in, int flags)
{
    for (int k = 0; k < IN_MAX; k++) {
        in->iov[k] = (struct iovec){in->buf + (size_t)k * UW_MAX_MSG, UW_MAX_MSG};
        in->m[k] = (struct mmsghdr){.msg_hdr = {.msg_iov = &in->iov[k], .msg_iovlen = 1,
                                                .msg_control = in->control[k].buf,
                                                .msg_controllen = sizeof in->control[k].buf}};
    }
    int n;
    while ((n = recvmmsg(sock, in->m, IN_MAX, MSG_CMSG_CLOEXEC | flags, NULL)) < 0 && errno == EINTR)
        ;
    return n;
}

/* The next messages (how many; 0 when the recorder is gone). When none
 * is there, the answers so far go first, then it waits batch_ms before it
 * waits for more: a wake-up costs more than the unwinds it serves (a
 * context switch, on a VM an exit to the hypervisor, the target's core
 * disturbed), so the copies queued meanwhile are taken together. */
static int next_messages(unwinder *u, incoming *in, unsigned batch_ms)
{
    int sock = u->sock;
    int n = receive_some(sock, in, MSG_DONTWAIT);
    if (n > 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
        return n > 0 ? n : 0;
    flush_or_exit(u);
    if (batch_ms)
        poll(NULL, 0, (int)batch_ms);
    n = receive_some(sock, in, MSG_WAITFORONE);
    return n > 0 ? n : 0;
}

/* Message k's descriptor, -1 when it carries none. */
static int fd_of(const incoming *in, int k)
{
    int fd = -1;
    struct msghdr *h = (struct msghdr *)&in->m[k].msg_hdr;
    struct cmsghdr *c = CMSG_FIRSTHDR(h);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

void rec_unwinder_main(int sock, unsigned batch_ms)
{
    int keep[] = {sock};
    /* Normal scheduling: real-time, it would run on the core of the target
     * just sampled (the recorder follows it there) and hold the target off
     * it after each sample; the recorder never waits for it. */
    rec_sandbox_limits lim = {.address_space = UNWINDER_ADDRESS_SPACE, .open_files = 4096,
                              .nice = 0};
    if (rec_sandbox_enter(&lim, keep, 1) != 0)
        _exit(2);
    const char *crash = getenv(TEST_CRASH_ENV);
    static unwinder u; /* not on the stack: its frames alone are 4 KiB */
    u.sock = sock;
    u.copy = (rec_dwfl_copy){.pcs = u.pcs, .sps = u.sps, .max = UW_MAX_FRAMES};
    static incoming in;
    if (!(in.buf = malloc((size_t)IN_MAX * UW_MAX_MSG)))
        _exit(4);
    /* The markers' names and locations come first (REC_NATIVE_TRUNCATED_ID,
     * REC_NATIVE_FIBER_ID): in no module, at no address. */
    static const char *const markers[] = {"[truncated]", "[spicy fiber]"};
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++) {
        char *name = strdup(markers[i]);
        if (!name || name_id(&u, name) != (int64_t)i || send_location(&u, 0, 0, (uint32_t)i) != i)
            _exit(4);
    }
    unsigned long samples = 0;
    for (;;) {
        int got = next_messages(&u, &in, batch_ms);
        if (!got)
            _exit(0); /* the recorder closed its end */
        for (int k = 0; k < got; k++) {
            size_t n = in.m[k].msg_len;
            const uint8_t *buf = in.buf + (size_t)k * UW_MAX_MSG;
            int fd = fd_of(&in, k);
            if (n == 0)
                _exit(0); /* the recorder closed its end */
            if (n < sizeof(rec_unwind_head) || (in.m[k].msg_hdr.msg_flags & MSG_TRUNC))
                _exit(5);
            rec_unwind_head h;
            memcpy(&h, buf, sizeof h);
            if (h.type == UW_UNWIND && crash && *crash && ++samples >= strtoul(crash, NULL, 10))
                abort(); /* the test hook: a parser bug, as the recorder sees it */
            handle(&u, &h, buf + sizeof h, n - sizeof h, fd);
        }
        if (u.out.n && rec_now_ns() - u.out.first_ns >= OUT_AFTER_NS)
            flush_or_exit(&u);
    }
}
