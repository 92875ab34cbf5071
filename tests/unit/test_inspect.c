/* SPDX-License-Identifier: BSD-3-Clause */
/* rec_inspect: what the recorder believes of its sandboxed inspector.
 *
 * The child that parses an executable may have been subverted by the very
 * file it parses, so its verdict is checked before use. The child here is
 * rec_inspect's own (forked, sandboxed, its verdict written over the pipe
 * by rec_inspect.c), but the parsers it runs are this file's:
 * zs_elf_lookup_fd and zs_dwarf_layout_from are defined here, so the
 * library's are never linked in, and they tell the lies a subverted parser
 * could: out-of-range return codes and error codes, unterminated strings,
 * a build-id that is not hex, a layout nobody asked for or one that fails
 * zs_layout_check, absurd symbol values, or bytes of their own on the pipe
 * (half a verdict, none, a crash, a verdict and then no exit). Each lie is
 * refused with a clear error or made harmless, never used as said. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "targets/rec_inspect.h"
#include "targets/rec_target.h"
#include "zs_dwarf.h"
#include "zs_elf.h"
#include "zs_layout.h"

/* What the parsers say in the child (set before each rec_inspect; the
 * forked child has its own copy). */
typedef enum raw {
    RAW_NONE,          /* the parsers return: rec_inspect's child writes the verdict */
    RAW_WHOLE,         /* the verdict the story tells, written whole, then exit 0 */
    RAW_HALF,          /* half of it, then exit 0 */
    RAW_EMPTY,         /* nothing, exit 0 */
    RAW_WHOLE_EXIT_3,  /* all of it, then exit 3 */
    RAW_CRASH,         /* abort(), as a parser bug */
    RAW_WHOLE_HANG,    /* all of it, then wait forever */
} raw;

static struct story {
    int elf_rc;
    zs_error elf_err;
    zs_elf_info info;
    uint64_t version; /* the value of the symbol "version" */
    uint64_t value;   /* of the others asked for: this one, + 8 for each */
    int dwarf_rc;
    zs_error dwarf_err;
    zs_layout layout;
    raw raw;
} tell;

static const char *const SYMS[] = {"version", "_ZN4zeek6detail10call_stackE"};

/* The honest answer of a Zeek 8.2 executable. */
static void tell_honest(void)
{
    memset(&tell, 0, sizeof tell);
    snprintf(tell.info.build_id, sizeof tell.info.build_id, "0123456789abcdef");
    tell.version = 0x3000;
    tell.value = 0x4000;
    tell.dwarf_rc = 0;
    tell.layout = *zs_layout_builtin("8.2.2");
}

/* In the sandboxed child: the pipe is the one FIFO among its descriptors. */
static int verdict_pipe(void)
{
    for (int fd = 3; fd < 64; fd++) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
            return fd;
    }
    _exit(9);
}

static void found(zs_elf_symbol *syms, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        syms[i].value = !strcmp(syms[i].name, "version") ? tell.version : tell.value + 8 * i;
        syms[i].size = 8;
        syms[i].found = 1;
    }
}

/* The verdict the story tells, as rec_inspect's child lays it out. */
static void write_raw(const zs_elf_symbol *syms, size_t n)
{
    rec_inspect_verdict v = {tell.elf_rc, tell.elf_err, tell.info, {{0}}, tell.dwarf_rc,
                             tell.dwarf_err, tell.layout};
    for (size_t i = 0; i < n && i < REC_INSPECT_MAX_SYMS; i++)
        v.syms[i] = (rec_inspect_symbol){syms[i].value, syms[i].size, syms[i].found};
    int fd = verdict_pipe();
    size_t len = tell.raw == RAW_HALF ? sizeof v / 2 : tell.raw == RAW_EMPTY ? 0 : sizeof v;
    if (write(fd, &v, len) != (ssize_t)len)
        _exit(8);
    switch (tell.raw) {
    case RAW_WHOLE_EXIT_3: _exit(3);
    case RAW_CRASH: abort();
    case RAW_WHOLE_HANG:
        for (;;)
            poll(NULL, 0, -1);
    default: _exit(0);
    }
}

int zs_elf_lookup_fd(int fd, const char *name, zs_elf_symbol *syms, size_t n, zs_elf_info *info,
                     zs_error *err)
{
    (void)fd;
    (void)name;
    found(syms, n);
    if (tell.raw != RAW_NONE)
        write_raw(syms, n);
    *info = tell.info;
    *err = tell.elf_err;
    return tell.elf_rc;
}

int zs_dwarf_layout_from(const zs_dwarf_source *src, const char *build_id,
                         const char *zeek_version, zs_layout *out, zs_error *err)
{
    (void)src;
    (void)build_id;
    (void)zeek_version;
    *out = tell.layout;
    *err = tell.dwarf_err;
    return tell.dwarf_rc;
}

