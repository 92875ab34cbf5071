/* SPDX-License-Identifier: BSD-3-Clause */
/* The terminal of --top: on a terminal, a screen redrawn in place and keys
 * read without Enter; otherwise plain text, one snapshot after another.
 * Whatever it changed is put back by rec_term_end, which the session calls
 * on every way out (a stop signal only sets a flag, so that is every way
 * but SIGKILL). */
#ifndef REC_TOP_TERM_H
#define REC_TOP_TERM_H

#include <stddef.h>
#include <termios.h>

typedef struct rec_term {
    int tty_out;            /* stdout is a terminal: redraw in place */
    int tty_in;             /* stdin is a terminal: keys are read */
    int raw;                /* stdin's settings were changed: saved holds them */
    int screen;             /* in the alternate screen, cursor hidden */
    struct termios saved;
} rec_term;

/* Looks at stdin and stdout; changes nothing yet. */
void rec_term_init(rec_term *t);

/* Keys without Enter or echo, the alternate screen (terminals only). */
void rec_term_begin(rec_term *t);

/* Puts back what rec_term_begin changed; safe to call twice. */
void rec_term_end(rec_term *t);

/* A key pressed since the last call, or -1; never waits. */
int rec_term_key(rec_term *t);

/* Rows and columns of the terminal; 0 each when stdout is not one. */
void rec_term_size(const rec_term *t, int *rows, int *cols);

/* Writes one snapshot (text as made for this terminal) if stdout can take
 * it now; a reader that does not keep up loses snapshots, never holds up
 * the recorder. */
void rec_term_show(const rec_term *t, const char *text, size_t len);

#endif
