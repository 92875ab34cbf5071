/* SPDX-License-Identifier: BSD-3-Clause */
/* A PC's symbol by binary search. libdwfl's dwfl_module_addrinfo scans a
 * module's whole symbol table for every address it is asked about: on a
 * real zeek (100,000+ symbols, thousands of distinct PCs in a minute of
 * real traffic) that was most of the unwinder's CPU. Here each module's
 * function symbols are sorted once, when its first PC is named, and each
 * given the one name it is written under (rec_symbol_names.h). */
#ifndef REC_SYMBOLS_H
#define REC_SYMBOLS_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rec_symbol_table rec_symbol_table;

/* The tables of the modules named so far. Zero-initialised is empty. */
typedef struct rec_symbols {
    rec_symbol_table *tables;
    size_t n, cap;
} rec_symbols;

/* The name of the symbol of mod that covers pc (a sized one starting
 * nearest below pc; of several there, the alias rec_symbol_order puts
 * first; where none is, a sizeless one in code, up to the next symbol or
 * its section's end), as rec_symbol_names.h shows it, or NULL when none
 * does or out of memory. *start (if start is not NULL): where that symbol
 * starts, the function's identity whatever it is called. The name lives
 * as long as mod's table (until rec_symbols_clear). */
const char *rec_symbols_find(rec_symbols *s, Dwfl_Module *mod, uint64_t pc, uint64_t *start);

/* rec_symbols_find without the start. */
const char *rec_symbols_name(rec_symbols *s, Dwfl_Module *mod, uint64_t pc);

/* Forgets every table (the modules changed). */
void rec_symbols_clear(rec_symbols *s);

#endif
