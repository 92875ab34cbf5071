/* SPDX-License-Identifier: BSD-3-Clause */
/* rec_bpf's parts that need no kernel: the refusal of kernels that freeze
 * on bpf_probe_read_user, the parameters taken from each built-in layout,
 * reading a record's CallInfo and Frame bytes, the counters' names. (The
 * kernel side itself: e2e.bpf.probe.) Without ZS_BPF, nothing to test. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#ifdef ZS_HAVE_BPF
#include "bpf/rec_bpf.h"

static void kernels(void)
{
    const char *freezes[] = {"5.19.0", "6.0.19", "6.1.0", "6.1.35-1-amd64", "6.2.16", "6.3.9"};
    const char *old[] = {"5.7.19", "5.4.0-150-generic", "4.19.0"};
    const char *fine[] = {"5.8.0", "5.10.0-30-cloud-amd64", "5.15.0-91-generic", "5.18.19",
                          "6.1.36", "6.3.10", "6.4.0", "6.18.44-fc-v1272", "", "garbage"};
    for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
        zs_error err = {0};
        CHECK(rec_bpf_kernel_check(old[i], "#1 SMP", NULL, &err) == -1);
        CHECK(err.code == ZS_E_NO_BPF && strstr(err.detail, "older than 5.8"));
    }
    for (size_t i = 0; i < sizeof freezes / sizeof *freezes; i++) {
        zs_error err = {0};
        CHECK(rec_bpf_kernel_check(freezes[i], "#1 SMP", NULL, &err) == -1);
        CHECK(err.code == ZS_E_NO_BPF && strstr(err.detail, freezes[i]));
    }
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++)
        CHECK(rec_bpf_kernel_check(fine[i], "#1 SMP", NULL, NULL) == 0);
    /* Debian 12 and Ubuntu: the release names the series, the version or
     * the signature the upstream release it is built from. */
    const char *deb = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1 (2025-11-09)";
    CHECK(rec_bpf_kernel_check("6.1.0-41-amd64", deb, NULL, NULL) == 0);
    CHECK(rec_bpf_kernel_check("6.1.0-9-amd64", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.27-1", NULL, NULL) == -1);
    CHECK(rec_bpf_kernel_check("6.2.0-39-generic", "#40~22.04.1-Ubuntu SMP",
                               "Ubuntu 6.2.0-39.40~22.04.1-generic 6.2.16", NULL) == -1);
    CHECK(rec_bpf_kernel_check("6.5.0-14-generic", "#14~22.04.1-Ubuntu SMP",
                               "Ubuntu 6.5.0-14.14~22.04.1-generic 6.5.3", NULL) == 0);
}

static void params(void)
{
    const char *versions[] = {"3.0.1", "8.0.10", "8.2.2"};
    for (size_t i = 0; i < 3; i++) {
        rec_target t;
        memset(&t, 0, sizeof t);
        const zs_layout *l = zs_layout_builtin(versions[i]);
        CHECK(l != NULL);
        if (!l)
            continue;
        t.layout = *l;
        t.pid = 1234;
        t.call_stack = 0x1000;
        t.frame_stack = l->model == ZS_MODEL_FRAME_STACK ? 0x2000 : 0;
        rec_bpf_params p;
        CHECK(rec_bpf_params_of(&t, 1024, &p, NULL) == 0);
        CHECK(p.pid == 1234 && p.model == (uint32_t)l->model && p.call_stack == 0x1000);
        CHECK(p.frame_stack == t.frame_stack);
        CHECK(p.callinfo_size == l->callinfo_size && p.frame_next_stmt == l->frame_next_stmt);
        CHECK(p.max_frames == REC_BPF_MAX_FRAMES);
        CHECK(p.callinfo_size <= REC_BPF_MAX_CALLINFO);
        if (l->model == ZS_MODEL_CALLINFO_FRAME) {
            int span = l->frame_next_stmt - l->frame_function + 8;
            CHECK(p.callinfo_frame == l->callinfo_frame && span > 0 && span <= REC_BPF_MAX_SPAN);
        }
    }
}

static void records(void)
{
    /* Two CallInfos of 16 bytes, then two Frames' 24 bytes. */
    struct {
        rec_bpf_event ev;
        uint8_t data[2 * 16 + 2 * 24];
    } r;
    memset(&r, 0, sizeof r);
    r.ev.n = 2;
    r.ev.callinfo_size = 16;
    r.ev.frame_span = 24;
    r.ev.frame_lo = 64;
    for (size_t i = 0; i < sizeof r.data; i++)
        r.data[i] = (uint8_t)i;
    CHECK(rec_bpf_event_callinfo(&r.ev, 0) == r.data);
    CHECK(rec_bpf_event_callinfo(&r.ev, 1)[0] == 16);
    CHECK(rec_bpf_event_frame(&r.ev, 0)[0] == 32);
    CHECK(rec_bpf_event_frame(&r.ev, 1)[23] == 32 + 24 + 23);
    r.ev.frame_span = 0;
    CHECK(rec_bpf_event_frame(&r.ev, 0) == NULL);
}

static void names(void)
{
    for (unsigned k = 0; k < REC_BPF_C__COUNT; k++)
        CHECK(strcmp(rec_bpf_counter_name(k), "?") != 0);
    CHECK(strcmp(rec_bpf_counter_name(REC_BPF_C__COUNT), "?") == 0);
}

int main(void)
{
    kernels();
    params();
    records();
    names();
    CHECK_MAIN_END;
}

#else

int main(void)
{
    printf("built without ZS_BPF: nothing to test\n");
    CHECK_MAIN_END;
}

#endif
