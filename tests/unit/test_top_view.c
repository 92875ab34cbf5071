/* SPDX-License-Identifier: BSD-3-Clause */
/* rec_top_format: a plain snapshot has no escape codes and the shares of
 * each window; a terminal snapshot starts at home, cuts every line to the
 * width, draws no more lines than the height and clears the rest. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "views/rec_top_view.h"

static const rec_top_row ROWS[] = {
    {"HTTP::parse_request", "base/protocols/http/utils.zeek:41", 40, 60, 300, 500},
    {"empty_call_stack", "", 30, 30, 200, 200},
    {"connection_state_remove base/protocols/http/main.zeek:329", "", 10, 70, 100, 700},
};

static const rec_top_header HEADER = {
    .pid = 4242, .version = "8.0.10", .elapsed_s = 12, .window_s = 10, .window_len = 10,
    .wsamples = 100, .samples = 1000, .wskipped = 1, .skipped = 3,
    .stops = 1000, .stop_p50_us = 21, .stop_p99_us = 84, .keys = 1,
};

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

int main(void)
{
    rec_top_text t = {0};
    CHECK(rec_top_format(&t, &HEADER, ROWS, 3, 0, 0) == 0);
    CHECK(strlen(t.buf) == t.len);
    CHECK(!strchr(t.buf, '\033'));
    CHECK(strstr(t.buf, "pid 4242 (Zeek 8.0.10), 12 s   (q quits)"));
    CHECK(strstr(t.buf, "last 10 s: 10.0 samples/s, 100 samples, 1 skipped ticks;"));
    CHECK(strstr(t.buf, "since start: 1000 samples, 3 skipped ticks"));
    CHECK(strstr(t.buf, "p50 21 us, p99 84 us"));
    /* 40 of 100 in the window, 300 of 1000 since start. */
    CHECK(strstr(t.buf, "    40.0    60.0    30.0    50.0  HTTP::parse_request "));
    CHECK(strstr(t.buf, "base/protocols/http/utils.zeek:41\n"));
    CHECK(t.len >= 2 && !strcmp(t.buf + t.len - 2, "\n\n")); /* a blank line after each */

    /* A 40 x 8 terminal: the header takes 6 rows, so 2 functions fit. */
    CHECK(rec_top_format(&t, &HEADER, ROWS, 3, 40, 8) == 0);
    CHECK(!strncmp(t.buf, "\033[H", 3));
    CHECK(t.len >= 3 && !strcmp(t.buf + t.len - 3, "\033[J"));
    CHECK(count(t.buf, "\033[K") == 8);
    CHECK(count(t.buf, "\r\n") == 7); /* none after the last row: the screen never scrolls */
    CHECK(!strstr(t.buf, "connection_state_remove"));
    char *copy = strdup(t.buf + 3), *save = NULL;
    copy[strlen(copy) - 3] = '\0';
    for (char *ln = strtok_r(copy, "\r\n", &save); ln; ln = strtok_r(NULL, "\r\n", &save)) {
        char *end = strstr(ln, "\033[K");
        CHECK(end && end - ln <= 40);
    }
    free(copy);

    /* Several processes, nothing stopped yet (nonblocking). */
    rec_top_header h = HEADER;
    h.pid = 0;
    h.stops = 0;
    h.keys = 0;
    CHECK(rec_top_format(&t, &h, ROWS, 0, 0, 0) == 0);
    CHECK(strstr(t.buf, "--top: several processes, 12 s\n"));
    CHECK(strstr(t.buf, "no stops measured yet"));
    free(t.buf);
    CHECK_MAIN_END;
}
