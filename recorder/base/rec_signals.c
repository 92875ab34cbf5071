/* SPDX-License-Identifier: BSD-3-Clause */
#include "base/rec_signals.h"

#include <sched.h>
#include <signal.h>
#include <stddef.h>

/* Async-signal state: a C program truly needs this much global state. */
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t demoted;
static volatile sig_atomic_t switches; /* SIGUSR1s received (wraps: only changes count) */

static void on_stop_signal(int sig) { stop_requested = sig; }
static void on_switch_signal(int sig)
{
    (void)sig;
    switches++;
}

/* RLIMIT_RTTIME's soft limit: the loop ran 200 ms on the CPU without
 * sleeping (every tick late on a saturated host). The guard is there to
 * protect the host, not to end the recording: give the CPU back for good
 * and carry on. sched_setscheduler is a plain system call, safe here. */
static void on_cpu_limit(int sig)
{
    (void)sig;
    struct sched_param sp = {.sched_priority = 0};
    sched_setscheduler(0, SCHED_OTHER, &sp);
    demoted = 1;
}

void rec_signals_install(void)
{
    struct sigaction sa = {0};
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop_signal; /* no SA_RESTART: interrupt the waits */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_switch_signal;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_cpu_limit;
    sigaction(SIGXCPU, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file size limit: the write fails, reported */
    signal(SIGCHLD, SIG_DFL); /* never SIG_IGN: that would auto-reap */
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
}

int rec_signals_stop_requested(void) { return stop_requested; }
int rec_signals_demoted(void) { return demoted; }

int rec_signals_take_switch(void)
{
    static sig_atomic_t seen;
    sig_atomic_t now = switches;
    int asked = now != seen;
    seen = now;
    return asked;
}

void rec_signals_reset_for_exec(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGXCPU, SIGXFSZ, SIGCHLD, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}
