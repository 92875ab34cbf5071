/* SPDX-License-Identifier: BSD-3-Clause */
/* One wait for whichever comes first: a SIGCHLD (blocked, as
 * rec_signals.h keeps it), an edge of a file descriptor (the BPF ring's
 * notices), the deadline, or a stop signal. */
#ifndef REC_WAITER_H
#define REC_WAITER_H

#include <stdint.h>

typedef struct rec_waiter {
    int epoll_fd;
    int sigchld_fd;
    int fd; /* the one watched for edges */
} rec_waiter;

enum { REC_WAIT_DEADLINE = 0, REC_WAIT_SIGCHLD = 1, REC_WAIT_EDGE = 2 };

/* Watches fd (EPOLLIN, edge-triggered) and SIGCHLD. -1 with errno when
 * the kernel refuses. */
int rec_waiter_open(rec_waiter *w, int fd);

/* Until deadline_ns (rec_now_ns's clock): REC_WAIT_SIGCHLD (the signal
 * taken) when one came, or-ed with REC_WAIT_EDGE when fd woke it;
 * REC_WAIT_DEADLINE (0) when neither did; -1 when a signal's handler
 * interrupted it. */
int rec_waiter_wait(rec_waiter *w, uint64_t deadline_ns);

void rec_waiter_close(rec_waiter *w);

#endif
