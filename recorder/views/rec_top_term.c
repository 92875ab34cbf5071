/* SPDX-License-Identifier: BSD-3-Clause */
#include "views/rec_top_term.h"

#include <errno.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

static const char ENTER_SCREEN[] = "\033[?1049h\033[?25l"; /* alternate screen, hide cursor */
static const char LEAVE_SCREEN[] = "\033[?25h\033[?1049l";

static void write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        len -= (size_t)w;
    }
}

void rec_term_init(rec_term *t)
{
    *t = (rec_term){.tty_out = isatty(STDOUT_FILENO), .tty_in = isatty(STDIN_FILENO)};
}

void rec_term_begin(rec_term *t)
{
    if (t->tty_in && tcgetattr(STDIN_FILENO, &t->saved) == 0) {
        struct termios raw = t->saved;
        /* Keys one by one, unechoed; VMIN = VTIME = 0 makes read return at
         * once, so stdin's file flags (shared with the shell) stay as they
         * are. ISIG stays: Ctrl-C is a stop signal like any other. Ctrl-Z
         * does not suspend: a recorder stopped between an interrupt and its
         * resume would hold zeek stopped as long. */
        raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        raw.c_cc[VSUSP] = _POSIX_VDISABLE;
        if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0)
            t->raw = 1;
    }
    if (t->tty_out) {
        write_all(STDOUT_FILENO, ENTER_SCREEN, sizeof ENTER_SCREEN - 1);
        t->screen = 1;
    }
}

void rec_term_end(rec_term *t)
{
    if (t->screen)
        write_all(STDOUT_FILENO, LEAVE_SCREEN, sizeof LEAVE_SCREEN - 1);
    t->screen = 0;
    if (t->raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
    t->raw = 0;
}

int rec_term_key(rec_term *t)
{
    unsigned char c;
    if (!t->raw)
        return -1;
    return read(STDIN_FILENO, &c, 1) == 1 ? c : -1;
}

void rec_term_size(const rec_term *t, int *rows, int *cols)
{
    struct winsize ws;
    *rows = *cols = 0;
    if (t->tty_out && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
        *rows = ws.ws_row;
        *cols = ws.ws_col;
    }
}

void rec_term_show(const rec_term *t, const char *text, size_t len)
{
    (void)t;
    struct pollfd p = {.fd = STDOUT_FILENO, .events = POLLOUT};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLOUT))
        write_all(STDOUT_FILENO, text, len);
}
