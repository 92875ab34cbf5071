/* SPDX-License-Identifier: BSD-3-Clause */
/* The recorder's signals. SIGINT, SIGTERM and SIGHUP ask it to stop: their
 * handler only notes the request, and every wait of the recorder returns
 * early when one runs, so it stops promptly at any moment. SIGCHLD stays
 * blocked and is taken by rec_ptrace_wait, which cannot miss one. SIGUSR1
 * asks for the part being written to be closed at once (rotation). SIGXCPU
 * (the real-time CPU budget ran out) drops the recorder back to normal
 * scheduling instead of ending it. */
#ifndef REC_SIGNALS_H
#define REC_SIGNALS_H

void rec_signals_install(void);

/* The stop signal received, or 0. */
int rec_signals_stop_requested(void);

/* 1 when SIGUSR1 arrived since the last call. */
int rec_signals_take_switch(void);

/* 1 once SIGXCPU has dropped the recorder from real-time priority. */
int rec_signals_demoted(void);

/* In a forked child before exec: the signal dispositions and mask a
 * command expects, not the recorder's. */
void rec_signals_reset_for_exec(void);

#endif
