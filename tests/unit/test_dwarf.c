/* SPDX-License-Identifier: BSD-3-Clause */
/* zs_dwarf: the layout read from a target's DWARF equals the built-in layout
 * of its Zeek generation, and a copy without debug info is refused.
 *
 * usage: test_dwarf EXE VERSION [EXE VERSION ...]
 *   e.g. test_dwarf zeek-double-3.0 3.0 zeek-double-8.0 8.0 zeek-double-8.2 8.2
 * Each EXE must have debug info; EXE-stripped next to it (the test target
 * builds one) must have none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "zs_dwarf.h"
#include "zs_layout.h"

static void print_layout(const char *what, const zs_layout *l)
{
    char *text = zs_layout_format(l);
    fprintf(stderr, "--- %s\n%s", what, text ? text : "(out of memory)\n");
    free(text);
}

static void check_exe(const char *exe, const char *version)
{
    const zs_layout *want = zs_layout_builtin(version);
    CHECK(want != NULL);
    if (!want) {
        fprintf(stderr, "%s: no built-in layout for version '%s'\n", exe, version);
        return;
    }

    zs_layout got;
    zs_error err = {0};
    int rc = zs_dwarf_layout(exe, "", version, &got, &err);
    CHECK(rc == 0);
    if (rc) {
        fprintf(stderr, "%s\n", err.detail);
        return;
    }
    /* DWARF gives every member but ZAM's, which come from the table. */
    CHECK(!zs_layout_has_zam(&got));
    zs_layout_add_builtin_zam(&got, version);
    CHECK(zs_layout_equal(&got, want));
    if (!zs_layout_equal(&got, want)) {
        print_layout("from DWARF", &got);
        print_layout("built-in", want);
    }

    /* Without a version string the executable's symbols pick the names. */
    zs_layout got2;
    CHECK(zs_dwarf_layout(exe, NULL, NULL, &got2, &err) == 0);
    zs_layout_add_builtin_zam(&got2, version);
    CHECK(zs_layout_equal(&got2, want));
}

/* The stripped copy: no .debug_info, and a build-id that is not installed
 * under /usr/lib/debug. The message must say what to do. */
static void check_stripped(const char *exe)
{
    char path[4096];
    snprintf(path, sizeof path, "%s-stripped", exe);
    CHECK(access(path, R_OK) == 0);
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "%s: missing\n", path);
        return;
    }
    zs_layout got;
    zs_error err = {0};
    CHECK(zs_dwarf_layout(path, "", NULL, &got, &err) == -1);
    CHECK(err.code == ZS_E_LAYOUT);
    CHECK(strstr(err.detail, "no DWARF debug info") != NULL);
    CHECK(strstr(err.detail, "--layout") != NULL);
    CHECK(strchr(err.detail, '\n') == NULL);

    /* An explicit build-id that has no debug file: same refusal. */
    err = (zs_error){0};
    const char *absent_id = "00112233445566778899aabbccddeeff00112233";
    CHECK(zs_dwarf_layout(path, absent_id, NULL, &got, &err) == -1);
    CHECK(err.code == ZS_E_LAYOUT);
    CHECK(strstr(err.detail, "/usr/lib/debug/.build-id/00/112233") != NULL);
}

static void check_not_there(void)
{
    zs_layout got;
    zs_error err = {0};
    CHECK(zs_dwarf_layout("/nonexistent/zeek", "", NULL, &got, &err) == -1);
    CHECK(err.code == ZS_E_IO);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc % 2 == 0) {
        fprintf(stderr, "usage: %s EXE VERSION [EXE VERSION ...]\n", argv[0]);
        return 2;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        check_exe(argv[i], argv[i + 1]);
        check_stripped(argv[i]);
    }
    check_not_there();
    CHECK_MAIN_END;
}
