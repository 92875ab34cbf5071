/* SPDX-License-Identifier: BSD-3-Clause */
/* rec_ptrace: the tracee state machine on real children (real ptrace, run
 * as root or with the children's tracer rights). Each child counts its
 * loops in memory shared with this process, so "it runs" and "it is held"
 * are seen, not assumed: seize leaves it running; interrupt, then the stop
 * collected, holds it; resume lets it go; a signal that arrives while it is
 * traced is passed on at the resume, and the one of a stop that is
 * released with; job control keeps its stop (listened to, never undone);
 * release leaves every tracee running and untraced; a child that exits
 * meanwhile is gone, with its status; a child that cannot stop (the parent
 * of a vfork) makes a deadline pass, and is stopped and released once it
 * can. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "base/rec_clock.h"
#include "sampling/rec_ptrace.h"

enum { MS = 1000000 };

/* What a child shares with the test. */
typedef struct shared {
    volatile uint64_t loops;
    volatile uint64_t usr1;     /* SIGUSR1 handled */
    volatile int exit_code;     /* > 0: exit with it */
    volatile int block_ms;      /* > 0: wait uninterruptibly that long */
    volatile int blocking;      /* in that wait */
} shared;

enum { SLOTS = 16 };
static shared *slots; /* one per child, in turn */
static shared *sh;    /* the last child's */
static unsigned started;

static void on_usr1(int sig)
{
    (void)sig;
    sh->usr1++;
}

/* The parent of a vfork waits for its child uninterruptibly: no ptrace
 * stop until the child exits (as a zeek blocked on a slow disk). */
static void block_uninterruptibly(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    sh->blocking = 1;
    pid_t child = vfork();
    if (child == 0) {
        syscall(SYS_nanosleep, &ts, NULL);
        _exit(0);
    }
    if (child > 0)
        waitpid(child, NULL, 0);
    sh->blocking = 0;
}

static pid_t start_child(void)
{
    sh = &slots[started++ % SLOTS];
    memset((void *)sh, 0, sizeof *sh);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(0);
        signal(SIGUSR1, on_usr1);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (;;) {
            sh->loops++;
            if (sh->exit_code)
                _exit(sh->exit_code);
            if (sh->block_ms) {
                int ms = sh->block_ms;
                sh->block_ms = 0;
                block_uninterruptibly(ms);
            }
            usleep(200);
        }
    }
    CHECK(pid > 0);
    /* In its loop, its handler installed: a signal now is one it handles. */
    for (int i = 0; i < 2000 && !sh->loops; i++)
        usleep(1000);
    CHECK(sh->loops > 0);
    return pid;
}

static void end_child(pid_t pid)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
        ;
}

/* Whether the child's loop count moves within ms. */
static int runs(int ms)
{
    uint64_t before = sh->loops;
    for (int i = 0; i < ms; i++) {
        usleep(1000);
        if (sh->loops != before)
            return 1;
    }
    return 0;
}

/* Whether it stays still for ms (a child held by a stop). */
static int held(int ms)
{
    uint64_t before = sh->loops;
    usleep((useconds_t)ms * 1000);
    return sh->loops == before;
}

static int tracer_of(pid_t pid)
{
    char path[64], line[256];
    int tracer = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "TracerPid:", 10))
            tracer = atoi(line + 10);
    fclose(f);
    return tracer;
}

static char state_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' ? paren[2] : '?';
}

static int in_ptrace_stop(pid_t pid)
{
    struct user_regs_struct regs;
    return ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0;
}

static uint64_t after(int ms) { return rec_now_ns() + (uint64_t)ms * MS; }

/* Resumes each stop that comes within 300 ms of the last; how many came. */
static int drain(rec_tracee *t)
{
    int stops = 0;
    while (rec_ptrace_await_stop(t, after(300), 0) == 1) {
        rec_ptrace_resume(t);
        stops++;
    }
    return stops;
}

