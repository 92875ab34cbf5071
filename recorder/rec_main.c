/* SPDX-License-Identifier: BSD-3-Clause */
/* zeek-spy-record: the command line. The work is in rec_*.c. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views/rec_dump.h"
#include "base/rec_constants.h"
#include "session/rec_session.h"
#include "base/rec_signals.h"
#include "targets/rec_target.h"
#include "views/rec_top.h"
#include "zs_dwarf.h"
#include "zs_elf.h"
#include "zs_grow.h"
#include "zs_parse.h"
#include "zs_version.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [options] (-p PID [-p PID...] | --all)\n"
            "       %s [options] -- COMMAND [ARGS...]\n"
            "       %s --print-layout (-p PID | EXECUTABLE)\n"
            "       %s --dump -p PID\n"
            "Sample the script call stack of running zeek processes into a recording.\n\n"
            "  -p, --pid PID          record this zeek process (repeatable)\n"
            "      --all              record every zeek process, also ones that start later\n"
            "      --scan-every SECS  with --all, look for new zeek processes this often\n"
            "                         (default 2, 0.05..3600)\n"
            "  -o, --output FILE      recording to create (default zeek-spy-HOST-PID-TIME.zspy)\n"
            "  -r, --rate HZ          samples per second (default 100, 1..10000)\n"
            "  -d, --duration SECS    stop after this long (default: until Ctrl-C or exit)\n"
            "      --stats SECS       print cost and progress every SECS seconds\n"
            "      --rotate SECS      start a new part (a complete recording) every SECS\n"
            "      --rotate-size SIZE start a new part when one reaches SIZE (e.g. 100M)\n"
            "      --max-size SIZE    delete the oldest parts to stay under SIZE in total\n"
            "                         (with rotation, SIGUSR1 starts the next part at once)\n"
            "      --sampler KIND     auto (the default: bpf where it can run, else ptrace,\n"
            "                         with a note saying why), bpf (in the kernel, zeek never\n"
            "                         stopped) or ptrace (stops zeek for each sample)\n"
            "      --cpu-only         bpf: sample zeek only while it runs on a CPU: no\n"
            "                         off-CPU samples, no program on the host's context\n"
            "                         switches (the lowest cost; the profile is CPU time)\n"
            "      --nonblocking      ptrace without stopping the target, script frames only\n"
            "                         (reads may be torn; they are detected and discarded)\n"
            "      --no-realtime      do not raise the recorder to SCHED_FIFO priority\n"
            "      --no-follow-cpu    do not move the recorder to each target's CPU to sample it\n"
            "      --native           also record zeek's native (C++) frames, merged with the\n"
            "                         script frames (the default in blocking mode)\n"
            "      --no-native        script frames only (the default with --nonblocking)\n"
            "      --layout FILE      object layout to use (see --print-layout)\n"
            "      --no-dwarf         ignore debug info, use the built-in layout table\n"
            "      --print-layout     print the layout for a pid or executable and exit\n"
            "      --dump             stop -p PID once, print its script stack and exit\n"
            "      --top              live view of the hottest functions, redrawn every second\n"
            "                         (q quits; records too: to -o FILE, else a temporary file)\n"
            "      --top-window SECS  --top's \"last N seconds\" columns (default 10, 1..300)\n"
            "  -q, --quiet            only errors\n"
            "  -v, --verbose          more detail\n"
            "  -V, --version          print the version\n"
            "  -h, --help             this help\n",
            REC_PROG, REC_PROG, REC_PROG, REC_PROG);
}

static int parse_sampler(const char *s, rec_sampler_kind *out, zs_error *err)
{
    static const char *const names[] = {[REC_SAMPLER_PTRACE] = "ptrace",
                                        [REC_SAMPLER_BPF] = "bpf", [REC_SAMPLER_AUTO] = "auto"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, names[i])) {
            *out = (rec_sampler_kind)i;
            return 0;
        }
    return zs_fail(err, ZS_E_USAGE, "--sampler: '%s' is none of ptrace, bpf, auto", s);
}

static int add_pid(rec_options *o, size_t *pids_cap, const char *s, zs_error *err)
{
    double v;
    if (zs_parse_number("--pid", s, 1, 4194304, &v, err) || v != (double)(pid_t)v)
        return zs_fail(err, ZS_E_USAGE, "--pid: '%s' is not a process id", s);
    if (zs_grow(&o->pids, pids_cap, o->npids + 1, sizeof *o->pids, 8))
        return zs_fail(err, ZS_E_NOMEM, "--pid");
    o->pids[o->npids++] = (pid_t)v;
    return 0;
}

/* The long options without a short letter (above any character). */
enum long_option {
    OPT_STATS = 256, OPT_NONBLOCKING, OPT_NO_REALTIME, OPT_LAYOUT, OPT_NO_DWARF, OPT_PRINT_LAYOUT,
    OPT_ALL, OPT_ROTATE, OPT_ROTATE_SIZE, OPT_MAX_SIZE, OPT_NO_FOLLOW_CPU, OPT_DUMP, OPT_TOP,
    OPT_TOP_WINDOW, OPT_NATIVE, OPT_NO_NATIVE, OPT_SCAN_EVERY, OPT_SAMPLER, OPT_CPU_ONLY,
};

