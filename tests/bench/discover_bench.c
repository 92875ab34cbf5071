/* SPDX-License-Identifier: BSD-3-Clause */
/* Times --all's process discovery (rec_discover_scan) on this host: one
 * first scan, which inspects every distinct executable in a sandboxed
 * child, then RESCANS rescans, which must parse nothing and cost a readdir
 * and a stat per process. Driven by discover_bench.py, which starts the
 * processes.
 *
 *     discover_bench [RESCANS]
 *
 * Prints one line of key=value: processes, candidates, parsed executables
 * after the first scan and after the rescans, first-scan ms, rescan ms
 * (median, p90, max). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "targets/rec_discover.h"

enum { MAX_PIDS = 65536 };

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int count_processes(void)
{
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] >= '0' && e->d_name[0] <= '9';
    if (d)
        closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    int rescans = argc > 1 ? atoi(argv[1]) : 50;
    if (rescans < 1)
        rescans = 1;
    static pid_t pids[MAX_PIDS];
    double *ms = calloc((size_t)rescans, sizeof *ms);
    rec_discover *d = rec_discover_new();
    if (!d || !ms)
        return 1;
    double t0 = now_ms();
    size_t found = rec_discover_scan(d, pids, MAX_PIDS);
    double first = now_ms() - t0;
    size_t parsed_first = rec_discover_parsed(d);
    for (int i = 0; i < rescans; i++) {
        t0 = now_ms();
        rec_discover_scan(d, pids, MAX_PIDS);
        ms[i] = now_ms() - t0;
    }
    qsort(ms, (size_t)rescans, sizeof *ms, cmp);
    printf("processes=%d candidates=%zu parsed_first=%zu parsed_rescans=%zu first_ms=%.1f "
           "rescan_median_ms=%.2f rescan_p90_ms=%.2f rescan_max_ms=%.2f\n",
           count_processes(), found, parsed_first, rec_discover_parsed(d) - parsed_first, first,
           ms[rescans / 2], ms[rescans * 9 / 10], ms[rescans - 1]);
    rec_discover_free(d);
    free(ms);
    return 0;
}
