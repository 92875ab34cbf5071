/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: a lying unwinder -> rec_native_collect -> rec_output_native
 * -> a recording -> zs_reader.
 *
 * --native hands each stack copy to a sandboxed unwinder and believes none
 * of its answers: whatever it says must never corrupt the recorder or the
 * recording. Here the unwinder is a fake: this file's rec_unwinder_main
 * (the recorder's own is left out at link time: the archive member that
 * defines it is never pulled in) is what rec_native_new forks, and it sends
 * the fuzzer's bytes as its messages, while draining what the recorder
 * sends it. The rest is the recorder's real code on a real process: a child
 * of this one, kept in a ptrace-stop for the whole run, whose registers and
 * stack are taken and handed over as in a recording.
 *
 *   byte 0: bits 0-1: captures handed over per round - 1;
 *           bits 2-4: rounds - 1
 *   byte 1: the frames rec_native_collect may return (0: REC_NATIVE_MAX_FRAMES)
 *   then messages, each: u8 type, u32 arg, u16 length, u8 flags, payload
 *           (cut short at the end of the input); flags bit 0: the stack
 *           pointers of a UW_RESULT are offsets from the copy's rsp (the
 *           fuzzer cannot know where the stack is)
 *
 * The unwinder answers in the order of the input: the k-th answer the
 * recorder collects is made of the messages up to the k-th UW_RESULT. The
 * invariants, checked against those bytes: an answer is returned only when
 * every message up to it was well-formed (only NAME, MODULE, LOCATION and
 * LINES before the RESULT, which has exactly its frames' bytes); its frames
 * are the RESULT's, outermost first, at most max, each with its extent
 * inside the copy and a location that was announced, and that location,
 * its symbol's name and its module are what the unwinder said; a refused
 * answer says why, and the unwinder is then given up for good. The
 * recording written from the frames reads back with zs_reader: its
 * locations name symbols and modules written before them, at addresses
 * inside their module, and every native frame of a stack names a location
 * written before it.
 *
 * ZS_FUZZ_NATIVE_EXPECT (the seed and hand-made ctests): "accepted": every
 * answer the input holds is collected; "refused": every answer but its
 * last, which is refused (each hand-made lie is in its last answer). */
#include <alloca.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rec_clock.h"
#include "native/rec_mixed.h"
#include "native/rec_native.h"
#include "output/rec_output.h"
#include "sampling/rec_ptrace.h"
#include "native/rec_unwind_msg.h"
#include "zs_layout.h"
#include "zs_grow.h"
#include "zs_reader.h"

static const char TARGET[] = "fuzz_native";

/* Each input forks (rec_native_new starts its unwinder), and a fork copies
 * the page tables of all ASan keeps in quarantine (256 MB by default): a
 * small quarantine doubles the inputs a second, and still holds every
 * block freed within one input. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "quarantine_size_mb=16"; }

/* ---- the process whose stack is copied, and where recordings go ---- */

static pid_t target;
static uint64_t target_rsp;
static rec_target target_info;
static char recording[4096];

static void remove_recording_dir(void)
{
    char *slash = strrchr(recording, '/');
    unlink(recording);
    if (slash) {
        *slash = '\0';
        rmdir(recording);
    }
}

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "%s: invariant broken: %s\n", TARGET, what);
        remove_recording_dir();
        abort();
    }
}

/* Once per run: a child that waits in pause(), seized and interrupted, so
 * that every input's captures read the same real stack. */
/* The target waits deep in its stack, at the same offset in a page in
 * every run: every copy (at most REC_NATIVE_STACK_MAX from rsp) is whole,
 * and its length, which ends at the page of the stack's base once an
 * answer said where that is, the same in every run. Waiting where the
 * kernel's random offset of the stack put it, a seed's answer asked for
 * stack beyond its copy now and then. */
