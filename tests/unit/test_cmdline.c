/* SPDX-License-Identifier: BSD-3-Clause */
/* zs_cmdline_zam: which zeek command lines compile scripts with ZAM. */
#include <stdio.h>

#include "check.h"
#include "zs_cmdline.h"

static void expect(const char *cmdline, int want)
{
    int got = zs_cmdline_zam(cmdline);
    if (got != want)
        fprintf(stderr, "\"%s\": got %d, want %d\n", cmdline ? cmdline : "(null)", got, want);
    CHECK(got == want);
}

int main(void)
{
    /* ZAM on */
    expect("/opt/zeek/bin/zeek -O ZAM -i eth0 local", 1);
    expect("zeek -OZAM local", 1);
    expect("zeek --optimize=ZAM local", 1);
    expect("zeek --optimize ZAM local", 1);
    expect("zeek -O profile-ZAM -r trace.pcap", 1);
    expect("zeek -O inline -O ZAM local", 1);
    expect("zeek   -O  ZAM", 1); /* runs of spaces */
    /* ZAM off */
    expect("/opt/zeek/bin/zeek -i eth0 local", 0);
    expect("zeek -O no-ZAM-opt local", 0);
    expect("zeek -O inline local", 0);
    expect("zeek local ZAM", 0);      /* a script named ZAM, not an -O value */
    expect("zeek -r ZAM.pcap", 0);    /* another option's value */
    expect("zeek --optimize", 0);     /* no value */
    expect("zeek --optimizer=ZAM", 0); /* not the option */
    expect("", 0);
    expect(NULL, 0);
    CHECK_MAIN_END;
}
