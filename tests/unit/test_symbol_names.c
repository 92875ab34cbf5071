/* SPDX-License-Identifier: BSD-3-Clause */
/* The name a native function is recorded under (rec_symbol_names.h,
 * rec_symbols.h): one alias of those at its address, by a total order
 * whatever order its table lists them in, shown without its symbol version
 * unless another function of the module would then share its name; the
 * same from a library's .symtab (debug symbols) as from its .dynsym alone.
 * Then the same names looked up live in this process's libc, with and
 * without its debug symbols. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlvsym */
#endif
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "native/rec_symbol_names.h"
#include "native/rec_symbols.h"

enum { G = REC_SYMBOL_GLOBAL, W = REC_SYMBOL_WEAK, L = REC_SYMBOL_LOCAL };

/* One symbol of a table: name, or name and version as .dynsym gives them. */
typedef struct sym {
    uint64_t start, size;
    const char *name;
    int bind;
    const char *version;
    int hidden;
} sym;

/* The shown name of the first symbol at start once v is sorted and
 * settled, as rec_symbols_find picks it. Static: valid until the next call. */
static const char *named_at(const sym *in, size_t n, uint64_t start)
{
    static char out[256];
    rec_symbol v[16];
    char *arena = NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = rec_symbol_make(in[i].start, in[i].start + in[i].size, in[i].name, in[i].bind,
                               in[i].version, in[i].hidden);
    qsort(v, n, sizeof *v, rec_symbol_order);
    CHECK(rec_symbol_names_settle(v, n, &arena) == 0);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (v[i].start == start) {
            snprintf(out, sizeof out, "%s", v[i].shown);
            break;
        }
    free(arena);
    return out;
}

static void expect(const sym *in, size_t n, uint64_t start, const char *want)
{
    const char *got = named_at(in, n, start);
    if (strcmp(got, want))
        fprintf(stderr, "at 0x%llx: \"%s\", want \"%s\"\n", (unsigned long long)start, got, want);
    CHECK(!strcmp(got, want));
}

/* Every order of the n (<= 8) symbols gives the same name at start. */
static void expect_every_order(const sym *in, size_t n, uint64_t start, const char *want)
{
    sym v[8];
    size_t c[8] = {0}, orders = 1, differ = 0;
    memcpy(v, in, n * sizeof *v);
    differ += strcmp(named_at(v, n, start), want) != 0;
    for (size_t i = 1; i < n;) { /* Heap's algorithm: each order once */
        if (c[i] < i) {
            size_t j = i % 2 ? c[i] : 0;
            sym t = v[j];
            v[j] = v[i];
            v[i] = t;
            differ += strcmp(named_at(v, n, start), want) != 0;
            orders++;
            c[i]++;
            i = 1;
        } else {
            c[i++] = 0;
        }
    }
    if (differ)
        fprintf(stderr, "%s: %zu of %zu orders named it otherwise\n", want, differ, orders);
    CHECK(differ == 0);
}

