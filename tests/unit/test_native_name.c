/* SPDX-License-Identifier: BSD-3-Clause */
/* conv_native_name: a native frame's name as the outputs show it. Code
 * without a symbol is one function of its module, "[vdso]", however the
 * recorder that wrote it named it (earlier ones: "[[vdso]+0x7bd]", by
 * offset); symbols come back demangled, markers and PLT stubs as they are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "names/conv_demangle.h"

static void expect(const char *symbol, const char *want)
{
    char *got = conv_native_name(symbol);
    CHECK(got != NULL);
    if (got && strcmp(got, want))
        fprintf(stderr, "\"%s\": \"%s\", want \"%s\"\n", symbol, got, want);
    CHECK(got && !strcmp(got, want));
    free(got);
}

int main(void)
{
    /* An earlier recorder's offset names: one per module. */
    expect("[[vdso]+0x7bd]", "[vdso]");
    expect("[[vdso]+0x80a]", "[vdso]");
    expect("[zeek-double-8.0+0x41d0]", "[zeek-double-8.0]");
    expect("[libfoo.so.1+0x1c0]", "[libfoo.so.1]");
    expect("[zeek-plugin-demo.so+0x0]", "[zeek-plugin-demo.so]");
    expect("[a+b.so+0x10]", "[a+b.so]"); /* the last "+0x" is the offset's */

    /* A module's name already: as it is. */
    expect("[vdso]", "[vdso]");
    expect("[libfoo.so.1]", "[libfoo.so.1]");

    /* Not offset names: as they are, or demangled. */
    expect("[unknown]", "[unknown]");
    expect("[truncated]", "[truncated]");
    expect("[spicy fiber]", "[spicy fiber]");
    expect("[libc.so.6 .plt]", "[libc.so.6 .plt]");
    expect("[libfoo.so+0x]", "[libfoo.so+0x]");    /* no digits */
    expect("[+0x10]", "[+0x10]");                  /* no module */
    expect("[libfoo.so+0x1G]", "[libfoo.so+0x1G]"); /* not hex */
    expect("[libfoo.so+0x10] x", "[libfoo.so+0x10] x");
    expect("libfoo.so+0x10]", "libfoo.so+0x10]");
    expect("clock_gettime@@GLIBC_2.17", "clock_gettime@@GLIBC_2.17");
    expect("_ZN4zeek6detail10hash_blockEl", "zeek::detail::hash_block(long)");
    expect("", "");
    CHECK_MAIN_END;
}
