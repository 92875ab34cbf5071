/* SPDX-License-Identifier: BSD-3-Clause */
/* The summary's script packages: a script file's package, from the paths
 * real zeeks load scripts by. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "output/conv_packages.h"

static void expect(const char *file, const char *want)
{
    char got[256];
    conv_script_package(file, got, sizeof got);
    if (strcmp(got, want))
        fprintf(stderr, "package of '%s': got '%s', want '%s'\n", file, got, want);
    CHECK(!strcmp(got, want));
}

int main(void)
{
    expect("/usr/local/zeek/share/zeek/base/protocols/http/main.zeek", "base/protocols/http");
    expect("/opt/zeek/share/zeek/site/packages/ja3/ja3.zeek", "site/packages/ja3");
    expect("/opt/zeek/share/zeek/site/packages/hassh/scripts/hassh.zeek", "site/packages/hassh");
    expect("/opt/zeek/share/zeek/site/local.zeek", "site");
    expect("base/protocols/dns/main.zeek", "base/protocols/dns");
    expect("./base/utils/site.zeek", "base/utils");
    expect("/home/op/detect.zeek", "/home/op");
    expect("detect.zeek", ".");
    expect("/share/zeek/x/share/zeek/policy/misc/stats.zeek", "policy/misc");
    CHECK_MAIN_END;
}