typedef struct cli {
    rec_options rec;
    zs_layout forced;
    int print_layout;
    int dump;                /* --dump -p PID */
    const char *exe; /* --print-layout EXECUTABLE */
} cli;

/* One case per option, in the order --help lists them: longer than our
 * usual function, but a reader checks an option against its case in one
 * place. */
static int parse_args(int argc, char **argv, cli *c, zs_error *err)
{
    static const struct option longopts[] = {
        {"pid", required_argument, 0, 'p'},            {"output", required_argument, 0, 'o'},
        {"rate", required_argument, 0, 'r'},           {"duration", required_argument, 0, 'd'},
        {"quiet", no_argument, 0, 'q'},                {"verbose", no_argument, 0, 'v'},
        {"version", no_argument, 0, 'V'},              {"help", no_argument, 0, 'h'},
        {"stats", required_argument, 0, OPT_STATS},    {"nonblocking", no_argument, 0, OPT_NONBLOCKING},
        {"no-realtime", no_argument, 0, OPT_NO_REALTIME}, {"layout", required_argument, 0, OPT_LAYOUT},
        {"no-dwarf", no_argument, 0, OPT_NO_DWARF},    {"print-layout", no_argument, 0, OPT_PRINT_LAYOUT},
        {"all", no_argument, 0, OPT_ALL},              {"rotate", required_argument, 0, OPT_ROTATE},
        {"rotate-size", required_argument, 0, OPT_ROTATE_SIZE},
        {"max-size", required_argument, 0, OPT_MAX_SIZE},
        {"no-follow-cpu", no_argument, 0, OPT_NO_FOLLOW_CPU}, {"dump", no_argument, 0, OPT_DUMP},
        {"top", no_argument, 0, OPT_TOP},              {"top-window", required_argument, 0, OPT_TOP_WINDOW},
        {"native", no_argument, 0, OPT_NATIVE},        {"no-native", no_argument, 0, OPT_NO_NATIVE},
        {"scan-every", required_argument, 0, OPT_SCAN_EVERY},
        {"sampler", required_argument, 0, OPT_SAMPLER},
        {"cpu-only", no_argument, 0, OPT_CPU_ONLY},
        {0, 0, 0, 0}};
    rec_options *o = &c->rec;
    o->rate_hz = 100;
    o->native = -1; /* on unless --no-native or --nonblocking: see below */
    o->sampler = REC_SAMPLER_AUTO;
    o->top_window_s = 10;
    double top_window = 0;
    size_t pids_cap = 0;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "+:p:o:r:d:qvVh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'p': if (add_pid(o, &pids_cap, optarg, err)) return -1; break;
        case 'o': o->output = optarg; break;
        case 'r': if (zs_parse_number("--rate", optarg, 1, 10000, &o->rate_hz, err)) return -1; break;
        case 'd': if (zs_parse_number("--duration", optarg, 0.01, 1e7, &o->duration_s, err)) return -1; break;
        case OPT_STATS: if (zs_parse_number("--stats", optarg, 0.1, 1e6, &o->stats_interval_s, err)) return -1; break;
        case OPT_SCAN_EVERY: if (zs_parse_number("--scan-every", optarg, 0.05, 3600, &o->scan_every_s, err)) return -1; break;
        case OPT_NONBLOCKING: o->nonblocking = 1; break;
        case OPT_SAMPLER: if (parse_sampler(optarg, &o->sampler, err)) return -1; break;
        case OPT_CPU_ONLY: o->cpu_only = 1; break;
        case OPT_NO_REALTIME: o->no_realtime = 1; break;
        case OPT_LAYOUT:
            if (zs_layout_load(optarg, &c->forced, err))
                return -1;
            o->layout.forced = &c->forced;
            break;
        case OPT_NO_DWARF: o->layout.no_dwarf = 1; break;
        case OPT_PRINT_LAYOUT: c->print_layout = 1; break;
        case OPT_ALL: o->all = 1; break;
        case OPT_ROTATE: if (zs_parse_number("--rotate", optarg, 1, 1e7, &o->rotate_seconds, err)) return -1; break;
        case OPT_ROTATE_SIZE: if (zs_parse_size("--rotate-size", optarg, &o->rotate_bytes, err)) return -1; break;
        case OPT_MAX_SIZE: if (zs_parse_size("--max-size", optarg, &o->max_bytes, err)) return -1; break;
        case OPT_NO_FOLLOW_CPU: o->no_follow_cpu = 1; break;
        case OPT_DUMP: c->dump = 1; break;
        case OPT_NATIVE: o->native = 1; break;
        case OPT_NO_NATIVE: o->native = 0; break;
        case OPT_TOP: o->top = 1; break;
        case OPT_TOP_WINDOW:
            if (zs_parse_number("--top-window", optarg, 1, REC_TOP_MAX_WINDOW, &top_window, err))
                return -1;
            if (top_window != (unsigned)top_window)
                return zs_fail(err, ZS_E_USAGE, "--top-window: '%s' is not a whole number of seconds", optarg);
            o->top_window_s = (unsigned)top_window;
            break;
        case 'q': o->quiet = 1; break;
        case 'v': o->verbose = 1; break;
        case 'V': printf("%s %s\n", REC_PROG, ZS_RECORDER_VERSION); exit(0);
        case 'h': usage(stdout); exit(0);
        case ':': return zs_fail(err, ZS_E_USAGE, "option %s needs a value", argv[optind - 1]);
        default: return zs_fail(err, ZS_E_USAGE, "unknown option %s (see --help)", argv[optind - 1]);
        }
    }
    char **rest = argv + optind;
    int nrest = argc - optind;
    int native_asked = o->native == 1;
    if (o->sampler == REC_SAMPLER_BPF && o->nonblocking)
        return zs_fail(err, ZS_E_USAGE, "--nonblocking is a mode of the ptrace sampler: give "
                       "--sampler ptrace, or drop --nonblocking (the BPF sampler never stops zeek)");
    /* Only the kernel's ticks tell on-CPU time apart: ptrace samples wall
     * time. No fallback then: the operator asked for the cheap sampler. */
    if (o->cpu_only && (o->sampler == REC_SAMPLER_PTRACE || o->nonblocking))
        return zs_fail(err, ZS_E_USAGE, "--cpu-only needs the BPF sampler (the ptrace sampler "
                       "samples wall-clock time): drop --sampler ptrace and --nonblocking");
    if (o->cpu_only)
        o->sampler = REC_SAMPLER_BPF;
    /* --nonblocking is the ptrace sampler's mode (where BPF cannot run). */
    if (o->nonblocking)
        o->sampler = REC_SAMPLER_PTRACE;
    if (o->native == -1)
        o->native = !o->nonblocking;
    if (c->print_layout) {
        if ((o->npids == 1) == (nrest == 1))
            return zs_fail(err, ZS_E_USAGE, "--print-layout needs one -p PID or one EXECUTABLE");
        c->exe = nrest ? rest[0] : NULL;
        return 0;
    }
    if (native_asked && o->nonblocking)
        return zs_fail(err, ZS_E_USAGE, "--native needs the blocking mode: the registers and the "
                       "stack are copied while zeek is stopped");
    if (c->dump) {
        if (o->npids != 1 || nrest || o->all)
            return zs_fail(err, ZS_E_USAGE, "--dump needs exactly one -p PID");
        return 0;
    }
    if (top_window && !o->top)
        return zs_fail(err, ZS_E_USAGE, "--top-window needs --top");
    if (o->scan_every_s && !o->all)
        return zs_fail(err, ZS_E_USAGE, "--scan-every needs --all");
    if ((o->npids > 0) + (nrest > 0) + o->all > 1)
        return zs_fail(err, ZS_E_USAGE, "give one of -p PID, --all or -- COMMAND");
    if (nrest > 0)
        o->command = rest;
    else if (!o->npids && !o->all)
        return zs_fail(err, ZS_E_USAGE, "nothing to record: give -p PID, --all or -- COMMAND (see --help)");
    /* A cap alone rotates at an eighth of it, so the oldest eighth can go. */
    if (o->max_bytes && !o->rotate_bytes && !o->rotate_seconds)
        o->rotate_bytes = o->max_bytes / 8;
    if (o->max_bytes && o->rotate_bytes > o->max_bytes)
        return zs_fail(err, ZS_E_USAGE, "--rotate-size must not exceed --max-size");
    return 0;
}

