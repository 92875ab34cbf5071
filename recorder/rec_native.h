/* Native frames (--native): what zeek's C++ does under and around the
 * scripts. Inside the stop window only the registers and a copy of the top
 * of the main thread's stack are taken; after the target runs again the copy
 * is unwound with elfutils' libdwfl (.eh_frame: stripped builds keep it) and
 * each PC named from the modules' symbol tables (.dynsym suffices: Zeek
 * exports its symbols), all on the sensor, so the converter needs no zeek
 * binary. One Dwfl per process, kept across samples. */
#ifndef REC_NATIVE_H
#define REC_NATIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zs_error.h"

enum {
    REC_NATIVE_STACK_BYTES = 16 << 10, /* copied from the stack pointer up */
    REC_NATIVE_MAX_FRAMES = 256,
};

typedef struct rec_native rec_native;

rec_native *rec_native_new(pid_t pid, zs_error *err);
void rec_native_free(rec_native *n);

/* In the stop window: the registers and the stack copy. 0, or -1 when the
 * target could not be read (the sample then has no native frames). */
int rec_native_capture(rec_native *n);

/* After the target resumed: the PCs of the captured stack, OUTERMOST first.
 * *truncated is set when the unwind ran off the copy before the outermost
 * frame. Returns the count (0 when the unwind failed). */
size_t rec_native_unwind(rec_native *n, uint64_t *pcs, size_t max, int *truncated);

/* The symbol a PC lies in: a stable id for this process, its (mangled) name,
 * "[module+0xOFFSET]" when no symbol covers it, in n's storage, and whether
 * it is one of Zeek's interpreter entries (rec_mixed_is_entry). All worked
 * out once per PC: a sample's frames cost a hash lookup each. -1 on
 * out-of-memory. */
int64_t rec_native_symbol(rec_native *n, uint64_t pc, const char **name, int *entry);

/* Unwinds cut short by the copy's end, for the end report. */
uint64_t rec_native_truncated(const rec_native *n);

#endif
