/* SPDX-License-Identifier: BSD-3-Clause */
/* zeek-spy-convert: the command line. The work is in the folders beside it,
 * one per role (converter/README.md). */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache/conv_cache.h"
#include "output/conv_folded.h"
#include "output/conv_output.h"
#include "output/conv_pprof.h"
#include "output/conv_speedscope.h"
#include "output/conv_summary.h"
#include "output/conv_svg.h"
#include "profile/conv_profile.h"
#include "push/conv_push.h"
#include "push/conv_watch.h"
#include "read/conv_info.h"
#include "read/conv_read.h"
#include "zs_format.h"
#include "zs_parse.h"
#include "zs_version.h"

static const char PROG[] = "zeek-spy-convert";

typedef enum { FORMAT_PPROF, FORMAT_FOLDED, FORMAT_SUMMARY, FORMAT_SVG, FORMAT_SPEEDSCOPE } out_format;

/* Each format's writer and its output when -o is not given ("-": stdout). */
static const struct {
    conv_writer *write;
    const char *default_output;
} formats[] = {
    [FORMAT_PPROF] = {conv_write_pprof, "profile.pb.gz"},
    [FORMAT_FOLDED] = {conv_write_folded, "profile.folded"},
    [FORMAT_SUMMARY] = {conv_write_summary, "-"},
    [FORMAT_SVG] = {conv_write_svg, "profile.svg"},
    [FORMAT_SPEEDSCOPE] = {conv_write_speedscope, "profile.speedscope.json"},
};

