/* SPDX-License-Identifier: BSD-3-Clause */
#include "names/conv_interpreter.h"

#include <stddef.h>
#include <string.h>

/* How a row names a class: the class itself, any class whose name ends so
 * (Zeek names every statement class ...Stmt and every expression class
 * ...Expr), or no class (a free function of the namespace). */
typedef enum { EXACT, SUFFIX, FREE } class_match;

/* The interpreter's functions, from Zeek 8.2's src/Stmt.h, src/Expr.h,
 * src/Func.cc, src/Frame.h and src/script_opt/ZAM/ZBody.h (namespace
 * zeek::detail from 4.0 on, the global one in 3.x). Only what interprets:
 * a value's own methods (Val, TableVal::Assign, CompositeHash), BiFs,
 * the event manager, allocation and libraries are what a script spent its
 * time on, and stay in the profile. */
static const struct {
    const char *cls;
    class_match how;
    const char *method;
} NAMES[] = {
    /* Every statement runs in its Exec (Stmt::Exec is virtual; WhileStmt,
     * ReturnStmt, EventStmt, ... override it); the statements over one
     * expression (IfStmt, SwitchStmt, ForStmt, PrintStmt) evaluate it in
     * ExprStmt::Exec or ExprListStmt::Exec and run in their DoExec. */
    {"Stmt", SUFFIX, "Exec"},
    {"Stmt", SUFFIX, "DoExec"},
    /* A function body is a StmtList (a DebugStmtList under the debugger). */
    {"StmtList", SUFFIX, "Exec"},
    /* A switch finds its case by value: the statement's own work. */
    {"SwitchStmt", EXACT, "FindCaseLabelMatch"},
    /* Every expression evaluates in Eval; the operators compute in Fold
     * and its per-type variants (BinaryExpr's AddrFold, SubNetFold,
     * StringFold, PatternFold, SetFold, TableFold), vector operands element
     * by element in DoSingleEval and FoldSingleVal. */
    {"Expr", SUFFIX, "Eval"},
    {"Expr", SUFFIX, "Fold"},
    {"Expr", SUFFIX, "AddrFold"},
    {"Expr", SUFFIX, "SubNetFold"},
    {"Expr", SUFFIX, "StringFold"},
    {"Expr", SUFFIX, "PatternFold"},
    {"Expr", SUFFIX, "SetFold"},
    {"Expr", SUFFIX, "TableFold"},
    {"Expr", SUFFIX, "DoSingleEval"},
    {"Expr", SUFFIX, "FoldSingleVal"},
    /* Assignment, add and delete evaluate their target expression (a name,
     * an index, a field) before the value's method does the storing. */
    {"Expr", SUFFIX, "Assign"},
    {"Expr", SUFFIX, "Add"},
    {"Expr", SUFFIX, "Delete"},
    /* A call's arguments, evaluated one by one (Expr.h). */
    {NULL, FREE, "eval_list"},
    /* A call between its caller's script frame and the callee's: the
     * recorder puts a script frame in the place of the callee's activation
     * once the callee is on Zeek's call stack, so these show under the
     * caller only while a call is set up or torn down (arguments into the
     * Frame, the bodies loop of Func.cc). 3.x named them BroFunc::Call and
     * BuiltinFunc::Call. */
    {"ScriptFunc", EXACT, "Invoke"},
    {"BuiltinFunc", EXACT, "Invoke"},
    {"BroFunc", EXACT, "Call"},
    {"BuiltinFunc", EXACT, "Call"},
    /* A script's local variables (Frame.h): storing and reading a slot. */
    {"Frame", EXACT, "SetElement"},
    {"Frame", EXACT, "GetElement"},
    {"Frame", EXACT, "Reset"},
    /* ZAM, the script compiler: a compiled body runs its instructions in
     * ZBody::Exec, the compiled form of the statements above. */
    {"ZBody", EXACT, "Exec"},
};

static const char *identifier_end(const char *s)
{
    while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
           *s == '_')
        s++;
    return s;
}

/* What may follow a function's name: nothing, its parameter list, or a
 * clone suffix (" [clone .cold]") of a name without one. */
static int name_ends(const char *s)
{
    return *s == '\0' || *s == '(' || !strncmp(s, " [clone ", 8);
}

static int same(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && !strncmp(s, word, n);
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && !strncmp(s + n - k, suffix, k);
}

int conv_is_interpreter_function(const char *name)
{
    const char *p = name;
    if (!strncmp(p, "zeek::detail::", 14))
        p += 14;
    const char *first = p;
    p = identifier_end(p);
    size_t nfirst = (size_t)(p - first);
    const char *cls = NULL, *method = first;
    size_t ncls = 0, nmethod = nfirst;
    if (!strncmp(p, "::", 2)) {
        cls = first;
        ncls = nfirst;
        method = p + 2;
        p = identifier_end(method);
        nmethod = (size_t)(p - method);
    }
    if (!nfirst || !nmethod || !name_ends(p))
        return 0;
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        if (!same(method, nmethod, NAMES[i].method))
            continue;
        if (NAMES[i].how == FREE ? !cls
            : NAMES[i].how == EXACT ? cls && same(cls, ncls, NAMES[i].cls)
                                    : cls && ends_with(cls, ncls, NAMES[i].cls))
            return 1;
    }
    return 0;
}