/* ---- asking ---- */

static rec_inspect_request request(int want_dwarf, rec_inspect_cache *cache)
{
    rec_inspect_request req = {.path = "/proc/self/exe", .shown = "the test's executable",
                               .nsyms = 2, .want_dwarf = want_dwarf, .zeek_version = "8.2.2",
                               .cache = cache};
    req.syms[0] = SYMS[0];
    req.syms[1] = SYMS[1];
    return req;
}

static int ask(int want_dwarf, rec_inspect_verdict *v, zs_error *err)
{
    rec_inspect_request req = request(want_dwarf, NULL);
    memset(err, 0, sizeof *err);
    return rec_inspect(&req, v, err);
}

/* Refused as an executable that cannot be trusted, saying so, and naming it. */
static int refused(int rc, const zs_error *err, const char *why)
{
    int ok = rc == -1 && err->code == ZS_E_EXE_REFUSED && strstr(err->detail, why) &&
             strstr(err->detail, "the test's executable");
    if (!ok)
        fprintf(stderr, "  expected a refusal with '%s', got rc %d: %s\n", why, rc, err->detail);
    return ok;
}

static int terminated(const char *s, size_t size) { return memchr(s, '\0', size) != NULL; }

/* ---- the cases ---- */

/* The honest answers are taken as they are: the lies below are refused
 * because they are lies, not because every verdict is. */
static void honest(void)
{
    rec_inspect_verdict v;
    zs_error err;
    tell_honest();
    CHECK(ask(0, &v, &err) == 0);
    CHECK(v.elf_rc == 0 && v.dwarf_rc == -1 && !strcmp(v.info.build_id, "0123456789abcdef"));
    CHECK(v.syms[0].found && v.syms[0].value == 0x3000 && v.syms[1].value == 0x4008);

    CHECK(ask(1, &v, &err) == 0);
    CHECK(v.dwarf_rc == 0 && zs_layout_equal(&v.layout, zs_layout_builtin("8.2.2")));

    /* A file that is not a Zeek is a verdict, not a failure. */
    tell.elf_rc = -1;
    tell.elf_err = (zs_error){ZS_E_NOT_ZEEK, "not an ELF file"};
    CHECK(ask(0, &v, &err) == 0);
    CHECK(v.elf_rc == -1 && v.elf_err.code == ZS_E_NOT_ZEEK && !strcmp(v.elf_err.detail, "not an ELF file"));
}

static void lying_codes(void)
{
    rec_inspect_verdict v;
    zs_error err;
    int rcs[] = {1, -2, 77, -2147483647 - 1};
    for (size_t i = 0; i < sizeof rcs / sizeof rcs[0]; i++) {
        tell_honest();
        tell.elf_rc = rcs[i];
        CHECK(refused(ask(0, &v, &err), &err, "implausible"));
        tell_honest();
        tell.dwarf_rc = rcs[i];
        CHECK(refused(ask(1, &v, &err), &err, "implausible"));
    }
    /* A layout nobody asked for. */
    tell_honest();
    tell.raw = RAW_WHOLE;
    CHECK(refused(ask(0, &v, &err), &err, "implausible"));
    tell.dwarf_rc = -1; /* the same verdict without it: taken */
    CHECK(ask(0, &v, &err) == 0 && v.syms[1].value == 0x4008);
}

/* Strings without their NUL are cut at their end; error codes out of the
 * table become the refusal of the executable. */
static void unterminated_strings(void)
{
    rec_inspect_verdict v;
    zs_error err;
    tell_honest();
    tell.dwarf_rc = -1;
    memset(tell.info.build_id, 'a', sizeof tell.info.build_id);
    CHECK(ask(0, &v, &err) == 0);
    CHECK(strlen(v.info.build_id) == sizeof v.info.build_id - 1);

    tell_honest();
    tell.elf_rc = -1;
    tell.elf_err.code = (zs_code)12345;
    memset(tell.elf_err.detail, 'x', sizeof tell.elf_err.detail);
    CHECK(ask(0, &v, &err) == 0);
    CHECK(v.elf_err.code == ZS_E_EXE_REFUSED && terminated(v.elf_err.detail, sizeof v.elf_err.detail));

    tell_honest();
    tell.dwarf_rc = -1;
    tell.dwarf_err.code = (zs_code)-3;
    memset(tell.dwarf_err.detail, 'y', sizeof tell.dwarf_err.detail);
    CHECK(ask(1, &v, &err) == 0);
    CHECK(v.dwarf_err.code == ZS_E_EXE_REFUSED && terminated(v.dwarf_err.detail, sizeof v.dwarf_err.detail));

    /* A layout's symbol names fill their arrays. */
    tell_honest();
    memset(tell.layout.sym_call_stack, 'C', ZS_SYMBOL_MAX);
    memset(tell.layout.sym_version, 'V', ZS_SYMBOL_MAX);
    memset(tell.layout.sym_network_time, 'N', ZS_SYMBOL_MAX);
    CHECK(ask(1, &v, &err) == 0);
    CHECK(strlen(v.layout.sym_call_stack) == ZS_SYMBOL_MAX - 1 &&
          strlen(v.layout.sym_version) == ZS_SYMBOL_MAX - 1 &&
          strlen(v.layout.sym_network_time) == ZS_SYMBOL_MAX - 1 &&
          terminated(v.layout.sym_frame_stack, ZS_SYMBOL_MAX));
}

