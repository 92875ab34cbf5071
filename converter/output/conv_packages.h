/* SPDX-License-Identifier: BSD-3-Clause */
/* The summary's table by script package: which scripts' directory (the
 * package a Zeek operator installs or loads: base/protocols/http, a zkg
 * package under site/packages/ja3) the time went to. */
#ifndef CONV_PACKAGES_H
#define CONV_PACKAGES_H

#include <stddef.h>
#include <stdio.h>

#include "profile/conv_profile.h"

/* A script file's package into buf: its path from Zeek's script directory
 * (after ".../share/zeek/"), a zkg package's root (site/packages/NAME), or
 * else its directory ("." for a file without one). */
void conv_script_package(const char *file, char *buf, size_t size);

/* The table: each package's samples where its script is the innermost
 * script frame (its BiFs and native callees included: "self") and where
 * one of its scripts is on the stack at all ("total"); samples without a
 * script frame in a row of their own. top rows (0: all). 0 or -1 (no
 * memory). */
int conv_write_packages(const conv_profile *p, uint64_t total, size_t top, FILE *out);

#endif
