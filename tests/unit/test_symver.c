/* SPDX-License-Identifier: BSD-3-Clause */
/* conv_symver: an older recording's native names without their symbol
 * versions, except a version other than the default whose plain name
 * another function of the same module has in the same recording. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "names/conv_symver.h"

static void expect_shown(const char *name, int keep, const char *want)
{
    char *got = conv_symver_shown(name, keep);
    CHECK(got != NULL);
    if (got && strcmp(got, want))
        fprintf(stderr, "\"%s\" (keep %d): \"%s\", want \"%s\"\n", name, keep, got, want);
    CHECK(got && !strcmp(got, want));
    free(got);
}

/* keep[] for names in modules, against want (a string of '0' and '1'). */
static void expect_kept(const char *const *names, const char *const *modules, size_t n, const char *want)
{
    unsigned char keep[16];
    char got[17];
    CHECK(conv_symver_shared(names, modules, n, keep) == 0);
    for (size_t i = 0; i < n; i++)
        got[i] = keep[i] ? '1' : '0';
    got[n] = '\0';
    if (strcmp(got, want))
        fprintf(stderr, "kept %s, want %s\n", got, want);
    CHECK(!strcmp(got, want));
}

int main(void)
{
    expect_shown("clock_gettime@@GLIBC_2.17", 0, "clock_gettime");
    expect_shown("clock_gettime@@GLIBC_2.17", 1, "clock_gettime"); /* the default: always plain */
    expect_shown("clock_gettime@GLIBC_2.2.5", 0, "clock_gettime");
    expect_shown("memcpy@GLIBC_2.2.5", 1, "memcpy@GLIBC_2.2.5");
    expect_shown("_ZNSt6vectorIiSaIiEE9push_backERKi@@GLIBCXX_3.4", 0, "_ZNSt6vectorIiSaIiEE9push_backERKi");
    expect_shown("main", 0, "main");
    expect_shown("[libc.so.6]", 0, "[libc.so.6]");
    expect_shown("[libc.so.6 .plt]", 0, "[libc.so.6 .plt]");
    expect_shown("weird@name/x", 0, "weird@name/x"); /* no version: kept whole */
    expect_shown("@GLIBC_2.2.5", 0, "@GLIBC_2.2.5");

    static const char *libc = "/usr/lib/x86_64-linux-gnu/libc.so.6", *other = "/usr/lib/libfoo.so";
    {
        /* One function under its one name each: all plain. */
        const char *names[] = {"clock_gettime@GLIBC_2.2.5", "__libc_start_main@GLIBC_2.2.5",
                               "clock_nanosleep@GLIBC_2.2.5", "clock_gettime@GLIBC_2.2.5"};
        const char *mods[] = {libc, libc, libc, libc};
        expect_kept(names, mods, 4, "0000");
    }
    {
        /* memcpy's default and its compat version: two functions. */
        const char *names[] = {"memcpy@@GLIBC_2.14", "memcpy@GLIBC_2.2.5", "realpath@GLIBC_2.2.5",
                               "realpath", "f@V1", "f@V2"};
        const char *mods[] = {libc, libc, libc, libc, libc, libc};
        expect_kept(names, mods, 6, "011011");
    }
    {
        /* Another module's memcpy is not libc's. */
        const char *names[] = {"memcpy@GLIBC_2.2.5", "memcpy", ""};
        const char *mods[] = {libc, other, ""};
        expect_kept(names, mods, 3, "000");
    }
    CHECK_MAIN_END;
}
