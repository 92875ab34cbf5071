/* SPDX-License-Identifier: BSD-3-Clause */
/* zs_maps: lines of /proc/PID/maps as the kernel writes them, and lines it
 * does not. */
#include <string.h>

#include "check.h"
#include "zs_maps.h"

static int parse(const char *line, zs_maps_line *m)
{
    return zs_maps_parse(line, strlen(line), m);
}

static int path_is(const zs_maps_line *m, const char *path)
{
    return m->path_len == strlen(path) && !memcmp(m->path, path, m->path_len);
}

static void test_file(void)
{
    zs_maps_line m;
    CHECK(parse("7f932bc08000-7f932bd5e000 r-xp 00026000 fe:00 332835                     "
                "/usr/lib/x86_64-linux-gnu/libc.so.6\n", &m) == 0);
    CHECK(m.start == 0x7f932bc08000ULL && m.end == 0x7f932bd5e000ULL);
    CHECK(!strcmp(m.perms, "r-xp") && m.offset == 0x26000);
    CHECK(m.dev_major == 0xfe && m.dev_minor == 0 && m.inode == 332835);
    CHECK(path_is(&m, "/usr/lib/x86_64-linux-gnu/libc.so.6")); /* without the '\n' */
    /* 32-bit addresses, no padding, no newline, a shared mapping. */
    CHECK(parse("00400000-00452000 r--s 0000a000 08:02 173521 /usr/bin/dbus-daemon", &m) == 0);
    CHECK(m.start == 0x400000 && m.end == 0x452000 && m.offset == 0xa000 && m.perms[3] == 's');
    CHECK(m.dev_major == 8 && m.dev_minor == 2 && path_is(&m, "/usr/bin/dbus-daemon"));
}

static void test_odd_paths(void)
{
    zs_maps_line m;
    CHECK(parse("7f0000000000-7f0000001000 r-xp 00001000 fe:01 1234     /opt/my zeek/lib a.so\n",
                &m) == 0);
    CHECK(path_is(&m, "/opt/my zeek/lib a.so"));
    CHECK(parse("7f0000000000-7f0000001000 r-xp 00001000 fe:01 1234     /tmp/plugin.so (deleted)\n",
                &m) == 0);
    CHECK(path_is(&m, "/tmp/plugin.so (deleted)")); /* the caller decides what it means */
    CHECK(parse("7f0000000000-7f0000001000 r-xp 00000000 00:01 77       /memfd:jit (deleted)\n",
                &m) == 0);
    CHECK(path_is(&m, "/memfd:jit (deleted)"));
    /* Only the line's one '\n' goes; the lines of a buffer need no NUL. */
    const char two[] = "1000-2000 r-xp 0 00:00 5 /a\n3000-4000 r-xp 0 00:00 6 /b\n";
    CHECK(zs_maps_parse(two, 28, &m) == 0 && m.start == 0x1000 && path_is(&m, "/a"));
    CHECK(zs_maps_parse(two + 28, 28, &m) == 0 && m.start == 0x3000 && path_is(&m, "/b"));
}

static void test_kernel_and_anonymous(void)
{
    zs_maps_line m;
    CHECK(parse("7ffd1b7f3000-7ffd1b7f5000 r-xp 00000000 00:00 0                          [vdso]\n",
                &m) == 0);
    CHECK(path_is(&m, "[vdso]") && m.inode == 0 && m.perms[2] == 'x');
    CHECK(parse("7fff5e9c0000-7fff5e9e1000 rw-p 00000000 00:00 0                          [stack]\n",
                &m) == 0);
    CHECK(path_is(&m, "[stack]") && !strcmp(m.perms, "rw-p"));
    CHECK(parse("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  "
                "[vsyscall]\n", &m) == 0);
    CHECK(m.start == 0xffffffffff600000ULL && m.end == 0xffffffffff601000ULL);
    CHECK(parse("7f0000000000-7f0000001000 rw-p 00000000 00:00 0                          "
                "[anon:zeek heap]\n", &m) == 0);
    CHECK(path_is(&m, "[anon:zeek heap]"));
    /* Anonymous: the kernel ends the line after the inode's space. */
    CHECK(parse("7f932babe000-7f932bb82000 rw-p 00000000 00:00 0 \n", &m) == 0);
    CHECK(m.path_len == 0 && m.start == 0x7f932babe000ULL);
    CHECK(parse("7f932babe000-7f932bb82000 rw-p 00000000 00:00 0", &m) == 0 && m.path_len == 0);
}

static void test_malformed(void)
{
    static const char *bad[] = {
        "",
        "\n",
        "garbage\n",
        "7f0000000000\n",
        "7f0000000000-\n",
        "7f0000000000-7f0000001000\n",
        "7f0000000000-7f0000001000 r-xp\n",
        "7f0000000000-7f0000001000 r-xp 00001000\n",
        "7f0000000000-7f0000001000 r-xp 00001000 fe:01\n",
        "7f0000000000-7f0000001000 r-xp 00001000 fe01 1234 /no-colon\n",
        "7f0000000000-7f0000001000 r-xp 00001000 fe:01 12x4 /bad-inode\n",
        "7f0000000000-7f0000001000 r-xp 00001000 fe:01 1234/glued\n",
        "7f0000000000-7f0000001000 r-x 00001000 fe:01 1234 /short-perms\n",
        "7f0000000000-7f0000001000 r-xpq 00001000 fe:01 1234 /long-perms\n",
        "7f0000000000 7f0000001000 r-xp 00001000 fe:01 1234 /no-dash\n",
        "7f0000000000-7f0000001000 r-xp 0x1000 fe:01 1234 /hex-prefix\n",
        "7f0000000000-7f0000001000 r-xp -1000 fe:01 1234 /signed\n",
        "  7f0000000000-7f0000001000 r-xp 00001000 fe:01 1234 /leading-blanks\n",
        "17f0000000000000a-7f0000001000 r-xp 00001000 fe:01 1234 /address-overflow\n",
        "7f0000000000-7f0000001000 r-xp 00001000 fe:01 99999999999999999999999 /inode-overflow\n",
        "7f0000000000-7f0000001000 r-xp 00001000 1fe:100000000 1234 /device-overflow\n",
    };
    zs_maps_line m;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = parse(bad[i], &m);
        CHECK(rc == -1);
        if (rc != -1)
            fprintf(stderr, "  accepted: %s", bad[i]);
    }
    /* Only len bytes count: a line cut before its inode is no line. */
    CHECK(zs_maps_parse("1000-2000 r-xp 0 00:00 12345 /a", 20, &m) == -1);
}

int main(void)
{
    test_file();
    test_odd_paths();
    test_kernel_and_anonymous();
    test_malformed();
    CHECK_MAIN_END;
}