static void test_aliases(void)
{
    /* libc's clock_gettime as its .symtab lists it (libc6-dbg) ... */
    static const sym symtab[] = {
        {0xcf420, 106, "__clock_gettime_2", L, 0, 0},
        {0xcf420, 106, "__GI___clock_gettime", L, 0, 0},
        {0xcf420, 106, "clock_gettime@@GLIBC_2.17", G, 0, 0},
        {0xcf420, 106, "clock_gettime@GLIBC_2.2.5", G, 0, 0},
        {0xcf420, 106, "__clock_gettime", G, 0, 0},
    };
    expect_every_order(symtab, 5, 0xcf420, "clock_gettime");
    /* ... and as its .dynsym does, the versions in .gnu.version. */
    static const sym dynsym[] = {
        {0xcf420, 106, "clock_gettime", G, "GLIBC_2.17", 0},
        {0xcf420, 106, "clock_gettime", G, "GLIBC_2.2.5", 1},
        {0xcf420, 106, "__clock_gettime", G, "GLIBC_PRIVATE", 0},
    };
    expect_every_order(dynsym, 3, 0xcf420, "clock_gettime");
    /* __libc_start_main: the default version, not the compat one, nor a
     * local alias. */
    static const sym start_main[] = {
        {0x27280, 321, "__libc_start_main_alias_2", L, 0, 0},
        {0x27280, 321, "__libc_start_main_impl", L, 0, 0},
        {0x27280, 321, "__libc_start_main@GLIBC_2.2.5", G, 0, 0},
        {0x27280, 321, "__libc_start_main@@GLIBC_2.34", G, 0, 0},
        {0x27280, 321, "__libc_start_main_alias_1", L, 0, 0},
    };
    expect_every_order(start_main, 5, 0x27280, "__libc_start_main");
    /* Global over weak over local, then the default version, then the
     * shortest, then byte order. */
    static const sym ranks[] = {
        {0x100, 16, "a", L, 0, 0}, {0x100, 16, "bb", W, 0, 0}, {0x100, 16, "ccc", G, 0, 0},
    };
    expect_every_order(ranks, 3, 0x100, "ccc");
    static const sym weak[] = {{0x100, 16, "a", L, 0, 0}, {0x100, 16, "bb", W, 0, 0}};
    expect_every_order(weak, 2, 0x100, "bb");
    static const sym versions[] = {
        {0x100, 16, "f@V1", G, 0, 0}, {0x100, 16, "g@@V2", G, 0, 0},
    };
    expect_every_order(versions, 2, 0x100, "g");
    static const sym lengths[] = {
        {0x100, 16, "__f_impl", G, 0, 0}, {0x100, 16, "f_fast", G, 0, 0}, {0x100, 16, "fx", G, 0, 0},
    };
    expect_every_order(lengths, 3, 0x100, "fx");
    static const sym ties[] = {
        {0x100, 16, "fc", G, 0, 0}, {0x100, 16, "fa", G, 0, 0}, {0x100, 16, "fb", G, 0, 0},
        {0x100, 16, "fa@@V", G, 0, 0},
    };
    expect_every_order(ties, 4, 0x100, "fa");
}

static void test_shared_names(void)
{
    /* realpath: the default version and a compat one, two functions at two
     * addresses: the compat one keeps its version, from either table. */
    static const sym symtab[] = {
        {0x3d560, 1966, "realpath@@GLIBC_2.3", G, 0, 0},
        {0x150070, 33, "realpath@GLIBC_2.2.5", G, 0, 0},
        {0x150070, 33, "__old_realpath", L, 0, 0},
    };
    expect(symtab, 3, 0x3d560, "realpath");
    expect(symtab, 3, 0x150070, "realpath@GLIBC_2.2.5");
    static const sym dynsym[] = {
        {0x3d560, 1966, "realpath", G, "GLIBC_2.3", 0},
        {0x150070, 33, "realpath", G, "GLIBC_2.2.5", 1},
    };
    expect(dynsym, 2, 0x3d560, "realpath");
    expect(dynsym, 2, 0x150070, "realpath@GLIBC_2.2.5");
    /* Two compat versions and no default: both keep theirs. */
    static const sym compat[] = {{0x100, 8, "f@V1", G, 0, 0}, {0x200, 8, "f@V2", G, 0, 0}};
    expect(compat, 2, 0x100, "f@V1");
    expect(compat, 2, 0x200, "f@V2");
    /* A compat version alone, or beside a local of its name (.dynsym has
     * no locals: the name must not depend on the table): plain. */
    static const sym alone[] = {{0x100, 8, "f@V1", G, 0, 0}, {0x200, 8, "f", L, 0, 0}};
    expect(alone, 2, 0x100, "f");
    /* An '@' that is no version is the name's. */
    static const sym odd[] = {{0x100, 8, "f@x/y", G, 0, 0}, {0x200, 8, "@V", G, 0, 0}};
    expect(odd, 2, 0x100, "f@x/y");
    expect(odd, 2, 0x200, "@V");
}

