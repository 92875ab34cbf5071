/* SPDX-License-Identifier: BSD-3-Clause */
/* Facts read from a zeek's command line (as recorded: its arguments
 * joined by spaces). */
#ifndef ZS_CMDLINE_H
#define ZS_CMDLINE_H

/* 1 when the command line compiles scripts with ZAM (-O ZAM, -OZAM,
 * --optimize=ZAM, -O profile-ZAM, ...; not -O no-ZAM-opt), else 0. Such
 * a zeek's ZAM bodies run inlined functions in their callers, with no
 * frames of their own. */
int zs_cmdline_zam(const char *cmdline);

#endif
