/* SPDX-License-Identifier: BSD-3-Clause */
/* rec_mixed_stack: script frames in the place of their interpreter
 * activations (counted, or by their Frames' addresses), the interpreter's plumbing between two of them kept in place;
 * a mismatch keeps the script frames and the native leaf; a
 * native stack cut short starts at the [truncated] marker and aligns the
 * script frames from the innermost. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "native/rec_mixed.h"

#define S(f) ((zs_frame){(f), 7})   /* a script frame: func f */
#define N(id) ((rec_mixed_native){zs_native_frame(id), 0})
#define E(id) ((rec_mixed_native){zs_native_frame(id), 1}) /* an interpreter activation */
/* A native frame at [sp, cfa), an activation or not: by address, names
 * do not matter. */
#define A(id, sp, cfa) ((rec_mixed_native){zs_native_frame(id), 0, (sp), (cfa)})
#define AE(id, sp, cfa) ((rec_mixed_native){zs_native_frame(id), 1, (sp), (cfa)}) /* an activation */
enum { MARK = 99, FIBER = 98 };
static const rec_mixed_cut WHOLE = {-1, -1}, CUT = {MARK, -1}, ON_FIBER = {-1, FIBER};

/* out as a string: script frames "s<func>", native ones "n<id>". */
static const char *show(const zs_frame *out, size_t n)
{
    static char buf[512];
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && k + 8 < sizeof buf; i++) {
        buf[k++] = out[i].func ? 's' : 'n';
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%llu ",
                              (unsigned long long)(out[i].func ? out[i].func : out[i].stmt));
    }
    return buf;
}