/* Interrupted, its stop collected. */
static int stop(rec_tracee *t)
{
    if (rec_ptrace_interrupt(t, rec_now_ns()) != 0 || t->state != REC_TRACEE_INTERRUPTED)
        return 0;
    return rec_ptrace_await_stop(t, after(2000), 0) == 1 && t->state == REC_TRACEE_STOPPED;
}

/* A new child, seized: running, traced. */
static pid_t start_seized(rec_tracee *t)
{
    zs_error err = {0};
    pid_t pid = start_child();
    CHECK(rec_ptrace_seize(t, pid, 0, &err) == 0);
    return pid;
}

/* As the sampling loop collects: the next status of any tracee or child,
 * waiting for a change up to ms; its pid, or 0. */
static pid_t collect_within(int ms, int *status)
{
    uint64_t deadline = after(ms);
    pid_t got;
    while (!(got = rec_ptrace_collect(status)) && rec_now_ns() < deadline)
        rec_ptrace_wait(deadline);
    return got;
}

/* ---- the cases ---- */

static void seize_refusals(void)
{
    rec_tracee t;
    zs_error err = {0};
    pid_t pid = start_child();
    end_child(pid); /* its pid names no process now */
    CHECK(rec_ptrace_seize(&t, pid, 0, &err) == -1 && err.code == ZS_E_NO_PROCESS);

    pid = start_seized(&t);
    rec_tracee again;
    err = (zs_error){0};
    /* The refusal names the tracer: this process. */
    char traced_by[64];
    snprintf(traced_by, sizeof traced_by, "is traced already, by pid %d (", (int)getpid());
    CHECK(rec_ptrace_seize(&again, pid, 0, &err) == -1 && err.code == ZS_E_PERMISSION &&
          strstr(err.detail, traced_by));
    end_child(pid);
}

/* The sampling cycle, many times over. */
static void interrupt_stop_resume(void)
{
    rec_tracee t;
    pid_t pid = start_seized(&t);
    CHECK(t.pid == pid && t.seized && t.state == REC_TRACEE_RUNNING);
    CHECK(tracer_of(pid) == getpid());
    CHECK(runs(1000)); /* seizing does not stop it */

    uint64_t now = rec_now_ns();
    CHECK(rec_ptrace_interrupt(&t, now) == 0 && t.state == REC_TRACEE_INTERRUPTED &&
          t.interrupt_ns == now);
    CHECK(rec_ptrace_await_stop(&t, after(2000), 0) == 1 && t.state == REC_TRACEE_STOPPED);
    CHECK(!t.job_stopped && !t.pending_signal && !t.exec_stop);
    CHECK(in_ptrace_stop(pid) && state_of(pid) == 't' && held(50));
    /* Already stopped: no interrupt needed, nothing changes. */
    CHECK(rec_ptrace_interrupt(&t, rec_now_ns()) == 0 && t.state == REC_TRACEE_STOPPED);

    rec_ptrace_resume(&t);
    CHECK(t.state == REC_TRACEE_RUNNING && runs(1000) && !in_ptrace_stop(pid));
    rec_ptrace_resume(&t); /* not stopped: nothing to do */
    CHECK(t.state == REC_TRACEE_RUNNING && runs(1000));

    int cycles = 0;
    for (int i = 0; i < 50; i++) {
        if (!stop(&t))
            break;
        uint64_t at = sh->loops;
        int still = in_ptrace_stop(pid) && sh->loops == at;
        rec_ptrace_resume(&t);
        cycles += still;
    }
    CHECK(cycles == 50);
    CHECK(runs(1000));
    end_child(pid);
}

/* The loop's way: SIGCHLD blocked, a wait that wakes on a change, the
 * status collected from any tracee and applied. */