/* No debug symbols: libdwfl reads the files' .dynsym, as on a host
 * without the library's debug package. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                        char **debuginfo_file_name)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)debuglink_file;
    (void)debuglink_crc, (void)debuginfo_file_name;
    return -1;
}

static const Dwfl_Callbacks with_debug = {.find_elf = dwfl_linux_proc_find_elf,
                                          .find_debuginfo = dwfl_standard_find_debuginfo};
static const Dwfl_Callbacks without_debug = {.find_elf = dwfl_linux_proc_find_elf,
                                             .find_debuginfo = no_debuginfo};

/* The names of pcs in this process, from the symbol tables callbacks find;
 * *symbols: how many symbols libc's table has. */
static void name_live(const Dwfl_Callbacks *cb, const uint64_t *pcs, size_t n, char **names,
                      int *symbols)
{
    Dwfl *dwfl = dwfl_begin(cb);
    CHECK(dwfl != NULL);
    if (!dwfl)
        return;
    dwfl_report_begin(dwfl);
    CHECK(dwfl_linux_proc_report(dwfl, getpid()) == 0);
    dwfl_report_end(dwfl, NULL, NULL);
    rec_symbols syms = {0};
    *symbols = 0;
    for (size_t i = 0; i < n; i++) {
        Dwfl_Module *mod = dwfl_addrmodule(dwfl, pcs[i]);
        const char *name = mod ? rec_symbols_name(&syms, mod, pcs[i]) : NULL;
        names[i] = strdup(name ? name : "(none)");
        if (mod && i == 0)
            *symbols = dwfl_module_getsymtab(mod);
    }
    rec_symbols_clear(&syms);
    dwfl_end(dwfl);
}

/* An assembler label: a code symbol without a size. */
__asm__(".text\n"
        ".globl zs_test_label\n"
        ".type zs_test_label, @function\n"
        "zs_test_label:\n"
        "  nop\n  nop\n  nop\n  ret\n");
void zs_test_label(void);

/* A PC no sized symbol covers is named by the label before it, without
 * libdwfl's scan of the whole table. */
static void test_label(void)
{
    uint64_t pc = (uint64_t)(uintptr_t)&zs_test_label + 2;
    char *name = NULL;
    int symbols;
    name_live(&with_debug, &pc, 1, &name, &symbols);
    printf("label: %s\n", name);
    CHECK(name && !strcmp(name, "zs_test_label"));
    free(name);
}

static void test_live(void)
{
    /* libc's own definitions: under ASan, RTLD_DEFAULT finds its
     * interceptors first. */
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    CHECK(libc != NULL);
    if (!libc)
        return;
    struct {
        void *at;
        const char *want;
    } fns[] = {
        {dlsym(libc, "clock_gettime"), "clock_gettime"},
        {dlsym(libc, "__libc_start_main"), "__libc_start_main"},
        {dlsym(libc, "realpath"), "realpath"},
        {dlvsym(libc, "realpath", "GLIBC_2.2.5"), "realpath@GLIBC_2.2.5"},
        {dlsym(libc, "clock_nanosleep"), "clock_nanosleep"},
    };
    enum { N = sizeof fns / sizeof fns[0] };
    uint64_t pcs[N];
    char *with[N], *without[N];
    int n_with, n_without;
    for (size_t i = 0; i < N; i++) {
        CHECK(fns[i].at != NULL);
        pcs[i] = (uint64_t)(uintptr_t)fns[i].at + 1; /* inside it, as a return address is */
    }
    name_live(&with_debug, pcs, N, with, &n_with);
    name_live(&without_debug, pcs, N, without, &n_without);
    printf("libc: %d symbols with its debug symbols looked for, %d from .dynsym alone%s\n", n_with,
           n_without, n_with == n_without ? " (no debug symbols installed: both .dynsym)" : "");
    for (size_t i = 0; i < N; i++) {
        printf("  %-24s %-24s %s\n", fns[i].want, with[i], without[i]);
        CHECK(!strcmp(with[i], fns[i].want));
        CHECK(!strcmp(without[i], fns[i].want));
        free(with[i]);
        free(without[i]);
    }
    dlclose(libc);
}

int main(void)
{
    test_aliases();
    test_shared_names();
    test_live();
    test_label();
    CHECK_MAIN_END;
}
