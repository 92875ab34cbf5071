/* SPDX-License-Identifier: BSD-3-Clause */
/* What the recorder says: its message lines, the stats line (--stats) and
 * the report at the end of a recording: a few lines, the details with -v,
 * all of it kept in the recording for --info. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>

#include "base/rec_clock.h"
#include "base/rec_constants.h"
#include "session/rec_session_priv.h"

uint64_t rec_since_start_us(const session *s, uint64_t ns)
{
    return ns > s->start_ns ? (ns - s->start_ns) / 1000 : 0;
}

void rec_say(const session *s, const char *fmt, ...)
{
    if (s->o->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", REC_PROG);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Samples written: one for each taken, and one more for each further tick
 * a late stop or an absence from the CPU stood for. */
static uint64_t samples_written(const session *s)
{
    return s->stats.samples + s->stats.credited + s->away;
}

void rec_report_stats(const session *s, uint64_t now)
{
    double elapsed = (double)(now - s->start_ns) / 1e9;
    uint64_t bytes = rec_output_bytes(s->out), written = samples_written(s);
    rec_say(s,
        "%.1f s, %" PRIu64 " samples, %" PRIu64 " skipped, %.1f Hz, stop p50 %.0f us p99 %.0f us, "
        "held p50 %.0f us p99 %.0f us, overhead %.2f %%, %.1f KiB written, %.2f B/sample",
        elapsed, written, s->stats.skipped, elapsed > 0 ? written / elapsed : 0,
        rec_hist_quantile_us(&s->stats.window, 0.5), rec_hist_quantile_us(&s->stats.window, 0.99),
        rec_hist_quantile_us(&s->stats.held, 0.5), rec_hist_quantile_us(&s->stats.held, 0.99),
        elapsed > 0 ? 100.0 * (double)s->stats.window.total_ns / 1e9 / elapsed / (double)(s->active ? s->active : 1) : 0, bytes / 1024.0,
        written ? (double)bytes / (double)written : 0);
}

/* The end report as it goes out: each line said (the details only with
 * -v) and written into the recording, where --info shows all of it. */
typedef struct report {
    const session *s;
    zs_error *err;
    int failed; /* a line could not be written: err says why, later lines are only said */
} report;

static void report_line(report *r, int detail, pid_t pid, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void report_line(report *r, int detail, pid_t pid, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!detail || r->s->o->verbose)
        rec_say(r->s, "%s", line);
    if (!r->failed && rec_output_event(r->s->out, rec_since_start_us(r->s, rec_now_ns()), pid,
                                       ZS_EV_REPORT, 0, line, r->err))
        r->failed = 1;
}

void rec_report_losses(const session *s, const slot *sl, char *buf, size_t len)
{
    const struct {
        uint64_t n;
        const char *one, *many, *why;
    } lost[] = {
        {s->late_ticks, "tick", "ticks", "skipped: the recorder was late, on a busy host"},
        {sl->skipped_stuck, "tick", "ticks", "skipped: it did not stop within 1 s, blocked in the kernel"},
        {sl->skipped_behind, "tick", "ticks", "skipped: the recorder fell behind writing"},
        {sl->failed, "sample", "samples", "lost: its memory could not be read"},
        {sl->torn, "torn read", "torn reads", "discarded: its stack changed while being read"},
        {sl->cut, "stack", "stacks", "cut at the maximum depth, the outermost frames kept"},
    };
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof lost / sizeof lost[0]; i++) {
        if (!lost[i].n || at >= len)
            continue;
        int n = snprintf(buf + at, len - at, "%s%" PRIu64 " %s %s", at ? "; " : "", lost[i].n,
                         lost[i].n == 1 ? lost[i].one : lost[i].many, lost[i].why);
        at += n > 0 ? (size_t)n : 0;
    }
    if (!at)
        snprintf(buf, len, "nothing skipped or lost");
}

static double seconds(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* The recorder's CPU time so far: its own threads and its unwinders (each
 * a sandboxed child; those of targets gone were counted as they went). Not
 * RUSAGE_CHILDREN: a launched zeek is a child of the recorder too. */
