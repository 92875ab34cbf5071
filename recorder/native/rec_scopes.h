/* SPDX-License-Identifier: BSD-3-Clause */
/* The functions a PC lies in, from DWARF, without walking its compilation
 * unit each time. libdw's dwarf_getscopes decodes the unit's DIEs from its
 * root for every PC it is asked about; a real zeek's units are large (every
 * header's inline functions), and with DWARF that walk was most of the
 * unwinder's CPU (2.7 ms a sample on real traffic). Here a unit's subprogram
 * and inlined-subroutine ranges are listed once, on its first PC, and each
 * PC is looked up in that list. */
#ifndef REC_SCOPES_H
#define REC_SCOPES_H

#include <elfutils/libdw.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rec_scope_unit rec_scope_unit;

/* The units listed so far (the most recent REC_SCOPES_UNITS). Zero-
 * initialised is empty. */
typedef struct rec_scopes {
    rec_scope_unit *units;
    size_t n, next;
} rec_scopes;

/* The subprogram and inlined-subroutine DIEs of cu that contain addr (a
 * DWARF address, without the module's bias), innermost first, as
 * dwarf_getscopes would list them, into out (at most max). Their count, or
 * -1 when out of memory. */
int rec_scopes_at(rec_scopes *s, Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Die *out, int max);

/* Forgets every unit (the modules changed). */
void rec_scopes_clear(rec_scopes *s);

#endif