static void collect_and_update(void)
{
    rec_tracee t;
    pid_t pid = start_seized(&t);
    int status;
    CHECK(rec_ptrace_collect(&status) == 0); /* nothing yet */

    rec_ptrace_interrupt(&t, rec_now_ns());
    CHECK(collect_within(2000, &status) == pid && WIFSTOPPED(status));
    CHECK(rec_ptrace_update(&t, status) == REC_TRACEE_STOPPED && t.state == REC_TRACEE_STOPPED);
    CHECK(rec_ptrace_collect(&status) == 0);
    rec_ptrace_resume(&t);

    /* No change: the wait lasts until its deadline. */
    while (rec_ptrace_wait(rec_now_ns()) == 1) /* a SIGCHLD left from before */
        ;
    uint64_t start = rec_now_ns();
    CHECK(rec_ptrace_wait(start + 100 * MS) == 0);
    CHECK(rec_now_ns() - start >= 99 * MS);
    CHECK(runs(1000));
    end_child(pid);
}

/* A signal sent to a tracee stops it first; the resume delivers it. */
static void signals_passed_on(void)
{
    rec_tracee t;
    pid_t pid = start_seized(&t);
    kill(pid, SIGUSR1);
    CHECK(rec_ptrace_await_stop(&t, after(2000), 0) == 1 && t.pending_signal == SIGUSR1);
    CHECK(sh->usr1 == 0 && held(50)); /* not delivered while stopped */
    rec_ptrace_resume(&t);
    CHECK(t.pending_signal == 0 && runs(1000));
    for (int i = 0; i < 1000 && sh->usr1 == 0; i++)
        usleep(1000);
    CHECK(sh->usr1 == 1);

    /* Interrupted and signalled at once: the interrupt's stop and the
     * signal's, in either order; the signal is delivered once. */
    rec_ptrace_interrupt(&t, rec_now_ns());
    kill(pid, SIGUSR1);
    CHECK(drain(&t) == 2);
    for (int i = 0; i < 1000 && sh->usr1 == 1; i++)
        usleep(1000);
    CHECK(sh->usr1 == 2 && runs(1000));
    end_child(pid);
}

/* Steps the tracee through the stops of a SIGSTOP until job control holds
 * it (listened to); 1 when it does. */
static int job_stop(rec_tracee *t, pid_t pid)
{
    kill(pid, SIGSTOP);
    for (int i = 0; i < 4; i++) {
        if (rec_ptrace_await_stop(t, after(2000), 0) != 1)
            return 0;
        int job = t->job_stopped;
        rec_ptrace_resume(t);
        if (job)
            return 1;
    }
    return 0;
}

/* Job control's stop is kept: the recorder listens, never resumes it. */
static void job_control(void)
{
    rec_tracee t;
    pid_t pid = start_seized(&t);
    CHECK(job_stop(&t, pid));
    CHECK(t.state == REC_TRACEE_RUNNING && t.job_stopped && held(200));
    /* Held by job control: no interrupt is sent, none is awaited. */
    CHECK(rec_ptrace_interrupt(&t, rec_now_ns()) == 0 && t.state == REC_TRACEE_RUNNING);
    CHECK(held(100));

    /* SIGCONT: the listening tracee reports the end of the stop, then the
     * SIGCONT itself, passed on like any signal. */
    kill(pid, SIGCONT);
    CHECK(drain(&t) >= 1);
    CHECK(!t.job_stopped && t.state == REC_TRACEE_RUNNING && runs(1000));

    /* Released while job control holds it: untraced, still stopped; it
     * runs again at SIGCONT, as it would have without us. */
    CHECK(job_stop(&t, pid));
    rec_tracee *one = &t;
    CHECK(rec_ptrace_release(&one, 1, after(2000)) == 0);
    /* Detached, it goes back into its group-stop: 'T' after a moment. */
    for (int i = 0; i < 1000 && state_of(pid) != 'T'; i++)
        usleep(1000);
    CHECK(!t.seized && tracer_of(pid) == 0 && state_of(pid) == 'T' && held(200));
    kill(pid, SIGCONT);
    CHECK(runs(1000));
    end_child(pid);
}