static double recorder_cpu_s(const session *s)
{
    struct rusage self;
    double secs = getrusage(RUSAGE_SELF, &self) == 0 ? seconds(self.ru_utime) + seconds(self.ru_stime) : 0;
    uint64_t ns = s->gone_unwinder_ns;
    for (size_t i = 0; i < s->nslots; i++) {
        pid_t unwinder = s->slots[i]->native ? rec_native_unwinder(s->slots[i]->native) : 0;
        ns += unwinder ? rec_cpu_time_ns(unwinder) : 0;
    }
    return secs + (double)ns / 1e9;
}

/* The default report, after what was written: each process's samples and
 * what it lost, and what it cost. */
static void report_summary(report *r, double secs, double target_secs)
{
    const session *s = r->s;
    const rec_stats *st = &s->stats;
    char losses[512];
    for (size_t i = 0; i < s->nslots; i++) {
        const slot *sl = s->slots[i];
        if (sl->refused)
            continue;
        rec_report_losses(s, sl, losses, sizeof losses);
        report_line(r, 0, sl->target.pid, "pid %d: %" PRIu64 " samples (%.1f Hz); %s", (int)sl->target.pid,
                    sl->taken + sl->credited + sl->away,
                    secs > 0 ? (double)(sl->taken + sl->credited + sl->away) / secs : 0,
                    losses);
    }
    if (s->gone_targets)
        report_line(r, 0, 0, "%" PRIu64 " process%s recorded and gone before the end (%" PRIu64 " samples)",
                    s->gone_targets, s->gone_targets == 1 ? "" : "es", s->gone_samples);
    char held[160] = "zeek never held (nonblocking)";
    if (s->o->bpf)
        snprintf(held, sizeof held, "zeek never held (BPF sampler)");
    else if (!s->o->nonblocking && st->samples)
        snprintf(held, sizeof held, "zeek held p50 %.0f us, p99 %.0f us a sample (%.2f %% of its time)",
                 rec_hist_quantile_us(&st->held, 0.5), rec_hist_quantile_us(&st->held, 0.99),
                 100.0 * (double)st->held.total_ns / 1e9 / target_secs);
    else if (!s->o->nonblocking && !s->o->bpf)
        snprintf(held, sizeof held, "zeek never held (no samples)");
    report_line(r, 0, 0, "cost: %s; the recorder used %.1f %% of a core", held,
                secs > 0 ? 100.0 * recorder_cpu_s(s) / secs : 0);
}

/* The details (-v): the stop time and its parts, credited ticks, each
 * process's longest stops, the sandboxed inspections. */