static void not_hex(void)
{
    rec_inspect_verdict v;
    zs_error err;
    const char *ids[] = {"zz", "0123456789ABCDEF", "01 23", "\x7f"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        tell_honest();
        snprintf(tell.info.build_id, sizeof tell.info.build_id, "%s", ids[i]);
        CHECK(refused(ask(0, &v, &err), &err, "implausible"));
    }
    /* Unterminated, and not hex once cut. */
    tell_honest();
    memset(tell.info.build_id, 'g', sizeof tell.info.build_id);
    CHECK(refused(ask(0, &v, &err), &err, "implausible"));
}

/* Layouts zs_layout_check refuses, sent as DWARF's. */
static void bad_layouts(void)
{
    rec_inspect_verdict v;
    zs_error err;
    for (int i = 0; i < 8; i++) {
        tell_honest();
        zs_layout *l = &tell.layout;
        switch (i) {
        case 0: l->model = (zs_model)9; break;
        case 1: l->callinfo_size = 100000; break;
        case 2: l->callinfo_frame = -8; break;
        case 3: l->callinfo_call = l->callinfo_size; break;
        case 4: l->vector_end = 16; break;
        case 5: l->func_kind_size = 3; break;
        case 6: l->sym_call_stack[0] = '\0'; break;
        case 7: l->body_size = 1 << 30; break;
        }
        CHECK(zs_layout_check(l, "lie", &err) != 0);
        CHECK(refused(ask(1, &v, &err), &err, "implausible"));
    }
}

/* Bytes of the child's own on the pipe. */
static void raw_answers(void)
{
    rec_inspect_verdict v;
    zs_error err;
    tell_honest();
    tell.raw = RAW_HALF;
    CHECK(refused(ask(0, &v, &err), &err, "failed (exit 0)"));
    tell.raw = RAW_EMPTY;
    CHECK(refused(ask(0, &v, &err), &err, "failed (exit 0)"));
    tell.raw = RAW_WHOLE_EXIT_3;
    CHECK(refused(ask(0, &v, &err), &err, "failed (exit 3)"));
    tell.raw = RAW_CRASH;
    CHECK(refused(ask(0, &v, &err), &err, "crashed (signal 6"));
}

/* A lie refused is remembered as the refusal of that file (the same parse
 * would end the same way): an honest child is not asked again. */
static void cached(void)
{
    rec_inspect_cache *c = rec_inspect_cache_new();
    rec_inspect_request req = request(0, c);
    rec_inspect_verdict v;
    zs_error err = {0};
    uint64_t hits, runs;
    tell_honest();
    tell.elf_rc = 5;
    CHECK(refused(rec_inspect(&req, &v, &err), &err, "implausible"));
    tell_honest();
    err = (zs_error){0};
    CHECK(refused(rec_inspect(&req, &v, &err), &err, "implausible"));
    rec_inspect_cache_counts(c, &hits, &runs);
    CHECK(hits == 1 && runs == 1);
    rec_inspect_cache_free(c);

    /* A verdict made harmless is remembered made harmless. */
    c = rec_inspect_cache_new();
    req = request(0, c);
    tell_honest();
    tell.dwarf_rc = -1;
    memset(tell.info.build_id, 'b', sizeof tell.info.build_id);
    CHECK(rec_inspect(&req, &v, &err) == 0);
    memset(&v, 0x55, sizeof v);
    CHECK(rec_inspect(&req, &v, &err) == 0);
    CHECK(strlen(v.info.build_id) == sizeof v.info.build_id - 1);
    rec_inspect_cache_counts(c, &hits, &runs);
    CHECK(hits == 1 && runs == 1);
    rec_inspect_cache_free(c);
}

/* ---- the verdict in use: rec_target on a real process ---- */

static const char version_string[] = "8.2.2";

/* A child to be inspected: this executable, its memory as ours. */
static pid_t start_child(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        for (;;)
            pause();
    }
    return pid;
}

