/* SPDX-License-Identifier: BSD-3-Clause */
/* Zeek's script interpreter among the native (C++) frames of a --native
 * recording, recognised by function name: a profile of scripts shows a
 * script's own interpretation as the script's time, not as C++. */
#ifndef CONV_INTERPRETER_H
#define CONV_INTERPRETER_H

/* Whether name, a demangled C++ function name with its parameter list
 * ("zeek::detail::StmtList::Exec(zeek::detail::Frame*, ...)"), without it
 * (a DWARF name, "zeek::detail::StmtList::Exec") or with a clone suffix
 * (" [clone .cold]"), is one of the interpreter's own functions: running
 * statements and evaluating expressions, nothing they call on values,
 * tables, BiFs or libraries. */
int conv_is_interpreter_function(const char *name);

#endif