static void __attribute__((noinline)) wait_deep(void)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    volatile char *room = alloca(REC_NATIVE_STACK_MAX + (16 << 10) + (here & 4095));
    room[0] = 0;
    for (;;)
        pause();
}

static void set_up(void)
{
    if (target)
        return;
    pid_t parent = getpid();
    target = fork();
    check(target >= 0, "fork of the target");
    if (target == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(0);
        wait_deep();
    }
    /* Stopped only once it waits in pause (syscall 34), where its rsp is
     * the same in every run: interrupted on its way there, it had a stack
     * of its own each time. */
    char path[64], line[32] = "";
    snprintf(path, sizeof path, "/proc/%d/syscall", (int)target);
    for (int tries = 0; tries < 2000 && strncmp(line, "34 ", 3); tries++) {
        FILE *f = fopen(path, "r");
        line[0] = '\0';
        if (f && !fgets(line, sizeof line, f))
            line[0] = '\0';
        if (f)
            fclose(f);
        usleep(1000);
    }
    check(!strncmp(line, "34 ", 3), "the target waits in pause");
    int status;
    check(ptrace(PTRACE_SEIZE, target, 0, 0) == 0, "PTRACE_SEIZE of the target (run as root)");
    check(ptrace(PTRACE_INTERRUPT, target, 0, 0) == 0, "PTRACE_INTERRUPT of the target");
    check(waitpid(target, &status, __WALL) == target && WIFSTOPPED(status), "the target's stop");
    struct user_regs_struct regs;
    check(ptrace(PTRACE_GETREGS, target, 0, &regs) == 0, "the target's registers");
    target_rsp = regs.rsp;

    target_info.pid = target_info.ns_pid = target;
    snprintf(target_info.exe, sizeof target_info.exe, "%s", TARGET);
    target_info.layout = *zs_layout_builtin("8.2.2");
    target_info.layout_source = REC_LAYOUT_BUILTIN;

    const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(recording, sizeof recording, "%s/zs-fuzz-native-XXXXXX", tmp);
    check(mkdtemp(recording) != NULL, "a directory for the recordings");
    strcat(recording, "/r.zspy");
    atexit(remove_recording_dir);
}

/* ---- the fake unwinder ---- */

static const uint8_t *input;
static size_t input_size;

/* One message of the input. */
typedef struct said {
    uint8_t type;
    uint32_t arg;
    size_t len;
    const uint8_t *payload;
    int relative; /* a RESULT's stack pointers are offsets from the copy's rsp */
} said;

/* The message at *pos, *pos moved past it; 0 at the end of the input. */
static int said_next(const uint8_t *data, size_t size, size_t *pos, said *m)
{
    if (*pos + 8 > size)
        return 0;
    const uint8_t *p = data + *pos;
    uint16_t len;
    m->type = p[0];
    memcpy(&m->arg, p + 1, 4);
    memcpy(&len, p + 5, 2);
    m->relative = p[7] & 1;
    m->payload = p + 8;
    m->len = len < size - *pos - 8 ? len : size - *pos - 8;
    *pos += 8 + m->len;
    return 1;
}

/* The bytes the unwinder sends for m: its head and payload, with the
 * stack pointers of a relative RESULT of the right size moved by rsp. */
static size_t said_build(const said *m, uint64_t rsp, uint8_t *out)
{
    rec_unwind_head h = {m->type, m->arg};
    memcpy(out, &h, sizeof h);
    memcpy(out + sizeof h, m->payload, m->len);
    if (m->type == UW_RESULT && m->relative && m->arg <= UW_MAX_FRAMES &&
        m->len == (1 + (size_t)m->arg) * 4 + (size_t)m->arg * 8) {
        uint8_t *sps = out + sizeof h + 4 * (1 + (size_t)m->arg);
        for (uint32_t i = 0; i < m->arg; i++) {
            uint64_t sp;
            memcpy(&sp, sps + 8 * i, 8);
            sp += rsp;
            memcpy(sps + 8 * i, &sp, 8);
        }
    }
    return sizeof h + m->len;
}