typedef struct options {
    out_format format;
    const char *output;
    conv_write_options write;
    const char *cache_path;
    int no_cache;
    int quiet;
    int verbose;
    int info;
    int interpreter_frames; /* keep the interpreter's own native frames */
    conv_filter filter;
    zs_notes notes; /* where the library's warnings and progress go */
    char **recordings;
    int nrecordings;
    char **bases; /* --base: the recordings to compare with */
    int nbases;
    conv_filter base_nodes; /* --base-node: the base is these nodes' samples */
    conv_when base_when;    /* --base-when: the base is these seconds' samples (n 0: none) */
    const char *push_url;   /* --push: each recording to this back end */
    conv_push_target push;
    uint64_t push_timeout_s;
    conv_push_api push_api;
    const char *watch_dir; /* --watch: push each part finished there, until stopped */
    double watch_every_s;  /* --watch-every */
} options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [options] RECORDING... \n"
            "Resolve zeek-spy recordings into a profile.\n\n"
            "  -o, --output FILE     where to write (default: profile.pb.gz for pprof,\n"
            "                        profile.folded for folded, profile.svg for svg,\n"
            "                        profile.speedscope.json for speedscope,\n"
            "                        stdout for summary; - is stdout)\n"
            "  -f, --format FORMAT   pprof (gzipped profile.proto, default), folded, summary,\n"
            "                        svg (an interactive flame graph, one self-contained file),\n"
            "                        speedscope (JSON for speedscope.app, samples in time order)\n"
            "      --reverse         svg: innermost frames at the root (the top), callers\n"
            "                        below them\n"
            "      --top N           rows in the summary (default 20, 0 = all)\n"
            "      --base FILE       a differential profile against this recording\n"
            "                        (repeatable: several make one base): svg colours each\n"
            "                        frame by the change of its share (red grew, blue\n"
            "                        shrank), summary adds the largest changes in points\n"
            "      --base-node NAME  the base is this cluster node's samples (repeatable),\n"
            "                        of the --base recordings or else of the same ones:\n"
            "                        --node worker-3 --base-node worker-1 compares nodes\n"
            "      --base-when EXPR  the base is the samples of the seconds EXPR selects (as\n"
            "                        --when), of the --base recordings or else of the same\n"
            "                        ones: --when 'lag > 1s' --base-when 'lag <= 1s' shows\n"
            "                        what grows when zeek falls behind\n"
            "      --push URL        send each recording's profile to a back end: Pyroscope\n"
            "                        (http://HOST:4040) or Parca, labelled host, node, pid, Zeek\n"
            "                        and zeek-spy versions; FILE.pushed marks it sent\n"
            "      --push-api API    pyroscope (POST /ingest, default) or parca\n"
            "                        (POST /profiles/writeraw, http://HOST:7070)\n"
            "      --push-timeout SECS  each try's limit (default 10; 4 tries in all)\n"
            "      --watch DIR       with --push: every 10 s, push each recording in DIR\n"
            "                        the recorder has finished (rotated parts) or left\n"
            "                        behind, until SIGINT or SIGTERM\n"
            "      --watch-every SECS  with --watch, look this often (default 10, 0.1..3600)\n"
            "      --pid PID         only samples of this process (repeatable)\n"
            "      --node NAME       only samples of this cluster node (repeatable)\n"
            "      --from TIME       only samples at or after TIME: seconds from the start\n"
            "                        (120.5), UTC wall-clock time (2026-11-30T03:45:00 or\n"
            "                        @UNIXTIME), or Zeek network time (net:1700000000.5)\n"
            "      --to TIME         only samples before TIME (same forms)\n"
            "      --when EXPR       only samples of the seconds whose load EXPR selects\n"
            "                        (recordings of format 8): METRIC OP VALUE joined by\n"
            "                        'and'; pps and drops (packets a second), lag (s or\n"
            "                        ms: network_time behind the clock, live sources),\n"
            "                        queue (bytes, K/M/G: waiting in zeek's packet\n"
            "                        sockets); OP > >= < <=. 'lag > 1s', 'pps >= 50000'\n"
            "      --view VIEW       wall (default): every sample, on- and off-CPU, shares\n"
            "                        of wall-clock time as the ptrace sampler's; cpu: only\n"
            "                        the samples taken on the CPU (recordings made with\n"
            "                        --sampler bpf)\n"
            "      --interpreter-frames\n"
            "                        --native recordings: keep the interpreter's own C++\n"
            "                        frames (Stmt::Exec, Expr::Eval, Func::Invoke, ...)\n"
            "                        between two script frames and inside the innermost\n"
            "                        one, hidden by default (their time is the script's)\n"
            "      --info            describe the recordings (header, processes, time range,\n"
            "                        counts, integrity of every frame) instead of converting\n"
            "      --cache PATH      sqlite cache (default $XDG_CACHE_HOME/zeek-spy/cache.sqlite)\n"
            "      --no-cache        neither read nor write the cache\n"
            "  -q, --quiet           no warnings or progress\n"
            "  -v, --verbose         more detail on stderr\n"
            "  -V, --version         print the version\n"
            "  -h, --help            this help\n",
            PROG);
}

