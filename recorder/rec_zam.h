/* Scripts compiled with -O ZAM: which Funcs run a ZAM body (a ZBody, known
 * by its vtable), and which instruction the innermost of them was running
 * when a sample's registers and stack were copied. ZAM keeps its current
 * instruction (`z`, a pointer into the body's instruction array) in a
 * callee-saved register or a stack slot of ZBody::Exec, never in memory a
 * reader could name; the copy holds it, in a register or where a callee
 * saved it. Runs after the target resumed, on the copy the stop window
 * took for native frames: nothing is read from the target in the window. */
#ifndef REC_ZAM_H
#define REC_ZAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "zs_format.h"
#include "zs_layout.h"

typedef struct rec_zam rec_zam;

/* What one sample's window copied. */
typedef struct rec_zam_copy {
    const struct user_regs_struct *regs;
    const uint8_t *stack; /* from regs->rsp up */
    size_t len;
} rec_zam_copy;

typedef enum rec_zam_result {
    REC_ZAM_NONE,      /* no script frame runs a ZAM body */
    REC_ZAM_FOUND,     /* its frame's stmt now names the instruction */
    REC_ZAM_MISSING,   /* no word of the copy points at one of its instructions */
    REC_ZAM_AMBIGUOUS, /* words point at different ones: counted, never guessed */
} rec_zam_result;

/* NULL when the layout or the executable knows no ZAM (body_vtable 0), or
 * on no memory. */
rec_zam *rec_zam_new(pid_t pid, const zs_layout *l, uint64_t body_vtable);
void rec_zam_free(rec_zam *z);

/* frames (outermost first) with addrs (each script frame's Frame, 8.1+;
 * NULL before): finds the instruction of the innermost frame whose Func
 * runs a ZAM body (BiFs inside it are passed over) and marks that frame's
 * stmt with it (zs_stmt_is_zam). */
rec_zam_result rec_zam_locate(rec_zam *z, zs_frame *frames, const uint64_t *addrs, size_t n,
                              const rec_zam_copy *copy);

#endif