/* Release leaves every tracee running and untraced, whatever its state. */
static void release(void)
{
    rec_tracee t[3];
    zs_error err = {0};
    pid_t pids[3];
    shared *of[3];
    for (int i = 0; i < 3; i++) {
        pids[i] = start_seized(&t[i]);
        of[i] = sh;
    }
    /* 0 stays running, 1 is stopped, 2 stopped by a signal to pass on */
    CHECK(stop(&t[1]));
    kill(pids[2], SIGUSR1);
    CHECK(rec_ptrace_await_stop(&t[2], after(2000), 0) == 1 && t[2].pending_signal == SIGUSR1);
    rec_tracee *all[] = {&t[0], &t[1], &t[2]};
    CHECK(rec_ptrace_release(all, 3, after(2000)) == 0);
    for (int i = 0; i < 3; i++) {
        CHECK(!t[i].seized && tracer_of(pids[i]) == 0);
        CHECK(state_of(pids[i]) != 't' && state_of(pids[i]) != 'T');
        sh = of[i];
        CHECK(runs(1000));
    }
    for (int i = 0; i < 1000 && sh->usr1 == 0; i++)
        usleep(1000);
    CHECK(sh->usr1 == 1); /* the signal of the stop released went with it */
    /* Released tracees can be seized again (nothing of ours is left). */
    CHECK(rec_ptrace_seize(&t[0], pids[0], 0, &err) == 0);
    for (int i = 0; i < 3; i++)
        end_child(pids[i]);
}

/* A child that exits or is killed meanwhile is gone, with its status,
 * whatever it was waited for. */
static void exits_meanwhile(void)
{
    rec_tracee t;
    /* Killed between the interrupt and the collect. */
    pid_t pid = start_seized(&t);
    rec_ptrace_interrupt(&t, rec_now_ns());
    kill(pid, SIGKILL);
    int r = rec_ptrace_await_stop(&t, after(2000), 0);
    if (r == 1) /* the interrupt's stop came first: the kill follows it */
        r = rec_ptrace_await_stop(&t, after(2000), 0);
    CHECK(r == 0 && t.state == REC_TRACEE_GONE && WIFSIGNALED(t.wait_status) &&
          WTERMSIG(t.wait_status) == SIGKILL);
    CHECK(rec_ptrace_interrupt(&t, rec_now_ns()) == 1 && t.state == REC_TRACEE_GONE);
    rec_ptrace_resume(&t);
    CHECK(t.state == REC_TRACEE_GONE);
    rec_tracee *one = &t;
    CHECK(rec_ptrace_release(&one, 1, after(2000)) == 0);
    /* Reaped: nothing more to collect of it; waiting again says gone. */
    int status;
    CHECK(rec_ptrace_collect(&status) == 0);
    CHECK(rec_ptrace_await_stop(&t, after(100), 0) == 0 && t.state == REC_TRACEE_GONE);

    /* Exits by itself while running: the loop's collect gets its status. */
    pid = start_seized(&t);
    sh->exit_code = 7;
    CHECK(collect_within(2000, &status) == pid);
    CHECK(rec_ptrace_update(&t, status) == REC_TRACEE_GONE && WIFEXITED(t.wait_status) &&
          WEXITSTATUS(t.wait_status) == 7);

    /* Dead, not yet reaped, when interrupted: the interrupt fails, the
     * status that follows says gone. */
    pid = start_seized(&t);
    sh->exit_code = 3;
    for (int i = 0; i < 2000 && state_of(pid) != 'Z'; i++)
        usleep(1000);
    CHECK(state_of(pid) == 'Z');
    CHECK(rec_ptrace_interrupt(&t, rec_now_ns()) == 0 && t.state == REC_TRACEE_INTERRUPTED);
    CHECK(rec_ptrace_await_stop(&t, after(2000), 0) == 0 && t.state == REC_TRACEE_GONE &&
          WEXITSTATUS(t.wait_status) == 3);

    /* Killed in a stop. */
    pid = start_seized(&t);
    CHECK(stop(&t));
    kill(pid, SIGKILL);
    CHECK(rec_ptrace_await_stop(&t, after(2000), 0) == 0 && t.state == REC_TRACEE_GONE);
}

/* A tracee that cannot stop: the deadline passes, the caller hears so; the
 * stop comes when it can, and release then succeeds. */
