/* What the recorder says: its message lines, the stats line once a second
 * (-v) and the report at the end of a recording. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

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

void rec_report_stats(const session *s, uint64_t now)
{
    double elapsed = (double)(now - s->start_ns) / 1e9;
    uint64_t bytes = rec_output_bytes(s->out), written = s->stats.samples + s->stats.credited +
                                              s->offcpu_ticks - s->offcpu_samples;
    rec_say(s,
        "%.1f s, %" PRIu64 " samples, %" PRIu64 " skipped, %.1f Hz, stop p50 %.0f us p99 %.0f us, "
        "held p50 %.0f us p99 %.0f us, overhead %.2f %%, %.1f KiB written, %.2f B/sample",
        elapsed, written, s->stats.skipped, elapsed > 0 ? written / elapsed : 0,
        rec_hist_quantile_us(&s->stats.window, 0.5), rec_hist_quantile_us(&s->stats.window, 0.99),
        rec_hist_quantile_us(&s->stats.held, 0.5), rec_hist_quantile_us(&s->stats.held, 0.99),
        elapsed > 0 ? 100.0 * (double)s->stats.window.total_ns / 1e9 / elapsed / (double)(s->active ? s->active : 1) : 0, bytes / 1024.0,
        written ? (double)bytes / (double)written : 0);
}

void rec_report_end(const session *s)
{
    double secs = (double)(rec_now_ns() - s->start_ns) / 1e9;
    const rec_stats *st = &s->stats;
    uint64_t bytes = rec_output_bytes(s->out), calls = s->gone_reads, written = st->samples + st->credited + s->offcpu_ticks - s->offcpu_samples;
    unsigned parts = rec_output_parts(s->out);
    for (size_t i = 0; i < s->nslots; i++)
        calls += s->slots[i]->reads;
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
    if (s->o->bpf)
        rec_bpf_feed_report(s);
    if (!s->o->nonblocking && !s->o->bpf && st->samples) {
        rec_say(s, "stop time per sample: p50 %.0f us, p99 %.0f us, max %.0f us; target overhead %.2f %% "
            "at most, %.2f %% held for certain; %.2f reads/sample",
            rec_hist_quantile_us(&st->window, 0.5), rec_hist_quantile_us(&st->window, 0.99),
            st->window.max_ns / 1e3, 100.0 * (double)st->window.total_ns / 1e9 / target_secs,
            100.0 * (double)st->held.total_ns / 1e9 / target_secs, (double)calls / (double)st->samples);
        rec_say(s, "of which (a) the target reaching its stop: p50 %.0f us, p99 %.0f us, max %.0f us (on "
            "a busy host mostly the target waiting for a core, as it would anyway); (b) the recorder busy "
            "elsewhere meanwhile: %.0f us in all, max %.0f us, in %" PRIu64 " samples; (c) held after the "
            "stop was seen: p50 %.0f us, p99 %.0f us, max %.0f us",
            rec_hist_quantile_us(&st->wait, 0.5), rec_hist_quantile_us(&st->wait, 0.99),
            st->wait.max_ns / 1e3, st->elsewhere.total_ns / 1e3, st->elsewhere.max_ns / 1e3,
            st->elsewhere_samples,
            rec_hist_quantile_us(&st->held, 0.5), rec_hist_quantile_us(&st->held, 0.99),
            st->held.max_ns / 1e3);
    }
    if (!s->o->nonblocking && !s->o->bpf && st->samples && rec_hist_quantile_us(&st->wait, 0.5) > 30 &&
        rec_hist_quantile_us(&st->wait, 0.99) < 1000) {
        /* Slow stops on a quiet host: where the recorder ran, not the load. */
        for (size_t i = 0; i < s->nslots; i++)
            if (s->slots[i]->taken && s->slots[i]->pinned_cpu < 0)
                rec_say(s, "note: pid %d may run on any CPU, so its stops pay cross-CPU wake-ups; "
                    "pinned (e.g. pin_cpus in zeekctl's node.cfg) they take about 15 us",
                    (int)s->slots[i]->target.pid);
    }
    if (st->credited)
        rec_say(s, "%" PRIu64 " of %" PRIu64 " samples (%.1f %%) stand for ticks that passed while a "
            "target was on its way to its stop (waiting for a core on a busy host, or in an "
            "uninterruptible wait); its stack could not change meanwhile, so the shares stay right",
            st->credited, written, 100.0 * (double)st->credited / (double)written);
    for (size_t i = 0; i < s->nslots && (s->nslots > 1 || st->credited); i++) {
        const slot *sl = s->slots[i];
        if (sl->taken)
            rec_say(s, "pid %d: %" PRIu64 " samples (%.1f Hz), %" PRIu64 " of them credited; "
                "stop max %.0f us; (b) %.0f us in %" PRIu64 " samples; (c) max %.0f us",
                (int)sl->target.pid, sl->taken + sl->credited,
                secs > 0 ? (double)(sl->taken + sl->credited) / secs : 0, sl->credited,
                sl->stop_max_ns / 1e3, sl->elsewhere_ns / 1e3, sl->elsewhere_samples,
                sl->held_max_ns / 1e3);
    }
    if (s->gone_targets)
        rec_say(s, "%" PRIu64 " processes recorded and gone before the end (%" PRIu64 " samples)",
            s->gone_targets, s->gone_samples);
    if (s->o->all)
        rec_say(s, "--all: %" PRIu64 " inspections of executables run (each in a sandbox, off "
            "the sampling thread), %" PRIu64 " answered from the cache", s->inspections_run,
            s->inspections_cached);
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
        rec_say(s, "native frames: %" PRIu64 " stacks unwound; %" PRIu64 " unwinds failed, %" PRIu64
            " did not match the script frames (kept as script frames and the native leaf), %" PRIu64
            " deeper than their stack copy (outermost frames missing); stack copies averaged %" PRIu64
            " bytes (to the stack's base once an unwind reached it, at most %d KiB; before, 8.1+: to %d KiB "
            "above the outermost script frame, %d-%d KiB; else %d KiB)",
            s->native_samples, s->native_failed, s->native_mismatched, truncated,
            copies ? copied / copies : 0, REC_NATIVE_STACK_MAX >> 10, REC_NATIVE_STACK_SLACK >> 10,
            REC_NATIVE_STACK_MIN >> 10,
            REC_NATIVE_STACK_BYTES >> 10, REC_NATIVE_STACK_BYTES >> 10);
        if (general)
            rec_say(s, "native frames: %" PRIu64 " unwinds took the general path (a frame whose "
                "unwind rules are not in the compiled form: a signal frame, a PLT stub, code without "
                "CFI)", general);
        if (s->native_behind)
            rec_say(s, "native frames: %" PRIu64 " samples written without them: the unwinder "
                "was behind (short of a core, or still reading the modules' tables at the start), or "
                "the last capture was not handed to it yet (another target slow to stop)",
                s->native_behind);
    }
    const uint64_t *zam = s->zam_samples;
    if (zam[REC_ZAM_FOUND] + zam[REC_ZAM_MISSING] + zam[REC_ZAM_AMBIGUOUS])
        rec_say(s, "ZAM: %" PRIu64 " samples in ZAM-compiled code, %" PRIu64 " of them at a known "
            "instruction; %" PRIu64 " with none found in the copied registers and stack, %" PRIu64
            " with several (left without)", zam[REC_ZAM_FOUND] + zam[REC_ZAM_MISSING] +
            zam[REC_ZAM_AMBIGUOUS], zam[REC_ZAM_FOUND], zam[REC_ZAM_MISSING], zam[REC_ZAM_AMBIGUOUS]);
    if (st->skipped)
        rec_say(s, "%" PRIu64 " sampling ticks were skipped (recorder late, or a target that did not stop)",
            st->skipped);
    if (st->torn)
        rec_say(s, "%" PRIu64 " torn reads discarded (nonblocking)", st->torn);
}

