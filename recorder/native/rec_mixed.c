/* SPDX-License-Identifier: BSD-3-Clause */
#include "native/rec_mixed.h"

#include <string.h>

/* Where Zeek pushes call_stack, one activation per script frame (src/Func.cc):
 * ScriptFunc::Invoke and BuiltinFunc::Invoke from 4.0 on, BroFunc::Call and
 * BuiltinFunc::Call in 3.x. Mangled prefixes: const member functions. */
static const char *const INTERPRETER_ENTRIES[] = {
    "_ZNK4zeek6detail10ScriptFunc6Invoke",
    "_ZNK4zeek6detail11BuiltinFunc6Invoke",
    "_ZNK7BroFunc4Call",
    "_ZNK11BuiltinFunc4Call",
};

int rec_mixed_is_entry(const char *name)
{
    for (size_t i = 0; i < sizeof INTERPRETER_ENTRIES / sizeof INTERPRETER_ENTRIES[0]; i++)
        if (!strncmp(name, INTERPRETER_ENTRIES[i], strlen(INTERPRETER_ENTRIES[i])))
            return 1;
    return 0;
}

/* Each activation replaced by its script frame, every other native frame
 * where it was: out gets nnative frames. */
static size_t interleave(const zs_frame *script, const rec_mixed_native *native, size_t nnative,
                         zs_frame *out)
{
    size_t j = 0;
    for (size_t i = 0; i < nnative; i++)
        out[i] = native[i].entry ? script[j++] : native[i].frame;
    return nnative;
}

/* The native frames outside the interpreter (before its first activation),
 * the script frames in its place, then what runs under the innermost one:
 * a BiF's C++ body and its callees. At most max frames. */
static size_t replace_interpreter(const zs_frame *script, size_t nscript,
                                  const rec_mixed_native *native, size_t nnative, size_t first,
                                  size_t last, zs_frame *out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < first && k < max; i++)
        out[k++] = native[i].frame;
    for (size_t i = 0; i < nscript && k < max; i++)
        out[k++] = script[i];
    for (size_t i = last + 1; i < nnative && k < max; i++)
        out[k++] = native[i].frame;
    return k;
}

/* By address: at[j] gets the native frame holding script frame j's Frame.
 * Script frames outermost first have their Frames ever deeper in the stack,
 * so each lies in a frame inner to the previous one's. Cut short, the
 * outermost Frames may lie above the copy (above every unwound frame):
 * *above counts them. -1 when a Frame is in no frame, or shares one. */
static int place_by_address(const uint64_t *addrs, size_t nscript, const rec_mixed_native *native,
                            size_t nnative, int cut_short, size_t *at, size_t *above)
{
    size_t j = 0, i = 0;
    uint64_t top = nnative ? native[0].cfa : 0;
    while (cut_short && j < nscript && addrs[j] >= top)
        j++;
    *above = j;
    for (; j < nscript; j++, i++) {
        while (i < nnative && !(addrs[j] >= native[i].sp && addrs[j] < native[i].cfa))
            i++;
        if (i == nnative)
            return -1;
        at[j] = i;
    }
    return 0;
}

/* The stack placed by address: the marker when cut short, the script frames
 * above the copy, then the native frames with the placed script frames in
 * their places; too deep for max, without the plumbing between the first
 * and last placed frame. */
static size_t emit_placed(const zs_frame *script, size_t nscript, const rec_mixed_native *native,
                          size_t nnative, const size_t *at, size_t above, zs_frame *out,
                          size_t k, size_t max)
{
    for (size_t j = 0; j < above && k < max; j++)
        out[k++] = script[j];
    size_t placed = nscript - above;
    int whole = k + nnative <= max;
    size_t first = placed ? at[above] : nnative, last = placed ? at[nscript - 1] : nnative;
    for (size_t i = 0, j = above; i < nnative && k < max; i++) {
        if (j < nscript && at[j] == i)
            out[k++] = script[j++];
        else if (whole || i < first || i > last)
            out[k++] = native[i].frame;
    }
    return k;
}

/* Never a wrong interleaving: the script frames and the native leaf. */
static size_t fallback(const zs_frame *script, size_t nscript, const rec_mixed_native *native,
                       size_t nnative, zs_frame *out, size_t k, size_t max)
{
    for (size_t i = 0; i < nscript && k < max; i++)
        out[k++] = script[i];
    if (nnative && k < max)
        out[k++] = native[nnative - 1].frame;
    return k;
}

size_t rec_mixed_stack(const zs_frame *script, const uint64_t *script_addrs, size_t nscript,
                       int script_cut, const rec_mixed_native *native, size_t nnative,
                       rec_mixed_cut cut, zs_frame *out, size_t max, int *mismatch)
{
    size_t k = 0, entries = 0, first = nnative, last = nnative;
    *mismatch = 0;
    for (size_t i = 0; i < nnative; i++) {
        if (!native[i].entry)
            continue;
        if (!entries++)
            first = i;
        last = i;
    }
    if (cut.fiber >= 0) {
        for (size_t i = 0; i < nscript && k < max; i++)
            out[k++] = script[i];
        if (k < max)
            out[k++] = zs_native_frame((uint64_t)cut.fiber);
        for (size_t i = 0; i < nnative && k < max; i++)
            out[k++] = native[i].frame;
        return k;
    }
    /* A stack deeper than the copy starts at the marker, not at _start. */
    int cut_short = cut.truncated >= 0;
    if (cut_short && max)
        out[k++] = zs_native_frame((uint64_t)cut.truncated);
    if (nscript == 0) {
        /* No script running: where the native time goes, all of it. */
        for (size_t i = 0; i < nnative && k < max; i++)
            out[k++] = native[i].frame;
        return k;
    }
    /* By address when every Frame lies in a native frame; else by count,
     * as for the older models: Frames may live elsewhere than the thread's
     * stack (measured: ASan's fake stacks with detect_stack_use_after_return
     * put the 8.2 double's Frames on the heap: 79 % of samples unplaced). */
    size_t at[ZS_MAX_FRAMES], above;
    if (script_addrs && nscript <= ZS_MAX_FRAMES && !script_cut &&
        !place_by_address(script_addrs, nscript, native, nnative, cut_short, at, &above))
        return emit_placed(script, nscript, native, nnative, at, above, out, k, max);
    /* Cut short, the copy holds the activations of the innermost script
     * frames only (none: all of it runs under the innermost one). */
    if (cut_short && entries < nscript && !script_cut) {
        for (size_t i = 0; i < nscript && k < max; i++)
            out[k++] = script[i];
        for (size_t i = entries ? last + 1 : 0; i < nnative && k < max; i++)
            out[k++] = native[i].frame;
        return k;
    }
    if (entries != nscript || script_cut) {
        *mismatch = nnative > 0;
        return fallback(script, nscript, native, nnative, out, k, max);
    }
    /* The whole stack in order, the interpreter's plumbing between two
     * script frames included (the converter hides it unless asked); too deep
     * for max, the plumbing goes first, so that no script frame is lost. */
    if (k + nnative <= max)
        return k + interleave(script, native, nnative, out + k);
    return k + replace_interpreter(script, nscript, native, nnative, first, last, out + k, max - k);
}
