/* SPDX-License-Identifier: BSD-3-Clause */
/* The targets' slots: a process found and checked becomes a slot; seized,
 * it is activated (its sampler, its unwinder, its line in the recording);
 * gone, its exit is written and its slot freed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rec_clock.h"
#include "base/rec_constants.h"
#include "session/rec_session_priv.h"
#include "zs_cmdline.h"
#include "zs_grow.h"

slot *rec_slot_new(session *s, zs_error *err)
{
    slot *sl = calloc(1, sizeof *sl);
    if (!sl || zs_grow(&s->slots, &s->slots_cap, s->nslots + 1, sizeof *s->slots, 8)) {
        free(sl);
        zs_fail(err, ZS_E_NOMEM, "targets");
        return NULL;
    }
    sl->cpu.stat_fd = -1;
    sl->exit_fd = -1;
    s->slots[s->nslots++] = sl;
    return sl;
}

void rec_slot_free(slot *sl)
{
    rec_sampler_free(sl->sampler);
    rec_raw_sample_free(&sl->raw);
    rec_native_free(sl->native);
    rec_zam_free(sl->zam);
    for (unsigned k = 0; k < REC_PENDING_SAMPLES; k++) /* left by an error */
        free(sl->pending[k].frames);
    for (unsigned k = 0; k < REC_UNWINDS_OUT; k++) /* answers that never came */
        free(sl->late[k].p.frames);
    rec_cpu_close(&sl->cpu);
    if (sl->exit_fd >= 0)
        close(sl->exit_fd);
    rec_load_free(&sl->load);
    free(sl);
}

int rec_slot_inspect(session *s, slot *sl, pid_t pid, zs_error *err)
{
    sl->target.pid = pid;
    return rec_target_open(pid, &s->o->layout, NULL, &sl->target, err) ||
                   rec_target_check(&sl->target, NULL, err)
               ? -1
               : 0;
}

/* Blocking mode seizes; the BPF sampler points the kernel at the target's
 * main thread (nonblocking never traces, nor does BPF). */
int rec_slot_seize(session *s, slot *sl, zs_error *err)
{
    if (s->o->bpf) {
        sl->bpf_added = rec_bpf_sampler_add(s, sl, rec_slot_wants_stack(s, sl), err) == 0;
        return sl->bpf_added ? 0 : -1;
    }
    return s->o->nonblocking ? 0 : rec_ptrace_seize(&sl->tracee, sl->target.pid, 0, err);
}

/* Adds an active target to the recording, and says so. */
static int announce(session *s, slot *sl, zs_error *err)
{
    if (rec_output_add_process(s->out, &sl->target, err))
        return -1;
    char inspected[48] = "";
    if (sl->inspect_ns)
        snprintf(inspected, sizeof inspected, ", inspected in %.2f s", sl->inspect_ns / 1e9);
    rec_say(s, "recording pid %d (%s, Zeek %s, layout from %s%s%s%s)", (int)sl->target.pid,
        sl->target.exe, sl->target.zeek_version, rec_layout_source_name(sl->target.layout_source),
        sl->target.node[0] ? ", node " : "", sl->target.node, inspected);
    if (zs_cmdline_zam(sl->target.cmdline) && !sl->zam)
        rec_say(s, "note: pid %d compiles its scripts with ZAM (-O ZAM): the functions ZAM inlines "
            "have no frames of their own (their time is their callers') and the innermost ZAM body no "
            "line: %s", (int)sl->target.pid,
            !sl->native ? "ZAM's instructions are found with native frames only (not with --no-native "
                          "or --nonblocking)"
                        : "this Zeek's ZAM objects are not in its layout (Zeek 8.0 and later's are)");
    return 0;
}

/* -O ZAM without native frames: the registers and stack that native
 * frames copy anyway, copied for ZAM's instruction alone. */
static int zam_alone(const session *s, const slot *sl)
{
    return !s->o->native && zs_cmdline_zam(sl->target.cmdline) &&
           zs_layout_has_zam(&sl->target.layout) && sl->target.zam.body_vtable;
}

int rec_slot_wants_stack(const session *s, const slot *sl)
{
    return !s->o->nonblocking && (s->o->native || zam_alone(s, sl));
}

/* What the registers and the stack copies go to: the unwinder (native
 * frames), or for ZAM's instruction alone a copier; none without either. */
static void start_native(session *s, slot *sl)
{
    if (!rec_slot_wants_stack(s, sl))
        return;
    if (zam_alone(s, sl)) {
        sl->native = rec_native_copier(sl->target.pid);
        sl->zam = sl->native ? rec_zam_new(sl->target.pid, &sl->target.layout,
                                           &sl->target.zam) : NULL;
        return;
    }
    zs_error why = {0};
    uint64_t begin = rec_now_ns();
    /* The BPF sampler's records come a poll's worth at a time. */
    unsigned one_by_one_hz = s->o->bpf ? 0 : (unsigned)s->o->rate_hz;
    if (!(sl->native = rec_native_new(sl->target.pid, one_by_one_hz, &why)))
        rec_say(s, "warning: pid %d: no native frames: %s", (int)sl->target.pid, why.detail);
    /* NULL (nothing to do) unless the layout and the executable know ZAM. */
    if (sl->native)
        sl->zam = rec_zam_new(sl->target.pid, &sl->target.layout, &sl->target.zam);
    if (s->o->verbose) /* a fork and the modules' descriptors; their parsing is the unwinder's */
        rec_say(s, "pid %d: unwinder started in %.2f ms", (int)sl->target.pid,
                (rec_now_ns() - begin) / 1e6);
}