static void report_stops(report *r, double secs, double target_secs, uint64_t written)
{
    const session *s = r->s;
    const rec_stats *st = &s->stats;
    uint64_t calls = s->gone_reads;
    for (size_t i = 0; i < s->nslots; i++)
        calls += s->slots[i]->reads;
    if (!s->o->nonblocking && !s->o->bpf && st->samples) {
        report_line(r, 1, 0, "stop time per sample: p50 %.0f us, p99 %.0f us, max %.0f us; target overhead "
            "%.2f %% at most, %.2f %% held for certain; %.2f reads/sample",
            rec_hist_quantile_us(&st->window, 0.5), rec_hist_quantile_us(&st->window, 0.99),
            st->window.max_ns / 1e3, 100.0 * (double)st->window.total_ns / 1e9 / target_secs,
            100.0 * (double)st->held.total_ns / 1e9 / target_secs, (double)calls / (double)st->samples);
        report_line(r, 1, 0, "of which (a) the target reaching its stop: p50 %.0f us, p99 %.0f us, max %.0f us "
            "(on a busy host mostly the target waiting for a core, as it would anyway); (b) the recorder "
            "busy elsewhere meanwhile: %.0f us in all, max %.0f us, in %" PRIu64 " samples; (c) held after "
            "the stop was seen: p50 %.0f us, p99 %.0f us, max %.0f us",
            rec_hist_quantile_us(&st->wait, 0.5), rec_hist_quantile_us(&st->wait, 0.99),
            st->wait.max_ns / 1e3, st->elsewhere.total_ns / 1e3, st->elsewhere.max_ns / 1e3,
            st->elsewhere_samples,
            rec_hist_quantile_us(&st->held, 0.5), rec_hist_quantile_us(&st->held, 0.99),
            st->held.max_ns / 1e3);
    }
    if (st->credited)
        report_line(r, 1, 0, "%" PRIu64 " of %" PRIu64 " samples (%.1f %%) stand for ticks that passed while a "
            "target was on its way to its stop (waiting for a core on a busy host, or in an "
            "uninterruptible wait); its stack could not change meanwhile, so the shares stay right",
            st->credited, written, 100.0 * (double)st->credited / (double)written);
    for (size_t i = 0; i < s->nslots && (s->nslots > 1 || st->credited); i++) {
        const slot *sl = s->slots[i];
        if (sl->taken)
            report_line(r, 1, sl->target.pid, "pid %d: %" PRIu64 " samples (%.1f Hz), %" PRIu64 " of them "
                "credited; stop max %.0f us; (b) %.0f us in %" PRIu64 " samples; (c) max %.0f us",
                (int)sl->target.pid, sl->taken + sl->credited,
                secs > 0 ? (double)(sl->taken + sl->credited) / secs : 0, sl->credited,
                sl->stop_max_ns / 1e3, sl->elsewhere_ns / 1e3, sl->elsewhere_samples,
                sl->held_max_ns / 1e3);
    }
    if (s->o->all)
        report_line(r, 1, 0, "--all: %" PRIu64 " inspections of executables run (each in a sandbox, off "
            "the sampling thread), %" PRIu64 " answered from the cache", s->inspections_run,
            s->inspections_cached);
}

/* The details (-v) of native frames and ZAM's instructions, and the
 * totals of ticks skipped and reads torn. */
static void report_frames(report *r)
{
    const session *s = r->s;
    const rec_stats *st = &s->stats;
    if (s->native_samples) {
        uint64_t truncated = s->gone_truncated, general = s->gone_general;
        uint64_t copies = s->gone_copies, copied = s->gone_copied;
        for (size_t i = 0; i < s->nslots; i++) {
            const rec_native *n = s->slots[i]->native;
            truncated += n ? rec_native_truncated(n) : 0;
            general += n ? rec_native_general(n) : 0;
            copied += s->slots[i]->stack_copied;
            copies += s->slots[i]->stack_copies;
        }
        report_line(r, 1, 0, "native frames: %" PRIu64 " stacks unwound; %" PRIu64 " unwinds failed, %" PRIu64
            " did not match the script frames (kept as script frames and the native leaf), %" PRIu64
            " deeper than their stack copy (outermost frames missing); stack copies averaged %" PRIu64
            " bytes (to the stack's base once an unwind reached it, at most %d KiB; before, 8.1+: to %d KiB "
            "above the outermost script frame, %d-%d KiB; else %d KiB)",
            s->native_samples, s->native_failed, s->native_mismatched, truncated,
            copies ? copied / copies : 0, REC_NATIVE_STACK_MAX >> 10, REC_NATIVE_STACK_SLACK >> 10,
            REC_NATIVE_STACK_MIN >> 10,
            REC_NATIVE_STACK_BYTES >> 10, REC_NATIVE_STACK_BYTES >> 10);
        if (general)
            report_line(r, 1, 0, "native frames: %" PRIu64 " unwinds took the general path (a frame whose "
                "unwind rules are not in the compiled form: a signal frame, a PLT stub, code without "
                "CFI)", general);
        if (s->native_followed)
            report_line(r, 1, 0, "native frames: %" PRIu64 " samples written before their unwinds came "
                "back (the unwinder behind: short of a core, or still reading the modules' tables at "
                "the start); their native frames followed them in the recording", s->native_followed);
        if (s->native_behind)
            report_line(r, 1, 0, "native frames: %" PRIu64 " samples written without them: the unwinder "
                "had %d unwinds out already, or the last capture was not handed to it yet (another "
                "target slow to stop)", s->native_behind, REC_UNWINDS_OUT);
    }
    const uint64_t *zam = s->zam_samples;
    if (zam[REC_ZAM_FOUND] + zam[REC_ZAM_MISSING] + zam[REC_ZAM_AMBIGUOUS])
        report_line(r, 1, 0, "ZAM: %" PRIu64 " samples in ZAM-compiled code, %" PRIu64 " of them at a known "
            "instruction; %" PRIu64 " with none found in the copied registers and stack, %" PRIu64
            " with several (left without)", zam[REC_ZAM_FOUND] + zam[REC_ZAM_MISSING] +
            zam[REC_ZAM_AMBIGUOUS], zam[REC_ZAM_FOUND], zam[REC_ZAM_MISSING], zam[REC_ZAM_AMBIGUOUS]);
    if (st->skipped)
        report_line(r, 1, 0, "%" PRIu64 " sampling ticks were skipped (recorder late, or a target that did not "
            "stop)", st->skipped);
    if (st->torn)
        report_line(r, 1, 0, "%" PRIu64 " torn reads discarded (nonblocking)", st->torn);
}