/* 8.1+: each script frame replaces the native frame holding its Frame. */
static void by_address(void)
{
    zs_frame script[] = {S(1), S(2)}, three[] = {S(1), S(2), S(3)}, out[32];
    int mismatch;
    /* _start main [Invoke plumbing Invoke] bif callee, each 0x1000 deep */
    rec_mixed_native full[] = {A(10, 0x9000, 0xa000), A(11, 0x8000, 0x9000),
                               A(20, 0x7000, 0x8000), A(21, 0x6000, 0x7000),
                               A(22, 0x5000, 0x6000), A(30, 0x4000, 0x5000),
                               A(31, 0x3000, 0x4000)};
    uint64_t in_invokes[] = {0x7100, 0x5100};
    size_t n = rec_mixed_stack(script, in_invokes, 2, 0, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 n11 s1 n21 s2 n30 n31 ") && !mismatch);

    /* A frame's lowest byte is its; its CFA is the caller's. */
    uint64_t edges[] = {0x7000, 0x5fff};
    n = rec_mixed_stack(script, edges, 2, 0, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 n11 s1 n21 s2 n30 n31 ") && !mismatch);

    /* Where the Frame is, whatever the frame is called (an Invoke inlined
     * into its caller, a helper that holds the Frame). */
    uint64_t elsewhere[] = {0x7100, 0x6100};
    n = rec_mixed_stack(script, elsewhere, 2, 0, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 n11 s1 s2 n22 n30 n31 ") && !mismatch);

    /* A Frame in no native frame: script frames and the native leaf. */
    uint64_t nowhere[] = {0x7100, 0x1000};
    n = rec_mixed_stack(script, nowhere, 2, 0, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "s1 s2 n31 ") && mismatch);

    /* Frames not on this stack at all (ASan's fake stacks put them on the
     * heap): placed by counting the activations, as for the older models. */
    rec_mixed_native named[] = {A(10, 0x9000, 0xa000), A(11, 0x8000, 0x9000),
                                AE(20, 0x7000, 0x8000), A(21, 0x6000, 0x7000),
                                AE(22, 0x5000, 0x6000), A(30, 0x4000, 0x5000),
                                A(31, 0x3000, 0x4000)};
    uint64_t on_heap[] = {0x7f0000001000, 0x7f0000002000};
    n = rec_mixed_stack(script, on_heap, 2, 0, named, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 n11 s1 n21 s2 n30 n31 ") && !mismatch);

    /* Two Frames in one native frame, or in the wrong order: a mismatch. */
    uint64_t shared[] = {0x7100, 0x7050}, reversed[] = {0x5100, 0x7100};
    n = rec_mixed_stack(script, shared, 2, 0, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "s1 s2 n31 ") && mismatch);
    n = rec_mixed_stack(script, reversed, 2, 0, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "s1 s2 n31 ") && mismatch);

    /* A script stack deeper than the sampler keeps: a mismatch, as counted. */
    n = rec_mixed_stack(script, in_invokes, 2, 1, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(mismatch);

    /* Cut short: the Frames above the copy go first, after the marker. */
    rec_mixed_native cut[] = {A(21, 0x6000, 0x7000), A(22, 0x5000, 0x6000),
                              A(30, 0x4000, 0x5000)};
    uint64_t one_above[] = {0x9000, 0x5100};
    n = rec_mixed_stack(script, one_above, 2, 0, cut, 3, CUT, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n99 s1 n21 s2 n30 ") && !mismatch);
    /* ...but a whole stack has nothing above it. */
    n = rec_mixed_stack(script, one_above, 2, 0, cut, 3, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "s1 s2 n30 ") && mismatch);

    /* Not enough room: the plumbing between script frames goes first. */
    uint64_t three_in[] = {0x7100, 0x6100, 0x5100};
    n = rec_mixed_stack(three, three_in, 3, 0, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 n11 s1 s2 s3 n30 n31 ") && !mismatch);
    uint64_t apart[] = {0x8100, 0x6100, 0x4100};
    n = rec_mixed_stack(three, apart, 3, 0, full, 7, WHOLE, out, 5, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 s1 s2 s3 n31 ") && !mismatch);
}

int main(void)
{
    zs_frame script[] = {S(1), S(2)}, out[32];
    int mismatch;
    /* _start main [E plumbing E] bif callee */
    rec_mixed_native full[] = {N(10), N(11), E(20), N(21), E(22), N(30), N(31)};
    size_t n = rec_mixed_stack(script, NULL, 2, 0, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 n11 s1 n21 s2 n30 n31 ") && !mismatch);

    /* Three script frames, plumbing between each pair (none between the
     * last two): every frame where it ran. */
    zs_frame three[] = {S(1), S(2), S(3)};
    rec_mixed_native plumbing[] = {N(10), E(20), N(21), N(23), E(22), E(24), N(30)};
    n = rec_mixed_stack(three, NULL, 3, 0, plumbing, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 s1 n21 n23 s2 s3 n30 ") && !mismatch);

    /* Not enough room for the plumbing: it goes, the script frames stay. */
    n = rec_mixed_stack(three, NULL, 3, 0, plumbing, 7, WHOLE, out, 6, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 s1 s2 s3 n30 ") && !mismatch);

    /* One activation missing: script frames and the native leaf, counted. */
    rec_mixed_native one[] = {N(10), E(20), N(30)};
    n = rec_mixed_stack(script, NULL, 2, 0, one, 3, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "s1 s2 n30 ") && mismatch);

    /* No script running: the native stack whole. */
    n = rec_mixed_stack(script, NULL, 0, 0, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 n11 n20 n21 n22 n30 n31 ") && !mismatch);

    /* Cut short with both activations in the copy: the marker replaces
     * what was above it. */
    rec_mixed_native cut_both[] = {N(11), E(20), N(21), E(22), N(30)};
    n = rec_mixed_stack(script, NULL, 2, 0, cut_both, 5, CUT, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n99 n11 s1 n21 s2 n30 ") && !mismatch);

    /* Cut short with only the innermost activation in the copy. */
    rec_mixed_native cut_one[] = {N(21), E(22), N(30)};
    n = rec_mixed_stack(script, NULL, 2, 0, cut_one, 3, CUT, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n99 s1 s2 n30 ") && !mismatch);

    /* Cut short inside the innermost script frame's native work. */
    rec_mixed_native cut_none[] = {N(30), N(31)};
    n = rec_mixed_stack(script, NULL, 2, 0, cut_none, 2, CUT, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n99 s1 s2 n30 n31 ") && !mismatch);

    /* On a fiber: the script frames, the marker, the fiber's frames. */
    rec_mixed_native fiber[] = {N(40), N(41)};
    n = rec_mixed_stack(script, NULL, 2, 0, fiber, 2, ON_FIBER, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "s1 s2 n98 n40 n41 ") && !mismatch);
    n = rec_mixed_stack(script, NULL, 0, 0, fiber, 2, ON_FIBER, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n98 n40 n41 ") && !mismatch);

    /* Room for three frames: the plumbing dropped, then the outermost three. */
    n = rec_mixed_stack(script, NULL, 2, 0, full, 7, WHOLE, out, 3, &mismatch);
    CHECK(n == 3 && !strcmp(show(out, n), "n10 n11 s1 "));

    by_address();

    CHECK(rec_mixed_is_entry("_ZNK4zeek6detail10ScriptFunc6InvokeEPNS0_5FrameE"));
    CHECK(!rec_mixed_is_entry("_ZN4zeek6detail9hash_blockEl"));
    CHECK_MAIN_END;
}
