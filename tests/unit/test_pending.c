/* SPDX-License-Identifier: BSD-3-Clause */
/* The way of a sample from the ring to the file, with a real rec_output
 * and the recording read back by zs_reader: the samples of several targets
 * in take order, a sample that stands for ticks its late stop owed written
 * once per tick at evenly spaced times, the ring read across its wrap; and
 * native locations given per part ids, afresh in each rotated part; the
 * header's sampler and each sample's off-CPU mark. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "session/rec_session_priv.h"
#include "zs_reader.h"

static char tmpdir[] = "/tmp/zs-test-pending-XXXXXX";

/* Where the capture's reads land: zeroes of our own memory, a Func that
 * names nothing (its snapshot is empty, as for an unreadable one). */
static uint8_t zeroes[4096];

static void target_for(rec_target *t, pid_t pid)
{
    memset(t, 0, sizeof *t);
    t->pid = pid;
    snprintf(t->exe, sizeof t->exe, "/usr/bin/zeek");
    snprintf(t->zeek_version, sizeof t->zeek_version, "8.0.1");
    t->layout = *zs_layout_builtin("8.0.1");
}

static rec_output *open_output(const char *name, uint64_t rotate_bytes, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", tmpdir, name);
    rec_output_config c = {.path = path, .rate_hz = 1000, .rotate_bytes = rotate_bytes,
                           .uid = (uid_t)-1, .gid = (gid_t)-1};
    zs_error err = {0};
    rec_output *o = rec_output_open(&c, 0, getpid(), &err);
    if (!o)
        fprintf(stderr, "rec_output_open: %s\n", err.detail);
    return o;
}

/* Puts a one-frame sample at ring position at of sl. */
static void put(slot *sl, unsigned at, tick_span ticks, uint64_t func)
{
    pending_sample *p = &sl->pending[at % REC_PENDING_SAMPLES];
    p->ticks = ticks;
    p->frames = malloc(sizeof *p->frames);
    p->frames[0] = (zs_frame){func, 0};
    p->nscript = 1;
    sl->npending++;
}

typedef struct written {
    uint64_t t_us;
    uint64_t func; /* of the sample's stack's one frame */
} written;

/* The samples of a recording in file order; returns the count. */
static size_t read_samples(const char *path, written *out, size_t max)
{
    zs_error err = {0};
    zs_reader *r = zs_reader_open(path, &err);
    CHECK(r != NULL);
    if (!r)
        return 0;
    uint64_t funcs[16] = {0};
    size_t n = 0;
    zs_record rec;
    while (zs_reader_next(r, &rec, &err) > 0) {
        if (rec.type == ZS_REC_STACK && rec.stack.id < 16 && rec.stack.nframes == 1)
            funcs[rec.stack.id] = rec.stack.frames[0].func;
        if (rec.type == ZS_REC_SAMPLES && n < max && rec.sample.stack_id < 16)
            out[n++] = (written){rec.sample.t_us, funcs[rec.sample.stack_id]};
    }
    zs_reader_close(r);
    return n;
}

static void test_take_order_and_credited_ticks(void)
{
    char path[600];
    rec_output *o = open_output("order.zspy", 0, path, sizeof path);
    CHECK(o != NULL);
    if (!o)
        return;
    rec_options opts = {.quiet = 1};
    session s = {.o = &opts, .out = o};
    slot a = {0}, b = {0};
    slot *slots[] = {&a, &b};
    s.slots = slots;
    s.nslots = s.slots_cap = 2;
    rec_target ta, tb;
    target_for(&ta, getpid());
    target_for(&tb, getppid());
    a.target = ta;
    b.target = tb;
    zs_error err = {0};
    CHECK(rec_output_add_process(o, &a.target, &err) == 0);
    CHECK(rec_output_add_process(o, &b.target, &err) == 0);
    uint64_t fa = (uint64_t)(uintptr_t)zeroes, fb = fa + 64;

    /* a's ring wraps: its samples at the last slot and the first two. */
    a.pending_head = REC_PENDING_SAMPLES - 1;
    put(&a, REC_PENDING_SAMPLES - 1, (tick_span){10000000, 0, 10000000}, fa);
    /* A late stop: the tick of 20 ms and two more owed, the last at 30 ms. */
    put(&a, 0, (tick_span){20000000, 2, 30000000}, fa);
    put(&a, 1, (tick_span){40000000, 0, 40000000}, fa);
    put(&b, 0, (tick_span){15000000, 0, 15000000}, fb);
    put(&b, 1, (tick_span){25000000, 0, 25000000}, fb);

    CHECK(rec_pending_write(&s, REC_NATIVE_WAIT, 0, &err) == 0);
    CHECK(a.npending == 0 && b.npending == 0);
    CHECK(a.pending_head == 2 && b.pending_head == 2);
    CHECK(rec_output_close(o, 50000, &err) == 0);

    /* By each sample's last tick: a@10, b@15, b@25, then a's late stop
     * (its ticks at 20, 25 and 30 ms: the recording's clock never goes
     * back, so the first is written at 25), then a@40. */
    static const uint64_t want_us[] = {10000, 15000, 25000, 25000, 25000, 30000, 40000};
    const int want_a[] = {1, 0, 0, 1, 1, 1, 1};
    written got[16];
    size_t n = read_samples(path, got, 16);
    CHECK(n == 7);
    for (size_t i = 0; i < n && i < 7; i++) {
        CHECK(got[i].t_us == want_us[i]);
        CHECK(got[i].func == (want_a[i] ? fa : fb));
    }
}

