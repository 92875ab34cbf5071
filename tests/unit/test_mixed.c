/* rec_mixed_stack: script frames in the place of their interpreter
 * activations, the interpreter's plumbing between two of them kept in place;
 * a mismatch keeps the script frames and the native leaf; a
 * native stack cut short starts at the [truncated] marker and aligns the
 * script frames from the innermost. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "rec_mixed.h"

#define S(f) ((zs_frame){(f), 7})   /* a script frame: func f */
#define N(id) ((rec_mixed_native){(id), 0})
#define E(id) ((rec_mixed_native){(id), 1}) /* an interpreter activation */
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

int main(void)
{
    zs_frame script[] = {S(1), S(2)}, out[32];
    int mismatch;
    /* _start main [E plumbing E] bif callee */
    rec_mixed_native full[] = {N(10), N(11), E(20), N(21), E(22), N(30), N(31)};
    size_t n = rec_mixed_stack(script, 2, 0, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 n11 s1 n21 s2 n30 n31 ") && !mismatch);

    /* Three script frames, plumbing between each pair (none between the
     * last two): every frame where it ran. */
    zs_frame three[] = {S(1), S(2), S(3)};
    rec_mixed_native plumbing[] = {N(10), E(20), N(21), N(23), E(22), E(24), N(30)};
    n = rec_mixed_stack(three, 3, 0, plumbing, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 s1 n21 n23 s2 s3 n30 ") && !mismatch);

    /* Not enough room for the plumbing: it goes, the script frames stay. */
    n = rec_mixed_stack(three, 3, 0, plumbing, 7, WHOLE, out, 6, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 s1 s2 s3 n30 ") && !mismatch);

    /* One activation missing: script frames and the native leaf, counted. */
    rec_mixed_native one[] = {N(10), E(20), N(30)};
    n = rec_mixed_stack(script, 2, 0, one, 3, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "s1 s2 n30 ") && mismatch);

    /* No script running: the native stack whole. */
    n = rec_mixed_stack(script, 0, 0, full, 7, WHOLE, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n10 n11 n20 n21 n22 n30 n31 ") && !mismatch);

    /* Cut short with both activations in the copy: the marker replaces
     * what was above it. */
    rec_mixed_native cut_both[] = {N(11), E(20), N(21), E(22), N(30)};
    n = rec_mixed_stack(script, 2, 0, cut_both, 5, CUT, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n99 n11 s1 n21 s2 n30 ") && !mismatch);

    /* Cut short with only the innermost activation in the copy. */
    rec_mixed_native cut_one[] = {N(21), E(22), N(30)};
    n = rec_mixed_stack(script, 2, 0, cut_one, 3, CUT, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n99 s1 s2 n30 ") && !mismatch);

    /* Cut short inside the innermost script frame's native work. */
    rec_mixed_native cut_none[] = {N(30), N(31)};
    n = rec_mixed_stack(script, 2, 0, cut_none, 2, CUT, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n99 s1 s2 n30 n31 ") && !mismatch);

    /* On a fiber: the script frames, the marker, the fiber's frames. */
    rec_mixed_native fiber[] = {N(40), N(41)};
    n = rec_mixed_stack(script, 2, 0, fiber, 2, ON_FIBER, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "s1 s2 n98 n40 n41 ") && !mismatch);
    n = rec_mixed_stack(script, 0, 0, fiber, 2, ON_FIBER, out, 32, &mismatch);
    CHECK(!strcmp(show(out, n), "n98 n40 n41 ") && !mismatch);

    /* Room for three frames: the plumbing dropped, then the outermost three. */
    n = rec_mixed_stack(script, 2, 0, full, 7, WHOLE, out, 3, &mismatch);
    CHECK(n == 3 && !strcmp(show(out, n), "n10 n11 s1 "));

    CHECK(rec_mixed_is_entry("_ZNK4zeek6detail10ScriptFunc6InvokeEPNS0_5FrameE"));
    CHECK(!rec_mixed_is_entry("_ZN4zeek6detail9hash_blockEl"));
    CHECK_MAIN_END;
}