static int parse_args(int argc, char **argv, options *o, zs_error *err)
{
    /* Long options without a short form: values past any character. */
    enum { OPT_TOP = 256, OPT_PID, OPT_FROM, OPT_TO, OPT_CACHE, OPT_NO_CACHE, OPT_NODE, OPT_INFO,
           OPT_REVERSE, OPT_INTERPRETER_FRAMES, OPT_BASE, OPT_BASE_NODE, OPT_PUSH,
           OPT_PUSH_TIMEOUT, OPT_PUSH_API, OPT_WATCH, OPT_WATCH_EVERY, OPT_VIEW, OPT_WHEN,
           OPT_BASE_WHEN };
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'},   {"format", required_argument, 0, 'f'},
        {"top", required_argument, 0, OPT_TOP},  {"pid", required_argument, 0, OPT_PID},
        {"from", required_argument, 0, OPT_FROM}, {"to", required_argument, 0, OPT_TO},
        {"cache", required_argument, 0, OPT_CACHE}, {"no-cache", no_argument, 0, OPT_NO_CACHE},
        {"quiet", no_argument, 0, 'q'},          {"verbose", no_argument, 0, 'v'},
        {"version", no_argument, 0, 'V'},        {"help", no_argument, 0, 'h'},
        {"node", required_argument, 0, OPT_NODE}, {"info", no_argument, 0, OPT_INFO},
        {"reverse", no_argument, 0, OPT_REVERSE},
        {"interpreter-frames", no_argument, 0, OPT_INTERPRETER_FRAMES},
        {"base", required_argument, 0, OPT_BASE},
        {"base-node", required_argument, 0, OPT_BASE_NODE},
        {"when", required_argument, 0, OPT_WHEN}, {"base-when", required_argument, 0, OPT_BASE_WHEN},
        {"push", required_argument, 0, OPT_PUSH},
        {"push-timeout", required_argument, 0, OPT_PUSH_TIMEOUT},
        {"push-api", required_argument, 0, OPT_PUSH_API},
        {"watch", required_argument, 0, OPT_WATCH},
        {"watch-every", required_argument, 0, OPT_WATCH_EVERY},
        {"view", required_argument, 0, OPT_VIEW},
        {0, 0, 0, 0}};
    uint64_t n;
    int c;
    o->write.top = 20;
    o->push_timeout_s = 10;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:f:qvVh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case 'f':
            if (!strcmp(optarg, "pprof")) o->format = FORMAT_PPROF;
            else if (!strcmp(optarg, "folded")) o->format = FORMAT_FOLDED;
            else if (!strcmp(optarg, "summary")) o->format = FORMAT_SUMMARY;
            else if (!strcmp(optarg, "svg")) o->format = FORMAT_SVG;
            else if (!strcmp(optarg, "speedscope")) o->format = FORMAT_SPEEDSCOPE;
            else return zs_fail(err, ZS_E_USAGE,
                                "--format: '%s' is not pprof, folded, summary, svg or speedscope", optarg);
            break;
        case OPT_TOP:
            if (zs_parse_count("--top", optarg, 1000000, &n, err)) return -1;
            o->write.top = (size_t)n;
            break;
        case OPT_PID:
            if (zs_parse_count("--pid", optarg, UINT32_MAX, &n, err)) return -1;
            if (conv_filter_add_pid(&o->filter, (uint32_t)n)) return zs_fail(err, ZS_E_NOMEM, "--pid");
            break;
        case OPT_FROM: if (conv_bound_parse("--from", optarg, &o->filter.from, err)) return -1; break;
        case OPT_TO: if (conv_bound_parse("--to", optarg, &o->filter.to, err)) return -1; break;
        case OPT_VIEW: if (conv_view_parse(optarg, &o->filter.view, err)) return -1; break;
        case OPT_NODE:
            if (conv_filter_add_node(&o->filter, optarg)) return zs_fail(err, ZS_E_NOMEM, "--node");
            break;
        case OPT_INFO: o->info = 1; break;
        case OPT_REVERSE: o->write.reverse = 1; break;
        case OPT_INTERPRETER_FRAMES: o->interpreter_frames = 1; break;
        case OPT_PUSH:
            o->push_url = optarg;
            if (conv_push_parse_url(optarg, &o->push, err)) return -1;
            break;
        case OPT_WATCH: o->watch_dir = optarg; break;
        case OPT_WATCH_EVERY:
            if (zs_parse_number("--watch-every", optarg, 0.1, 3600, &o->watch_every_s, err)) return -1;
            break;
        case OPT_PUSH_API:
            if (!strcmp(optarg, "pyroscope")) o->push_api = CONV_PUSH_PYROSCOPE;
            else if (!strcmp(optarg, "parca")) o->push_api = CONV_PUSH_PARCA;
            else return zs_fail(err, ZS_E_USAGE, "--push-api: '%s' is not pyroscope or parca", optarg);
            break;
        case OPT_PUSH_TIMEOUT:
            if (zs_parse_count("--push-timeout", optarg, 600, &o->push_timeout_s, err)) return -1;
            if (!o->push_timeout_s) return zs_fail(err, ZS_E_USAGE, "--push-timeout: 0 seconds");
            break;
        case OPT_WHEN:
            if (conv_when_parse("--when", optarg, &o->filter.when, err))
                return -1;
            break;
        case OPT_BASE_WHEN:
            if (conv_when_parse("--base-when", optarg, &o->base_when, err))
                return -1;
            break;
        case OPT_BASE_NODE:
            if (conv_filter_add_node(&o->base_nodes, optarg))
                return zs_fail(err, ZS_E_NOMEM, "--base-node");
            break;
        case OPT_BASE: {
            char **more = realloc(o->bases, (size_t)(o->nbases + 1) * sizeof *more);
            if (!more) return zs_fail(err, ZS_E_NOMEM, "--base");
            o->bases = more;
            o->bases[o->nbases++] = optarg;
            break;
        }
        case OPT_CACHE: o->cache_path = optarg; break;
        case OPT_NO_CACHE: o->no_cache = 1; break;
        case 'q': o->quiet = 1; break;
        case 'v': o->verbose = 1; break;
        case 'V': printf("%s %s (recording format %d)\n", PROG, ZS_RECORDER_VERSION, ZS_FORMAT_VERSION); exit(0);
        case 'h': usage(stdout); exit(0);
        case ':': return zs_fail(err, ZS_E_USAGE, "option %s needs a value", argv[optind - 1]);
        default: return zs_fail(err, ZS_E_USAGE, "unknown option %s (see --help)", argv[optind - 1]);
        }
    }
    const conv_bound *f = &o->filter.from, *t = &o->filter.to;
    if (f->set && t->set && f->clock == t->clock && t->seconds <= f->seconds)
        return zs_fail(err, ZS_E_USAGE, "--to must be after --from");
    o->recordings = argv + optind;
    o->nrecordings = argc - optind;
    if (o->watch_dir && (!o->push_url || o->nrecordings))
        return zs_fail(err, ZS_E_USAGE, "--watch DIR needs --push URL and no recordings");
    if (o->watch_every_s && !o->watch_dir)
        return zs_fail(err, ZS_E_USAGE, "--watch-every needs --watch DIR");
    if (!o->watch_every_s)
        o->watch_every_s = 10;
    if (o->nrecordings < 1 && !o->watch_dir)
        return zs_fail(err, ZS_E_USAGE, "no recording given (see --help)");
    if (o->write.reverse && o->format != FORMAT_SVG)
        return zs_fail(err, ZS_E_USAGE, "--reverse is for -f svg");
    if ((o->nbases || o->base_nodes.nnodes || o->base_when.n) && o->format != FORMAT_SVG &&
        o->format != FORMAT_SUMMARY)
        return zs_fail(err, ZS_E_USAGE, "--base, --base-node and --base-when are for -f svg or -f summary (for "
                       "pprof, convert each and use go tool pprof -diff_base OLD.pb.gz NEW.pb.gz)");
    if (o->push_url && (o->format != FORMAT_PPROF || o->output || o->nbases || o->base_nodes.nnodes ||
                        o->base_when.n))
        return zs_fail(err, ZS_E_USAGE, "--push sends pprof profiles: no -f, -o, --base or --base-node with it");
    o->push.api = o->push_api;
    o->write.when = o->filter.when.n ? o->filter.when.text : NULL;
    /* The base's window and view are the profile's; its nodes are its own. */
    o->base_nodes.from = o->filter.from;
    o->base_nodes.to = o->filter.to;
    o->base_nodes.view = o->filter.view;
    if (!o->output)
        o->output = formats[o->format].default_output;
    return 0;
}