/* A native location as the unwinder would describe it. */
static rec_out_location location(uint64_t id, uint64_t address, const zs_module *module)
{
    rec_out_location l = {id, address, {id, id == 7 ? "seven" : "three"}, module, 0, {{{0}}}};
    return l;
}

/* LOCATION records of a part: their ids and addresses, in order. */
static size_t read_locations(const char *path, zs_native_location *out, size_t max)
{
    zs_error err = {0};
    zs_reader *r = zs_reader_open(path, &err);
    CHECK(r != NULL);
    if (!r)
        return 0;
    size_t n = 0;
    zs_record rec;
    while (zs_reader_next(r, &rec, &err) > 0)
        if (rec.type == ZS_REC_LOCATION && n < max)
            out[n++] = rec.location.l;
    zs_reader_close(r);
    return n;
}

static void test_ids_per_part(void)
{
    char path[600];
    rec_output *o = open_output("parts.zspy", 1, path, sizeof path);
    CHECK(o != NULL);
    if (!o)
        return;
    rec_target t;
    target_for(&t, getpid());
    zs_error err = {0};
    CHECK(rec_output_add_process(o, &t, &err) == 0);
    zs_module m = {5, "", "/usr/lib/libfoo.so", 0x7f0000000000, 0x7f0000100000, 0};
    rec_out_location seven = location(7, 0x7f0000000040, &m), three = location(3, 0x400010, NULL);

    uint64_t id;
    CHECK(rec_output_native_known(o, t.pid, 7, &id) == 0);
    CHECK(rec_output_native(o, t.pid, &seven, &id, &err) == 0 && id == 0);
    CHECK(rec_output_native(o, t.pid, &three, &id, &err) == 0 && id == 1);
    CHECK(rec_output_native_known(o, t.pid, 7, &id) == 1 && id == 0);
    CHECK(rec_output_native_known(o, t.pid, 3, &id) == 1 && id == 1);
    char first[600];
    snprintf(first, sizeof first, "%s", rec_output_path(o));

    /* A new part: its ids start again from 0, in the order first used there. */
    CHECK(rec_output_tick(o, 2000000000, 1, 0, &err) == 0);
    CHECK(rec_output_parts(o) == 2);
    CHECK(rec_output_native_known(o, t.pid, 3, &id) == 0);
    CHECK(rec_output_native(o, t.pid, &three, &id, &err) == 0 && id == 0);
    CHECK(rec_output_native(o, t.pid, &seven, &id, &err) == 0 && id == 1);
    char second[600];
    snprintf(second, sizeof second, "%s", rec_output_path(o));
    CHECK(rec_output_close(o, 3000000, &err) == 0);

    zs_native_location l[4];
    CHECK(read_locations(first, l, 4) == 2);
    CHECK(l[0].id == 0 && l[0].module == 1 && l[0].address == 0x40); /* module-relative */
    CHECK(l[1].id == 1 && l[1].module == 0 && l[1].address == 0x400010);
    CHECK(read_locations(second, l, 4) == 2);
    CHECK(l[0].id == 0 && l[0].module == 0 && l[0].address == 0x400010);
    CHECK(l[1].id == 1 && l[1].module == 1 && l[1].address == 0x40);
}

/* The header names the sampler (ptrace unless told), in every part; a
 * sample's off_cpu comes back from the file as written. */
static void test_sampler_and_off_cpu(void)
{
    for (int bpf = 0; bpf <= 1; bpf++) {
        char path[600];
        snprintf(path, sizeof path, "%s/sampler-%d.zspy", tmpdir, bpf);
        rec_output_config c = {.path = path, .rate_hz = 1000, .uid = (uid_t)-1, .gid = (gid_t)-1,
                               .sampler = bpf ? "bpf" : NULL};
        zs_error err = {0};
        rec_output *o = rec_output_open(&c, 0, getpid(), &err);
        CHECK(o != NULL);
        if (!o)
            return;
        zs_frame f = {(uint64_t)(uintptr_t)zeroes, 0};
        static const int off[] = {0, 1, 1, 0};
        for (int i = 0; i < 4; i++)
            CHECK(rec_output_sample(o, getpid(), 1000 * (uint64_t)(i + 1), &f, 1, bpf && off[i], 0,
                                    NULL, &err) == 0);
        CHECK(rec_output_close(o, 5000, &err) == 0);
        zs_reader *r = zs_reader_open(path, &err);
        CHECK(r != NULL);
        zs_record rec;
        int n = 0, header = 0;
        while (r && zs_reader_next(r, &rec, &err) > 0) {
            if (rec.type == ZS_REC_HEADER) {
                const char *v = zs_kv_get(rec.header.items, rec.header.count, "sampler");
                header = v && !strcmp(v, bpf ? "bpf" : "ptrace");
            }
            if (rec.type == ZS_REC_SAMPLE && n < 4) {
                CHECK(rec.sample.off_cpu == (bpf && off[n]));
                n++;
            }
        }
        CHECK(header);
        CHECK(n == 4);
        zs_reader_close(r);
    }
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_take_order_and_credited_ticks();
    test_ids_per_part();
    test_sampler_and_off_cpu();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    CHECK_MAIN_END;
}
