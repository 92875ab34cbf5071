/* SPDX-License-Identifier: BSD-3-Clause */
#include "base/rec_waiter.h"

#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "base/rec_clock.h"

int rec_waiter_open(rec_waiter *w, int fd)
{
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    w->fd = fd;
    w->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    w->sigchld_fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    struct epoll_event edge = {.events = EPOLLIN | EPOLLET, .data.fd = fd};
    struct epoll_event child = {.events = EPOLLIN, .data.fd = w->sigchld_fd};
    if (w->epoll_fd < 0 || w->sigchld_fd < 0 || epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, fd, &edge) ||
        epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, w->sigchld_fd, &child)) {
        int e = errno;
        rec_waiter_close(w);
        errno = e;
        return -1;
    }
    return 0;
}

int rec_waiter_wait(rec_waiter *w, uint64_t deadline_ns)
{
    uint64_t now = rec_now_ns();
    /* In whole milliseconds, rounded up: never early. */
    uint64_t left_ms = deadline_ns > now ? (deadline_ns - now + 999999) / 1000000 : 0;
    struct epoll_event ev[2];
    int n = epoll_wait(w->epoll_fd, ev, 2, left_ms > 3600000 ? 3600000 : (int)left_ms);
    if (n < 0)
        return errno == EINTR ? -1 : REC_WAIT_DEADLINE;
    int got = REC_WAIT_DEADLINE;
    for (int i = 0; i < n; i++) {
        if (ev[i].data.fd != w->sigchld_fd) {
            got |= REC_WAIT_EDGE;
            continue;
        }
        struct signalfd_siginfo info;
        while (read(w->sigchld_fd, &info, sizeof info) == (ssize_t)sizeof info)
            ;
        got |= REC_WAIT_SIGCHLD;
    }
    return got;
}

void rec_waiter_close(rec_waiter *w)
{
    if (w->epoll_fd >= 0)
        close(w->epoll_fd);
    if (w->sigchld_fd >= 0)
        close(w->sigchld_fd);
    w->epoll_fd = w->sigchld_fd = -1;
}