static void stop_child(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Symbol values that lie: refused when read, with a message, before any
 * sample could use them. */
static void absurd_symbols(void)
{
    pid_t pid = start_child();
    rec_target t;
    zs_error err = {0};
    rec_layout_choice builtin = {.no_dwarf = 1};

    /* The version string where no memory is. */
    tell_honest();
    tell.version = 0xfffffffffff00000ULL;
    CHECK(rec_target_open(pid, &builtin, NULL, &t, &err) == -1 && err.code == ZS_E_NOT_ZEEK &&
          strstr(err.detail, "cannot read the version string"));

    /* The version where it is (said not to be a PIE: the child is a copy
     * of us, our addresses are its), call_stack where nothing is: the check
     * refuses it before the first sample. */
    tell_honest();
    tell.version = (uint64_t)(uintptr_t)version_string;
    tell.value = 0xdead00000000ULL;
    err = (zs_error){0};
    CHECK(rec_target_open(pid, &builtin, NULL, &t, &err) == 0);
    CHECK(!strcmp(t.zeek_version, "8.2.2") && t.layout_source == REC_LAYOUT_BUILTIN);
    CHECK(t.call_stack >= 0xdead00000000ULL && t.call_stack < 0xdead00000100ULL);
    CHECK(rec_target_check(&t, NULL, &err) == -1 && err.code == ZS_E_LAYOUT &&
          strstr(err.detail, "cannot read call_stack"));

    /* A DWARF layout naming a symbol nobody looked up. */
    tell_honest();
    tell.version = (uint64_t)(uintptr_t)version_string;
    snprintf(tell.layout.sym_call_stack, ZS_SYMBOL_MAX, "not_a_zeek_symbol");
    err = (zs_error){0};
    CHECK(rec_target_open(pid, NULL, NULL, &t, &err) == -1 && err.code == ZS_E_NOT_ZEEK &&
          strstr(err.detail, "symbol not_a_zeek_symbol of the callinfo-frame layout not found"));
    stop_child(pid);
}

/* ---- a child that writes a whole verdict and then never exits ----
 * rec_inspect must still return within its time limit, refusing the
 * executable (it once waited for the child's exit without a deadline). And
 * when the recorder is killed meanwhile, the child must die with it
 * (rec_sandbox.h): the kernel clears the PR_SET_PDEATHSIG set before the
 * setresuid to nobody, so the sandbox sets it again after. */

static pid_t child_of(pid_t parent)
{
    char path[64];
    int pid = 0;
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)parent, (int)parent);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return (pid_t)pid;
}

static int gone(pid_t pid)
{
    char path[64], state = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
        state = 0;
    fclose(f);
    return state == 'Z';
}

/* A recorder (a child of ours) asking a child that lingers after its answer. */
static pid_t ask_lingering(void)
{
    pid_t runner = fork();
    if (runner == 0) {
        rec_inspect_verdict v;
        zs_error err;
        tell_honest();
        tell.raw = RAW_WHOLE_HANG;
        _exit(refused(ask(0, &v, &err), &err, "refused") ? 0 : 1);
    }
    return runner;
}

static void lingering_refused(void)
{
    pid_t runner = ask_lingering();
    enum { TENTHS = 10 * (REC_INSPECT_ELF_SECONDS + 5) };
    int status = -1, waited = 0;
    for (; waited < TENTHS; waited++) {
        if (waitpid(runner, &status, WNOHANG) == runner)
            break;
        usleep(100000);
    }
    CHECK(waited < TENTHS); /* rec_inspect returned */
    CHECK(status == 0);     /* refusing the executable */
    if (waited >= TENTHS) {
        kill(runner, SIGKILL);
        waitpid(runner, NULL, 0);
    }
}

static void lingering_dies_with_recorder(void)
{
    pid_t runner = ask_lingering(), inspector = 0;
    for (int i = 0; i < 100 && !inspector; i++) {
        usleep(20000);
        inspector = child_of(runner);
    }
    usleep(500000); /* sandboxed, answered, lingering */
    kill(runner, SIGKILL);
    waitpid(runner, NULL, 0);
    int i = 0;
    for (; inspector > 0 && i < 40 && !gone(inspector); i++)
        usleep(50000);
    CHECK(inspector > 0 && gone(inspector)); /* died with its recorder */
    if (inspector > 0 && !gone(inspector))
        kill(inspector, SIGKILL);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    honest();
    lying_codes();
    unterminated_strings();
    not_hex();
    bad_layouts();
    raw_answers();
    cached();
    absurd_symbols();
    lingering_refused();
    lingering_dies_with_recorder();
    CHECK_MAIN_END;
}