static int print_layout(const cli *c, zs_error *err)
{
    zs_layout layout;
    const char *source;
    if (c->exe) {
        zs_error dwarf_err = {0};
        if (c->rec.layout.no_dwarf || zs_dwarf_layout(c->exe, "", "", &layout, &dwarf_err)) {
            /* No debug info: the built-in layout of the version it carries. */
            char version[64] = "";
            zs_elf_symbol sym = {"version"};
            zs_elf_info info;
            if (zs_elf_lookup(c->exe, &sym, 1, &info, err))
                return -1;
            if (!sym.found)
                return zs_fail(err, ZS_E_NOT_ZEEK, "%s is not a zeek: no 'version' symbol", c->exe);
            size_t n = sym.size && sym.size < sizeof version ? sym.size : sizeof version - 1;
            if (zs_elf_read(c->exe, sym.value, version, n, err))
                return -1;
            version[sizeof version - 1] = '\0';
            const zs_layout *builtin = zs_layout_builtin(version);
            if (!builtin)
                return zs_fail(err, ZS_E_UNSUPPORTED, "%s: Zeek %s has no built-in layout and %s",
                               c->exe, version, dwarf_err.code ? dwarf_err.detail : "--no-dwarf");
            layout = *builtin;
            source = "built-in table";
        } else {
            source = "DWARF";
        }
    } else {
        rec_target t;
        if (rec_target_open(c->rec.pids[0], &c->rec.layout, NULL, &t, err))
            return -1;
        layout = t.layout;
        source = rec_layout_source_name(t.layout_source);
    }
    char *text = zs_layout_format(&layout);
    if (!text)
        return zs_fail(err, ZS_E_NOMEM, "layout");
    printf("# from %s of %s\n%s", source, c->exe ? c->exe : "the process", text);
    free(text);
    return 0;
}

/* The sampler chosen (BPF loaded, or ptrace with a note on why not), then
 * the recording. With BPF, native frames are not recorded yet. */
static int run(rec_options *o, zs_error *err)
{
    char note[512];
    if (rec_sampler_choose(o, note, sizeof note, err))
        return -1;
    if (note[0] && !o->quiet)
        fprintf(stderr, "%s: note: %s\n", REC_PROG, note);
    int rc = rec_session_run(o, err);
    rec_sampler_release(o);
    return rc;
}

int main(int argc, char **argv)
{
    cli c = {0};
    zs_error err = {0};
    int rc;
    if (parse_args(argc, argv, &c, &err)) {
        rc = -1;
    } else if (c.print_layout) {
        rc = print_layout(&c, &err);
    } else if (c.dump) {
        rec_signals_install();
        rc = rec_dump(c.rec.pids[0], &c.rec.layout, stdout, &err);
    } else {
        rec_signals_install();
        rc = run(&c.rec, &err);
    }
    free(c.rec.pids);
    if (rc) {
        zs_error_print(REC_PROG, &err);
        return zs_exit_status(&err);
    }
    return 0;
}