/* A note that asks for an action: said without -v. */
static void report_notes(report *r)
{
    const session *s = r->s;
    const rec_stats *st = &s->stats;
    if (s->o->nonblocking || s->o->bpf || !st->samples || rec_hist_quantile_us(&st->wait, 0.5) <= 30 ||
        rec_hist_quantile_us(&st->wait, 0.99) >= 1000)
        return;
    /* Slow stops on a quiet host: where the recorder ran, not the load. */
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i]->taken && s->slots[i]->pinned_cpu < 0)
            report_line(r, 0, s->slots[i]->target.pid, "note: pid %d may run on any CPU, so its stops pay "
                "cross-CPU wake-ups; pinned (e.g. pin_cpus in zeekctl's node.cfg) they take about 15 us",
                (int)s->slots[i]->target.pid);
}

int rec_report_end(const session *s, zs_error *err)
{
    report r = {s, err, 0};
    double secs = (double)((s->end_ns ? s->end_ns : rec_now_ns()) - s->start_ns) / 1e9;
    uint64_t bytes = rec_output_bytes(s->out), written = samples_written(s);
    unsigned parts = rec_output_parts(s->out);
    /* Said, not kept: --info gives a recording's own size. */
    if (parts > 1)
        rec_say(s, "wrote %u parts, the last %s: %" PRIu64 " samples in %.1f s, %.1f KiB (%.2f B/sample)",
            parts, rec_output_path(s->out), written, secs, bytes / 1024.0,
            written ? (double)bytes / (double)written : 0);
    else
        rec_say(s, "wrote %s: %" PRIu64 " samples in %.1f s, %zu distinct stacks, %.1f KiB (%.2f B/sample)",
            rec_output_path(s->out), written, secs, rec_output_stacks(s->out), bytes / 1024.0,
            written ? (double)bytes / (double)written : 0);
    size_t sampled = 0;
    for (size_t i = 0; i < s->nslots; i++)
        sampled += s->slots[i]->taken > 0;
    double target_secs = secs * (double)(sampled ? sampled : 1);
    report_summary(&r, secs, target_secs);
    char bpf[768];
    int lost = s->o->bpf ? rec_bpf_sampler_describe(s, 0, bpf, sizeof bpf) : -1;
    if (lost >= 0) /* a detail, unless reads failed or records were lost */
        report_line(&r, !lost, 0, "%s", bpf);
    if (s->o->bpf && rec_bpf_sampler_describe(s, 1, bpf, sizeof bpf) == 0)
        report_line(&r, 1, 0, "%s", bpf);
    report_notes(&r);
    report_stops(&r, secs, target_secs, written);
    report_frames(&r);
    return r.failed ? -1 : 0;
}
