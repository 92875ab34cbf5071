/* SPDX-License-Identifier: BSD-3-Clause */
#include "views/rec_dump.h"
#include "base/rec_constants.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/rec_clock.h"
#include "frames/rec_memory.h"
#include "frames/rec_model.h"
#include "sampling/rec_ptrace.h"
#include "sampling/rec_sampler.h"
#include "frames/rec_zam.h"
#include "zs_resolver.h"


/* Stops the target once and fills raw (for -O ZAM with its registers and
 * native stack); it runs untraced again before this returns, whatever
 * happened. */
static int take_one(const rec_target *t, rec_sampler *s, rec_raw_sample *raw, zs_error *err)
{
    rec_tracee tr;
    if (rec_ptrace_seize(&tr, t->pid, 0, err))
        return -1;
    rec_ptrace_interrupt(&tr, rec_now_ns());
    int stopped = rec_ptrace_await_stop(&tr, rec_now_ns() + REC_STOP_DEADLINE_NS, 1);
    rec_stack_plan unknown = {0};
    rec_read_result res = stopped > 0 ? rec_sampler_take(s, raw, &unknown) : REC_READ_FAILED;
    rec_tracee *one = &tr;
    rec_ptrace_release(&one, 1, rec_now_ns() + REC_STOP_DEADLINE_NS);
    if (stopped == 0)
        return zs_fail(err, ZS_E_NO_PROCESS, "pid %d exited", (int)t->pid);
    if (stopped < 0)
        return zs_fail(err, ZS_E_TARGET, "pid %d did not stop within 1 s (uninterruptible "
                       "sleep?); it was left running", (int)t->pid);
    if (res != REC_READ_OK)
        return zs_fail(err, ZS_E_TARGET, "pid %d: its call stack could not be read", (int)t->pid);
    return 0;
}

static void print_network_time(FILE *out, double nt)
{
    if (nt <= 0) {
        fprintf(out, "network time not set yet");
        return;
    }
    time_t secs = (time_t)nt;
    struct tm tm;
    char when[64] = "";
    if (gmtime_r(&secs, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    fprintf(out, "network time %.6f (%s)", nt, when);
}

int rec_dump(pid_t pid, const rec_layout_choice *choice, FILE *out, zs_error *err)
{
    rec_target t;
    if (rec_target_open(pid, choice, NULL, &t, err) || rec_target_check(&t, NULL, err))
        return -1;
    rec_sampler *s = rec_sampler_new(&t, 0);
    rec_raw_sample raw = {0};
    zs_frame *frames = calloc(ZS_MAX_FRAMES, sizeof *frames);
    uint64_t *addrs = calloc(ZS_MAX_FRAMES, sizeof *addrs);
    rec_zam *zam = rec_zam_new(pid, &t.layout, &t.zam);
    zs_frame *opened_frames = zam ? calloc(ZS_MAX_FRAMES, sizeof *opened_frames) : NULL;
    int rc = -1;
    if (!s || !frames || !addrs || rec_raw_sample_init(&raw, &t.layout, ZS_MAX_FRAMES, zam != NULL)) {
        zs_fail(err, ZS_E_NOMEM, "dump");
        goto out;
    }
    if (take_one(&t, s, &raw, err))
        goto out;
    int cut;
    size_t n = rec_model_frames(&t.layout, &raw, frames, &cut);
    if (zam && raw.native.taken && raw.native.stack_len) {
        rec_zam_copy c = {&raw.native.regs, raw.native.stack, raw.native.stack_len};
        rec_zam_found found;
        rec_zam_collect(zam, frames, rec_model_frame_addrs(&t.layout, &raw, addrs) ? addrs : NULL,
                        n, &c, &found);
        rec_zam_choose(&found, 0, frames);
    }
    /* Functions ZAM inlined into inlined ones, opened up (Zeek 7.2 on):
     * frames [first_inlined, end_inlined) of the opened stack. */
    size_t opened = zam && opened_frames ? rec_zam_expand(zam, frames, n, opened_frames, ZS_MAX_FRAMES) : 0;
    size_t first_inlined = 0, end_inlined = 0;
    if (opened) {
        while (first_inlined < n && frames[first_inlined].stmt == opened_frames[first_inlined].stmt)
            first_inlined++;
        first_inlined++;
        end_inlined = first_inlined + (opened - n);
        memcpy(frames, opened_frames, opened * sizeof *frames);
        n = opened;
    }
    fprintf(out, "pid %d: Zeek %s, %s; ", (int)pid, t.zeek_version, t.exe);
    print_network_time(out, raw.network_time);
    fputc('\n', out);
    if (n == 0)
        fprintf(out, "no script frame: zeek is running native code (empty call stack)\n");
    else
        fprintf(out, "script stack, innermost first (%zu frame%s%s):\n", n, n == 1 ? "" : "s",
                cut ? ", the innermost beyond the first 1,024 not shown" : "");
    /* Named from live memory after the target runs again: a name can have
     * changed meanwhile only if that object was freed, which a running
     * frame's Func is not. */
    pid_t mem_pid = pid;
    zs_memory mem = rec_live_memory(&mem_pid);
    size_t shown = 0;
    for (size_t k = n; k-- > 0;) {
        zs_frame_info fi;
        if (zs_resolve_frame(&mem, &t.layout, &frames[k], &fi)) {
            zs_fail(err, ZS_E_NOMEM, "dump");
            goto out;
        }
        for (size_t i = fi.ninlined; i-- > 0;) /* innermost first */
            fprintf(out, "  #%-3zu %s  at %s:%d  (inlined by ZAM)\n", shown++, fi.inlined[i].func,
                    fi.inlined[i].file ? fi.inlined[i].file : "?", fi.inlined[i].line);
        fprintf(out, "  #%-3zu %s", shown++, fi.name);
        if (fi.file && fi.file[0])
            fprintf(out, "  at %s:%d", fi.file, fi.line);
        else if (!fi.unresolved)
            fprintf(out, "  (built-in function)");
        if (k >= first_inlined && k < end_inlined)
            fprintf(out, "  (inlined by ZAM)");
        fputc('\n', out);
        zs_frame_info_free(&fi);
    }
    rc = 0;
out:
    free(frames);
    free(opened_frames);
    free(addrs);
    rec_raw_sample_free(&raw);
    rec_zam_free(zam);
    rec_sampler_free(s);
    return rc;
}