static void stop_deadline(void)
{
    rec_tracee t;
    pid_t pid = start_seized(&t);
    sh->block_ms = 1200;
    for (int i = 0; i < 2000 && state_of(pid) != 'D'; i++)
        usleep(1000);
    CHECK(sh->blocking && state_of(pid) == 'D');

    uint64_t start = rec_now_ns();
    CHECK(rec_ptrace_interrupt(&t, start) == 0);
    CHECK(rec_ptrace_await_stop(&t, start + 200 * MS, 0) == -1);
    uint64_t waited = rec_now_ns() - start;
    CHECK(waited >= 200 * MS && waited < 1000 * MS);
    CHECK(t.state == REC_TRACEE_INTERRUPTED && sh->blocking);
    /* Once its vfork child exits, the stop arrives (and the SIGCHLD of
     * that child's exit, passed on). */
    CHECK(rec_ptrace_await_stop(&t, after(5000), 0) == 1 && t.state == REC_TRACEE_STOPPED);
    CHECK(in_ptrace_stop(pid) && rec_now_ns() - start >= 1000 * MS);
    rec_ptrace_resume(&t);
    drain(&t);
    CHECK(runs(1000));

    /* Released while it cannot stop: counted as stuck, still ours. */
    sh->block_ms = 1200;
    for (int i = 0; i < 2000 && state_of(pid) != 'D'; i++)
        usleep(1000);
    rec_tracee *one = &t;
    start = rec_now_ns();
    CHECK(rec_ptrace_release(&one, 1, start + 200 * MS) == 1);
    CHECK(rec_now_ns() - start < 1000 * MS);
    CHECK(t.seized && t.state == REC_TRACEE_INTERRUPTED && tracer_of(pid) == getpid());
    /* Its stop, when it comes, is released too. */
    CHECK(rec_ptrace_release(&one, 1, after(5000)) == 0);
    CHECK(!t.seized && tracer_of(pid) == 0 && runs(1000));
    end_child(pid);
}

/* Launch mode: a seized child's exec stop, and a child that never gets
 * to exec. */
static void exec_stop(void)
{
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 1)
            _exit(1);
        if (c == 'x')
            execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127); /* "not found" */
    }
    close(go[0]);
    rec_tracee t;
    zs_error err = {0};
    CHECK(rec_ptrace_seize(&t, pid, 1, &err) == 0);
    CHECK(write(go[1], "x", 1) == 1);
    CHECK(rec_ptrace_wait_exec(&t, after(5000), &err) == 0);
    CHECK(t.exec_stop && t.state == REC_TRACEE_STOPPED && in_ptrace_stop(pid));
    char exe[256] = "", path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    CHECK(strstr(exe, "sleep") != NULL);
    rec_ptrace_resume(&t);
    CHECK(t.state == REC_TRACEE_RUNNING);
    rec_tracee *one = &t;
    CHECK(rec_ptrace_release(&one, 1, after(2000)) == 0 && tracer_of(pid) == 0);
    close(go[1]);
    end_child(pid);

    CHECK(pipe(go) == 0);
    pid = fork();
    if (pid == 0) {
        char c;
        close(go[1]);
        _exit(read(go[0], &c, 1) == 1 ? 127 : 1);
    }
    close(go[0]);
    CHECK(rec_ptrace_seize(&t, pid, 1, &err) == 0);
    CHECK(write(go[1], "n", 1) == 1);
    err = (zs_error){0};
    CHECK(rec_ptrace_wait_exec(&t, after(5000), &err) == -1 && t.state == REC_TRACEE_GONE &&
          strstr(err.detail, "exited before it started"));
    close(go[1]);
}

int main(void)
{
    slots = mmap(NULL, SLOTS * sizeof *slots, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
    if (slots == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    /* As rec_signals_install leaves it: rec_ptrace_wait takes SIGCHLD. */
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);

    seize_refusals();
    interrupt_stop_resume();
    collect_and_update();
    signals_passed_on();
    job_control();
    release();
    exits_meanwhile();
    stop_deadline();
    exec_stop();
    CHECK_MAIN_END;
}