/* The library's notes on stderr, unless -q. A progress line is rewritten in
 * place, and ended before anything else is printed after it. */
typedef struct stderr_notes {
    int quiet;
    int progress_shown;
} stderr_notes;

static void end_progress(stderr_notes *s)
{
    if (s->progress_shown)
        fputc('\n', stderr);
    s->progress_shown = 0;
}

static void print_note(void *ctx, zs_note_kind kind, const char *text)
{
    stderr_notes *s = ctx;
    if (s->quiet)
        return;
    if (kind == ZS_NOTE_PROGRESS) {
        fprintf(stderr, "%s: %s\r", PROG, text);
        s->progress_shown = 1;
        return;
    }
    end_progress(s);
    fprintf(stderr, "%s: warning: %s\n", PROG, text);
}

static int filtered(const options *o)
{
    return conv_filter_active(&o->filter);
}

/* A recorder killed in its first second leaves a header and no samples
 * (they reach the file once a second). Say so, and how long it ran as far
 * as the file tells: its last write after the recording's start. */
static void warn_cut_early(const char *path, const conv_profile *p)
{
    char when[64] = "an unknown time";
    struct stat st;
    time_t start = (time_t)(p->meta.start_wall_ns / 1000000000LL);
    struct tm tm;
    if (p->meta.start_wall_ns > 0 && gmtime_r(&start, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    double ran = -1;
    if (stat(path, &st) == 0 && p->meta.start_wall_ns > 0)
        ran = ((double)st.st_mtim.tv_sec * 1e9 + (double)st.st_mtim.tv_nsec -
               (double)p->meta.start_wall_ns) / 1e9;
    fprintf(stderr, "%s: warning: %s: cut in its first second: the recorder started at %s and "
            "ended (killed?) before its first second of samples reached the file", PROG, path, when);
    if (ran > -0.5) /* the clocks of the header and the file system may differ a little */
        fprintf(stderr, " (last written %.2f s after the start)", ran > 0 ? ran : 0.0);
    fprintf(stderr, "; no samples\n");
}

static void warn_about(const options *o, const char *path, const conv_read_report *rep,
                       const conv_profile *p)
{
    if (o->quiet)
        return;
    if (rep->truncated)
        fprintf(stderr,
                "%s: warning: %s: the last zstd frame (offset %" PRIu64 ") is cut short; "
                "recovered %" PRIu64 " samples\n",
                PROG, path, rep->truncated_at, rep->samples);
    else if (!rep->has_trailer && rep->samples == 0)
        warn_cut_early(path, p);
    else if (!rep->has_trailer)
        fprintf(stderr, "%s: warning: %s: no trailer (the recorder did not finish); recovered %" PRIu64
                " samples\n", PROG, path, rep->samples);
    if (p->meta.unresolved)
        fprintf(stderr, "%s: warning: %s: %" PRIu64 " samples have frames missing from the snapshot "
                "(shown as [unresolved 0x...])\n", PROG, path, p->meta.unresolved);
}

/* One recording's profile: from the cache when it has it, else read,
 * resolved and stored. The recording is opened once: its header gives the
 * cache key, and a miss reads on from there. */
static int profile_of(const options *o, const conv_filter *filter, conv_cache *cache,
                      const char *path, conv_profile **out, zs_error *err)
{
    struct stat st;
    /* A pipe has no size to key the cache with. The cache keeps aggregates
     * only: a time-ordered output reads the recording. */
    int want_timeline = o->format == FORMAT_SPEEDSCOPE;
    int use_cache = cache && !conv_filter_active(filter) && !want_timeline && stat(path, &st) == 0 &&
                    S_ISREG(st.st_mode);
    unsigned flags = (use_cache ? CONV_READ_KEY : 0) |
                     (o->interpreter_frames ? CONV_READ_INTERPRETER_FRAMES : 0) |
                     (filter->view == CONV_VIEW_CPU ? CONV_READ_CPU_VIEW : 0);
    conv_reading *rd = conv_read_open(path, flags, NULL, err);
    if (!rd)
        return -1;
    /* The flame graph and the summary show the load, which the cache does
     * not keep. */
    int want_lane = (o->format == FORMAT_SVG || o->format == FORMAT_SUMMARY) && conv_read_format_version(rd) >= 8;
    const char *key = use_cache && !want_lane ? conv_read_key(rd) : NULL;
    int rc = -1;
    if (key) {
        int hit = conv_cache_load(cache, key, out, err);
        if (hit > 0) {
            if (o->verbose)
                fprintf(stderr, "%s: %s: served from the cache %s\n", PROG, path, conv_cache_path(cache));
            rc = 0;
            goto out;
        }
        if (hit < 0) {
            if (!o->quiet)
                fprintf(stderr, "%s: warning: cache: %s\n", PROG, err->detail);
            err->code = ZS_OK;
            key = NULL;
        }
    }
    conv_read_report rep = {.notes = &o->notes, .want_timeline = want_timeline, .want_lane = want_lane};
    int failed = conv_read_profile(rd, filter, out, &rep, err);
    end_progress(o->notes.ctx);
    if (failed)
        goto out;
    warn_about(o, path, &rep, *out);
    if (key && conv_cache_store(cache, key, *out, err)) {
        if (!o->quiet)
            fprintf(stderr, "%s: warning: cache: %s\n", PROG, err->detail);
        err->code = ZS_OK;
    }
    rc = 0;
out:
    conv_read_close(rd);
    return rc;
}

/* The recordings' profiles merged into one; a bad one among several is
 * named, counted in *failures and skipped. NULL on failure (err says). */
static conv_profile *merged(const options *o, const conv_filter *filter, conv_cache *cache,
                            char **paths, int n, int *failures, zs_error *err)
{
    conv_profile *all = NULL;
    for (int i = 0; i < n; i++) {
        conv_profile *one = NULL;
        if (profile_of(o, filter, cache, paths[i], &one, err)) {
            if (n == 1)
                return NULL;
            zs_error_print(PROG, err);
            err->code = ZS_OK;
            (*failures)++;
            continue;
        }
        if (!all) { /* the first profile is taken as it is, not copied */
            all = one;
            continue;
        }
        int rc = conv_profile_merge(all, one);
        conv_profile_free(one);
        if (rc) {
            zs_fail(err, ZS_E_NOMEM, "merging %s", paths[i]);
            conv_profile_free(all);
            return NULL;
        }
    }
    if (!all)
        zs_fail(err, ZS_E_IO, "no recording could be read"); /* each said why */
    return all;
}

/* --push: one recording's profile, labelled, to the back end; FILE.pushed
 * made once it was accepted (a recording marked so is not sent again). */
static int push_one(const options *o, conv_cache *cache, const char *path, zs_error *err)
{
    char marker[PATH_MAX + 16];
    if (conv_push_marked(path, marker, sizeof marker)) {
        if (!o->quiet)
            fprintf(stderr, "%s: %s: already pushed (%s)\n", PROG, path, marker);
        return 0;
    }
    conv_profile *p = NULL;
    if (profile_of(o, &o->filter, cache, path, &p, err))
        return -1;
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    int rc = -1;
    if (f && conv_write_pprof(p, &o->write, f, err) == 0 && fclose(f) == 0) {
        f = NULL;
        const char *node = p->nprocesses ? p->processes[0].node : NULL;
        for (size_t i = 1; i < p->nprocesses && node; i++)
            if (strcmp(p->processes[i].node, node))
                node = NULL; /* several: no one node */
        char pid[16] = "";
        if (p->nprocesses == 1)
            snprintf(pid, sizeof pid, "%u", p->processes[0].pid);
        conv_push_label labels[] = {{"host", p->meta.host}, {"node", node}, {"pid", pid},
                                    {"zeek_version", p->meta.zeek_version},
                                    {"zeek_spy_version", ZS_RECORDER_VERSION}};
        int64_t from = p->meta.start_wall_ns / 1000000000LL;
        conv_push_request r = {"zeek", labels, sizeof labels / sizeof labels[0], from,
                               from + (p->meta.duration_ns + 999999999LL) / 1000000000LL,
                               p->meta.period_ns ? 1e9 / (double)p->meta.period_ns : 100, body, len};
        rc = conv_push_send(&o->push, &r, 4, (int)o->push_timeout_s, err);
    } else if (!err->code) {
        zs_fail(err, ZS_E_NOMEM, "the profile of %s", path);
    }
    if (rc == 0) {
        FILE *m = fopen(marker, "w");
        if (m)
            fprintf(m, "%s\n", o->push_url);
        if (!m || fclose(m) != 0)
            fprintf(stderr, "%s: warning: %s: pushed, but %s could not be written\n", PROG, path, marker);
        if (!o->quiet)
            fprintf(stderr, "%s: %s: pushed to %s (%zu bytes of pprof)\n", PROG, path, o->push_url, len);
    } else {
        char why[sizeof err->detail];
        snprintf(why, sizeof why, "%s", err->detail);
        zs_fail(err, err->code ? err->code : ZS_E_IO, "%s: not pushed: %s", path, why);
    }
    if (f)
        fclose(f);
    free(body);
    conv_profile_free(p);
    return rc;
}

typedef struct watch_ctx {
    const options *o;
    conv_cache *cache;
} watch_ctx;

static int push_watched(void *ctx, const char *path, zs_error *err)
{
    const watch_ctx *w = ctx;
    return push_one(w->o, w->cache, path, err);
}

int main(int argc, char **argv)
{
    options o = {0};
    zs_error err = {0};
    conv_cache *cache = NULL;
    conv_profile *all = NULL, *base = NULL;
    int failures = 0, status = 1;

    if (parse_args(argc, argv, &o, &err))
        goto out;
    stderr_notes notes = {.quiet = o.quiet};
    o.notes = (zs_notes){.note = print_note, .ctx = &notes};
    if (o.info) {
        status = conv_info(o.recordings, o.nrecordings, stdout) ? 1 : 0;
        goto out;
    }
    if (!o.no_cache && !(cache = conv_cache_open(o.cache_path, &o.notes, &err))) {
        if (!o.quiet)
            fprintf(stderr, "%s: warning: continuing without a cache: %s\n", PROG, err.detail);
        err.code = ZS_OK;
    }
    if (o.watch_dir) {
        if (!o.quiet)
            fprintf(stderr, "%s: watching %s, pushing to %s\n", PROG, o.watch_dir, o.push_url);
        watch_ctx w = {&o, cache};
        status = conv_watch(PROG, o.watch_dir, o.watch_every_s, o.quiet, push_watched, &w);
        goto out;
    }
    if (o.push_url) {
        for (int i = 0; i < o.nrecordings; i++) {
            if (push_one(&o, cache, o.recordings[i], &err)) {
                zs_error_print(PROG, &err);
                err.code = ZS_OK;
                failures++;
            }
        }
        status = failures ? 1 : 0;
        goto out;
    }
    if (!(all = merged(&o, &o.filter, cache, o.recordings, o.nrecordings, &failures, &err)))
        goto out;
    if (o.nbases || o.base_nodes.nnodes || o.base_when.n) {
        int base_failures = 0;
        conv_filter by_load = o.base_nodes.nnodes ? o.base_nodes : o.filter;
        by_load.when = o.base_when; /* a copy: the lists stay the options' */
        const conv_filter *bf = o.base_when.n ? &by_load : o.base_nodes.nnodes ? &o.base_nodes : &o.filter;
        if (!(base = o.nbases ? merged(&o, bf, cache, o.bases, o.nbases, &base_failures, &err)
                              : merged(&o, bf, cache, o.recordings, o.nrecordings, &base_failures, &err)))
            goto out;
        failures += base_failures;
        if (base->meta.samples == 0) {
            zs_fail(&err, ZS_E_USAGE, "the base has no samples (see --base-node, --base-when and the "
                    "recordings' nodes and load with --info)");
            goto out;
        }
        o.write.base = base;
    }
    if (!o.quiet && filtered(&o) && all->meta.samples == 0)
        fprintf(stderr, "%s: warning: no samples match the --pid/--node/--from/--to/--when filter; the profile "
                "is empty\n", PROG);
    if (conv_output_write(o.output, formats[o.format].write, all, &o.write, &err))
        goto out;
    if (!o.quiet && strcmp(o.output, "-"))
        fprintf(stderr, "%s: wrote %s (%" PRIu64 " samples, %zu stacks, %zu functions)\n", PROG,
                o.output, all->meta.samples, all->nstacks, all->nfunctions);
    status = failures ? 1 : 0;
out:
    if (err.code)
        zs_error_print(PROG, &err);
    conv_profile_free(all);
    conv_profile_free(base);
    free(o.bases);
    conv_cache_close(cache);
    conv_filter_free(&o.filter);
    conv_filter_free(&o.base_nodes);
    return status && err.code == ZS_E_USAGE ? 2 : status;
}