/* --sampler bpf: the kernel samples the target's main thread, no sampler
 * of ours; the registers and stack copies come in its records (no room of
 * the capture record's own). */
static int prepare_bpf(session *s, slot *sl, zs_error *err)
{
    if (rec_raw_sample_init(&sl->raw, &sl->target.layout, ZS_MAX_FRAMES, 0))
        return zs_fail(err, ZS_E_NOMEM, "sampler");
    start_native(s, sl);
    if (!sl->bpf_added) { /* launched: traced only to catch its exec */
        if (rec_bpf_sampler_add(s, sl, rec_slot_wants_stack(s, sl), err))
            return -1;
        sl->bpf_added = 1;
    }
    return 0;
}

/* The ptrace sampler, and with native frames (or ZAM's instruction) what
 * its copies go to. */
static int prepare_ptrace(session *s, slot *sl, zs_error *err)
{
    if (!(sl->sampler = rec_sampler_new(&sl->target, s->o->nonblocking)))
        return zs_fail(err, ZS_E_NOMEM, "sampler");
    start_native(s, sl);
    if (rec_raw_sample_init(&sl->raw, &sl->target.layout, ZS_MAX_FRAMES, sl->native != NULL))
        return zs_fail(err, ZS_E_NOMEM, "sampler");
    return 0;
}

int rec_slot_activate(session *s, slot *sl, zs_error *err)
{
    if (s->o->bpf ? prepare_bpf(s, sl, err) : prepare_ptrace(s, sl, err))
        return -1;
    rec_cpu_open(&sl->cpu, sl->target.pid);
    if (sl->exit_fd < 0)
        sl->exit_fd = rec_target_exit_fd(sl->target.pid);
    sl->pinned_cpu = rec_cpu_pinned(sl->target.pid);
    sl->active = 1;
    s->active++;
    return announce(s, sl, err);
}

void rec_slot_refuse(session *s, slot *sl, pid_t pid, const zs_error *why)
{
    sl->target.pid = pid;
    sl->refused = 1;
    rec_say(s, "warning: skipping pid %d: %s", (int)pid, why->detail);
}

/* --all: takes what the scout found. Before the recording is open (the
 * first scan) each usable one gets a slot, to be seized by start_targets;
 * with it open, each is seized and recorded at once. */
int rec_slots_adopt(session *s, zs_error *err)
{
    rec_scout_find *f = s->find;
    while (rec_scout_next(s->scout, f)) {
        if (!f->ok) {
            rec_say(s, "warning: skipping pid %d: %s", (int)f->target.pid, f->why.detail);
            continue;
        }
        slot *sl = rec_slot_new(s, err);
        if (!sl)
            return -1;
        sl->target = f->target;
        sl->inspect_ns = f->inspect_ns;
        zs_error why = {0};
        if (s->out && rec_slot_seize(s, sl, &why)) {
            rec_say(s, "warning: skipping pid %d: %s", (int)f->target.pid, why.detail);
            rec_slot_free(sl);
            s->nslots--;
            continue;
        }
        if (!s->out) {
            sl->active = 1; /* inspected; seized and announced by start_targets */
            continue;
        }
        if (rec_slot_activate(s, sl, err) ||
            rec_output_event(s->out, rec_since_start_us(s, rec_now_ns()), sl->target.pid, ZS_EV_ATTACHED,
                             0, "", err))
            return -1;
    }
    return 0;
}

void rec_slot_mark_gone(session *s, slot *sl)
{
    sl->active = 0;
    sl->wanted = 0;
    sl->gone = 1;
    s->active--;
    rec_cpu_close(&sl->cpu);
}

int rec_slots_release_gone(session *s, size_t i, zs_error *err)
{
    slot *sl = s->slots[i];
    int st = sl->tracee.wait_status;
    char msg[160];
    if (sl->tracee.state == REC_TRACEE_GONE && WIFSIGNALED(st))
        snprintf(msg, sizeof msg, "pid %d was killed by signal %d", (int)sl->target.pid, WTERMSIG(st));
    else if (sl->tracee.state == REC_TRACEE_GONE && WIFEXITED(st))
        snprintf(msg, sizeof msg, "pid %d exited with status %d", (int)sl->target.pid, WEXITSTATUS(st));
    else
        snprintf(msg, sizeof msg, "pid %d is gone", (int)sl->target.pid);
    char losses[512];
    rec_report_losses(s, sl, losses, sizeof losses);
    rec_say(s, "%s (%" PRIu64 " samples; %s)", msg, sl->taken + sl->credited + sl->away, losses);
    int rc = rec_output_event(s->out, rec_since_start_us(s, rec_now_ns()), sl->target.pid,
                              ZS_EV_TARGET_EXITED, (uint64_t)st, msg, err);
    rec_output_drop_process(s->out, sl->target.pid);
    s->gone_samples += sl->taken + sl->credited + sl->away;
    if (sl->bpf_added)
        rec_bpf_sampler_remove(s, sl);
    s->gone_reads += sl->reads;
    s->gone_targets++;
    s->gone_copied += sl->stack_copied;
    s->gone_copies += sl->stack_copies;
    if (sl->native) {
        s->gone_truncated += rec_native_truncated(sl->native);
        s->gone_general += rec_native_general(sl->native);
        pid_t unwinder = rec_native_unwinder(sl->native);
        s->gone_unwinder_ns += unwinder ? rec_cpu_time_ns(unwinder) : 0;
    }
    rec_slot_free(sl);
    s->slots[i] = s->slots[--s->nslots];
    return rc;
}