enum { SAID_MAX = sizeof(rec_unwind_head) + 0xffff };

/* The forked child: sends the input's messages in order (each as soon as
 * the socket has room) and drains what the recorder sends (its module
 * files' descriptors are closed by the kernel), then shuts its sending side
 * down, so the recorder reads every answer and then the end, and waits to
 * be closed or killed. */
void rec_unwinder_main(int sock, unsigned batch_ms)
{
    (void)batch_ms;
    uint8_t *in = malloc(UW_MAX_MSG + 64), *out = malloc(SAID_MAX);
    if (!in || !out)
        _exit(4);
    size_t pos = 2;
    int shut = 0;
    said m;
    int have = said_next(input, input_size, &pos, &m);
    for (;;) {
        if (!have && !shut) {
            shutdown(sock, SHUT_WR);
            shut = 1;
        }
        struct pollfd p = {sock, POLLIN | (have ? POLLOUT : 0), 0};
        if (poll(&p, 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(5);
        }
        if (p.revents & POLLIN) {
            ssize_t got = recv(sock, in, UW_MAX_MSG + 64, MSG_DONTWAIT);
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
                _exit(0); /* the recorder closed its end */
        } else if (p.revents & (POLLHUP | POLLERR)) {
            _exit(0);
        }
        if (have && (p.revents & POLLOUT)) {
            size_t len = said_build(&m, target_rsp, out);
            if (send(sock, out, len, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
                have = said_next(input, input_size, &pos, &m);
            else if (errno != EAGAIN && errno != EINTR)
                _exit(0);
        }
    }
}

/* ---- what the input says, for the checks ---- */

/* The k-th answer (from 0) of the input: its UW_RESULT and the messages
 * before it, those that add names, modules and locations by kind. */
typedef struct answer {
    said result;
    uint32_t nnames, nmodules, nlocations;
    said *names, *modules, *locations; /* in the order sent: ids when accepted */
    int only_known_types;                  /* nothing but NAME/MODULE/LOCATION/LINES first */
} answer;

static void answer_free(answer *a)
{
    free(a->names);
    free(a->modules);
    free(a->locations);
}

static void append(said **v, uint32_t *n, const said *m)
{
    said *more = realloc(*v, (*n + 1) * sizeof *more);
    check(more != NULL, "memory for the checks");
    *v = more;
    (*v)[(*n)++] = *m;
}

/* 0 when the input holds fewer than k + 1 answers. */
static int find_answer(size_t k, answer *a)
{
    memset(a, 0, sizeof *a);
    a->only_known_types = 1;
    size_t pos = 2, results = 0;
    said m;
    while (said_next(input, input_size, &pos, &m)) {
        if (m.type == UW_RESULT) {
            if (results++ == k) {
                a->result = m;
                return 1;
            }
        } else if (m.type == UW_NAME)
            append(&a->names, &a->nnames, &m);
        else if (m.type == UW_MODULE)
            append(&a->modules, &a->nmodules, &m);
        else if (m.type == UW_LOCATION)
            append(&a->locations, &a->nlocations, &m);
        else if (m.type != UW_LINES)
            a->only_known_types = 0;
    }
    return 0;
}

static size_t count_results(void)
{
    size_t pos = 2, n = 0;
    said m;
    while (said_next(input, input_size, &pos, &m))
        n += m.type == UW_RESULT;
    return n;
}

/* The name a NAME message gives: its payload up to its first NUL. */
static int same_name(const said *name, const char *s)
{
    size_t n = strnlen((const char *)name->payload, name->len);
    return strlen(s) == n && !memcmp(s, name->payload, n);
}

/* A returned location: the one the unwinder announced with that id, its
 * symbol and module announced before it, its lines within bounds. */
static void check_location(const rec_native *n, const answer *a, uint64_t id)
{
    const rec_native_location *l = rec_native_location_of(n, id);
    check(l != NULL && id < a->nlocations, "a frame names an announced location");
    rec_unwind_location said;
    check(a->locations[id].len == sizeof said, "an accepted location had its size");
    memcpy(&said, a->locations[id].payload, sizeof said);
    check(l->address == said.address && l->module == said.module && l->symbol == said.symbol,
          "a location is what the unwinder said");
    check(l->symbol < a->nnames && same_name(&a->names[l->symbol], rec_native_name(n, l->symbol)),
          "a location's symbol was named before it, as it was named");
    if (l->module) {
        const rec_native_module *mod = rec_native_module_of(n, l->module - 1);
        check(mod && l->module <= a->nmodules, "a location's module was sent before it");
        check(mod->start < mod->end && l->address >= mod->start && l->address < mod->end,
              "a location lies in its module");
        check(strlen(mod->path) > 0 && strlen(mod->path) <= UW_MAX_PATH, "a module's path");
        check(strlen(mod->build_id) <= 2 * UW_MAX_BUILD_ID &&
                  strspn(mod->build_id, "0123456789abcdef") == strlen(mod->build_id),
              "a module's build-id is hex");
    }
    const rec_native_line *lines = rec_native_lines_of(n, l);
    check(l->nlines <= UW_MAX_INLINE && (l->nlines == 0) == (lines == NULL), "a location's lines");
    for (uint32_t i = 0; i < l->nlines; i++)
        check(lines[i].function < a->nnames && lines[i].file < a->nnames && lines[i].line > 0 &&
                  lines[i].line <= UW_MAX_LINE,
              "a line names announced names, on a line a file can have");
}

/* The frames of a collected answer are its RESULT's, within the copy. */
static void check_frames(const rec_native *n, const answer *a, const rec_mixed_native *frames,
                         ssize_t got, size_t max, unsigned marks, uint64_t copy_len)
{
    static uint8_t msg[SAID_MAX];
    said_build(&a->result, target_rsp, msg);
    const uint8_t *p = msg + sizeof(rec_unwind_head);
    uint32_t count = a->result.arg;
    check(a->only_known_types, "an answer after a message of an unknown type");
    check(count <= UW_MAX_FRAMES && a->result.len == (1 + count) * 4 + count * 8,
          "an answer's frames fill its RESULT exactly");
    check((size_t)got == (count < max ? count : max), "as many frames as sent, at most max");
    uint32_t flags;
    memcpy(&flags, p, 4);
    unsigned want = ((flags & UW_BEYOND_COPY) ? REC_NATIVE_TRUNCATED : 0) |
                    ((flags & UW_ON_FIBER) ? REC_NATIVE_ON_FIBER : 0);
    check(marks == want, "the marks are the RESULT's flags");
    const uint64_t end = target_rsp + copy_len;
    for (ssize_t i = 0; i < got; i++) {
        size_t inner = count - 1 - (size_t)i;
        uint32_t id;
        uint64_t sp, cfa = end;
        memcpy(&id, p + 4 * (1 + inner), 4);
        memcpy(&sp, p + 4 * (1 + count) + 8 * inner, 8);
        if (inner + 1 < count)
            memcpy(&cfa, p + 4 * (1 + count) + 8 * (inner + 1), 8);
        check(frames[i].frame.stmt == id && zs_frame_is_native(&frames[i].frame) && frames[i].sp == sp && frames[i].cfa == cfa,
              "frames are the RESULT's, outermost first");
        check(target_rsp <= sp && sp <= cfa && cfa <= end, "a frame's extent lies in the copy");
        check_location(n, a, id);
        const rec_native_location *l = rec_native_location_of(n, id);
        check(frames[i].entry == rec_mixed_is_entry(rec_native_name(n, l->symbol)),
              "an activation is one by its symbol's name");
    }
}

/* ---- the recording ---- */

/* Reads the recording back: every record decodes, ids come in order and
 * refer back, locations lie in their modules, and it holds the samples
 * written. */
static void check_recording(const rec_native *n, uint64_t samples)
{
    zs_error err = {0};
    zs_reader *r = zs_reader_open(recording, &err);
    check(r != NULL, "the recording opens");
    uint32_t pid = (uint32_t)target;
    size_t nsyms = 0, nmods = 0, nlocs = 0, cap = 0, modcap = 0;
    uint64_t *syms = NULL, got_samples = 0, trailer = UINT64_MAX;
    zs_module *mods = NULL;
    zs_record rec;
    int rc;
    while ((rc = zs_reader_next(r, &rec, &err)) > 0) {
        switch (rec.type) {
        case ZS_REC_SYMBOL:
            check(rec.symbol.pid == pid && !strcmp(rec.symbol.name, rec_native_name(n, rec.symbol.id)),
                  "a SYMBOL is the unwinder's name");
            check(!zs_grow(&syms, &cap, nsyms + 1, sizeof *syms, 64), "memory for the checks");
            syms[nsyms++] = rec.symbol.id;
            break;
        case ZS_REC_MODULE:
            check(rec.module.m.id == nmods, "MODULE ids in order");
            check(!zs_grow(&mods, &modcap, nmods + 1, sizeof *mods, 16), "memory for the checks");
            mods[nmods++] = rec.module.m;
            break;
        case ZS_REC_LOCATION: {
            const zs_native_location *l = &rec.location.l;
            int named = 0;
            for (size_t i = 0; i < nsyms && !named; i++)
                named = syms[i] == l->symbol;
            check(l->id == nlocs++ && named, "a LOCATION's symbol is written before it");
            check(l->module <= nmods, "a LOCATION's module is written before it");
            if (l->module)
                check(l->address < mods[l->module - 1].end - mods[l->module - 1].start,
                      "a LOCATION lies inside its module");
            break;
        }
        case ZS_REC_LINES:
            check(rec.lines.l->location < nlocs, "LINES of a written location");
            break;
        case ZS_REC_STACK:
            for (size_t i = 0; i < rec.stack.nframes; i++)
                check(zs_frame_is_native(&rec.stack.frames[i]) &&
                          rec.stack.frames[i].stmt < nlocs,
                      "a stack's native frames name written locations");
            break;
        case ZS_REC_SAMPLE:
            got_samples++;
            break;
        case ZS_REC_TRAILER:
            trailer = rec.trailer.samples;
            break;
        default:
            break;
        }
    }
    check(rc == 0, "the recording reads back without an error");
    check(got_samples == samples && trailer == samples, "the recording holds the samples written");
    free(syms);
    free(mods);
    zs_reader_close(r);
}

/* The collected frames as a sample: each location written once. */
static void write_sample(rec_output *o, const rec_native *n, const rec_mixed_native *frames,
                         ssize_t got, uint64_t t_us)
{
    zs_frame stack[REC_NATIVE_MAX_FRAMES];
    zs_error err = {0};
    for (ssize_t i = 0; i < got; i++) {
        uint64_t id = frames[i].frame.stmt;
        rec_out_location l;
        zs_module module;
        check(rec_output_native_known(o, target, id, &id) ||
                  (rec_native_describe(n, id, &l, &module) &&
                   rec_output_native(o, target, &l, &id, &err) == 0),
              "a returned location is written");
        stack[i] = zs_native_frame(id);
    }
    check(rec_output_sample(o, target, t_us, stack, (size_t)got, 0, 0, NULL, &err) == 0,
          "a sample is written");
}

/* A capture of the stopped target, as the ptrace sampler takes one: its
 * registers and its stack, sized by what n's answers said so far. */
static void capture(const rec_native *n, rec_raw_native *c)
{
    static uint8_t room[REC_NATIVE_STACK_MAX];
    rec_stack_plan plan;
    rec_native_stack_plan(n, &plan);
    c->stack = room;
    c->taken = rec_ptrace_regs(target, &c->regs) == 0;
    check(c->taken, "a capture of the stopped target");
    struct iovec local = {room, rec_stack_copy_size(&plan, c->regs.rsp, 0)};
    struct iovec remote = {(void *)(uintptr_t)c->regs.rsp, local.iov_len};
    ssize_t got = process_vm_readv(target, &local, 1, &remote, 1, 0);
    c->stack_len = got > 0 ? (size_t)got : 0;
}

/* ---- one input ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    set_up();
    input = data;
    input_size = size;
    const char *expect = getenv("ZS_FUZZ_NATIVE_EXPECT");
    size_t per_round = 1 + (data[0] & 3), rounds = 1 + ((data[0] >> 2) & 7);
    size_t max = data[1] ? data[1] : REC_NATIVE_MAX_FRAMES;

    zs_error err = {0};
    rec_native *n = rec_native_new(target, 100, &err);
    if (!n) {
        check(err.detail[0] != '\0', "a failed start says why");
        return 0;
    }
    rec_output_config cfg = {.path = recording, .rate_hz = 100, .uid = (uid_t)-1, .gid = (gid_t)-1};
    unlink(recording);
    rec_output *o = rec_output_open(&cfg, rec_now_ns(), target, &err);
    check(o && rec_output_add_process(o, &target_info, &err) == 0, "the recording opens for writing");

    rec_mixed_native frames[REC_NATIVE_MAX_FRAMES];
    size_t collected = 0, refused_at = SIZE_MAX;
    uint64_t samples = 0;
    for (size_t r = 0; r < rounds && refused_at == SIZE_MAX; r++) {
        size_t handed = 0;
        uint64_t lens[4]; /* each capture's copy: sizes change as the stack's base is learned */
        check(per_round <= sizeof lens / sizeof lens[0], "a round fits the copies kept");
        for (size_t i = 0; i < per_round; i++) {
            rec_raw_native c;
            capture(n, &c);
            lens[i] = c.stack_len;
            int rc = rec_native_submit(n, &c);
            check(rc == 0 || (rc == -1 && rec_native_broken(n)), "a refused capture says why");
            if (rc)
                break;
            handed++;
        }
        for (size_t i = 0; i < handed; i++) {
            unsigned marks = ~0u;
            ssize_t got = rec_native_collect(n, frames, max, &marks, REC_NATIVE_WAIT);
            answer a;
            int exists = find_answer(collected, &a);
            if (got < 0) {
                check(got == -1 && rec_native_broken(n) != NULL, "a refused answer says why");
                rec_raw_native again;
                capture(n, &again);
                check(rec_native_submit(n, &again) == -1 && rec_native_collect(n, frames, max, &marks, REC_NATIVE_WAIT) == -1,
                      "a refused unwinder stays given up");
                refused_at = collected;
                if (expect)
                    fprintf(stderr, "fuzz_native: answer %zu refused: %s\n", collected,
                            rec_native_broken(n));
                answer_free(&a);
                break;
            }
            check(exists, "an answer the unwinder never sent");
            check_frames(n, &a, frames, got, max, marks, lens[i]);
            answer_free(&a);
            write_sample(o, n, frames, got, 1000 * ++samples);
            collected++;
        }
    }
    if (expect) {
        size_t results = count_results();
        if (!strcmp(expect, "accepted"))
            check(collected == (results < rounds * per_round ? results : rounds * per_round),
                  "ZS_FUZZ_NATIVE_EXPECT=accepted: every answer collected");
        else
            check(results > 0 && refused_at == results - 1,
                  "ZS_FUZZ_NATIVE_EXPECT=refused: the last answer, and only it, refused");
    }
    check(rec_output_close(o, 1000 * (samples + 1), &err) == 0, "the recording closes");
    check_recording(n, samples);
    rec_native_free(n);
    unlink(recording);
    return 0;
}
