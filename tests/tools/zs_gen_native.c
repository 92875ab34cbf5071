/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_gen_native.h"

#include <string.h>

/* The modules the frames lie in. */
enum { ZEEK, LIBC, NMODULES };
static const zs_module MODULES[NMODULES] = {
    {0, "5a1d0c0ffee0ddba11c0ffee5eed0123456789ab", "/usr/local/zeek/bin/zeek", 0x55d4c0000000ULL,
     0x55d4c4000000ULL, 0},
    {1, "0be1ca11ab1e5eed0123456789abcdef01234567", "/usr/lib/x86_64-linux-gnu/libc.so.6",
     0x7f2a10000000ULL, 0x7f2a10200000ULL, 0},
};

/* A function: its symbol as the binary has it (mangled, as the recorder
 * writes it), its name as the converter shows it (demangled: c++filt's),
 * and whether it is one of Zeek's interpreter functions (Stmt.h, Expr.h,
 * Func.cc): the generator's own truth, not the converter's table. */
typedef struct native_fn {
    const char *symbol, *name;
    int interpreter;
    int module;
} native_fn;

enum {
    F_START, F_LIBC_START_MAIN, F_MAIN, F_RUN_LOOP, F_DRAIN, F_DISPATCH, F_HANDLER_CALL,
    F_TRIGGERS, F_TRIGGER_EVAL, F_NAME_EVAL, F_STMTLIST_EXEC, F_IF_DOEXEC, F_EXPRSTMT_EXEC, F_CALL_EVAL,
    F_ASSIGN_EVAL, F_ADD_EVAL, F_BINARY_FOLD, F_INDEX_ASSIGN, F_TABLE_ASSIGN, F_MAKE_HASH_KEY,
    F_RB_INSERT, F_MALLOC, F_INTRUSIVE_DTOR, F_UNREF, F_TABLE_DTOR, F_FREE, F_SORT_BIF,
    F_INTROSORT, F_COMP_ITER, F_INVOKE, F_SET_ELEMENT, NFNS
};

#define FLOW "zeek::detail::Frame*, zeek::detail::StmtFlowType&"
#define ARGS "std::vector<zeek::IntrusivePtr<zeek::Val>, std::allocator<zeek::IntrusivePtr<zeek::Val> > >"
#define STR "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"
#define PAIR "std::pair<" STR " const, " STR " >"
#define VALS "__gnu_cxx::__normal_iterator<zeek::Val**, std::vector<zeek::Val*, std::allocator<zeek::Val*> > >"
#define LAMBDA "zeek::detail::sort_vals(std::vector<zeek::Val*, std::allocator<zeek::Val*> >&)::{lambda(zeek::Val*, zeek::Val*)#1}"

static const native_fn FNS[NFNS] = {
    [F_START] = {"_start", "_start", 0, ZEEK},
    /* An older recorder's versioned name: shown without its version. */
    [F_LIBC_START_MAIN] = {"__libc_start_main@@GLIBC_2.34", "__libc_start_main", 0, LIBC},
    [F_MAIN] = {"main", "main", 0, ZEEK},
    [F_RUN_LOOP] = {"_ZN4zeek9run_state8run_loopEv", "zeek::run_state::run_loop()", 0, ZEEK},
    [F_DRAIN] = {"_ZN4zeek8EventMgr5DrainEv", "zeek::EventMgr::Drain()", 0, ZEEK},
    [F_DISPATCH] = {"_ZN4zeek5Event8DispatchEb", "zeek::Event::Dispatch(bool)", 0, ZEEK},
    [F_HANDLER_CALL] = {"_ZN4zeek12EventHandler4CallEPSt6vectorINS_12IntrusivePtrINS_3ValEEESaIS4_EEbd",
                        "zeek::EventHandler::Call(" ARGS "*, bool, double)", 0, ZEEK},
    [F_TRIGGERS] = {"_ZN4zeek6detail7trigger7Manager7ProcessEv", "zeek::detail::trigger::Manager::Process()", 0,
                    ZEEK},
    [F_TRIGGER_EVAL] = {"_ZN4zeek6detail7trigger7Trigger4EvalEv", "zeek::detail::trigger::Trigger::Eval()", 0,
                        ZEEK},
    /* A when condition's expression: the interpreter's, but with no
     * script frame on the stack, so kept. */
    [F_NAME_EVAL] = {"_ZNK4zeek6detail8NameExpr4EvalEPNS0_5FrameE",
                     "zeek::detail::NameExpr::Eval(zeek::detail::Frame*) const", 1, ZEEK},
    [F_STMTLIST_EXEC] = {"_ZN4zeek6detail8StmtList4ExecEPNS0_5FrameERNS0_12StmtFlowTypeE",
                         "zeek::detail::StmtList::Exec(" FLOW ")", 1, ZEEK},
    [F_IF_DOEXEC] = {"_ZN4zeek6detail6IfStmt6DoExecEPNS0_5FrameEPNS_3ValERNS0_12StmtFlowTypeE",
                     "zeek::detail::IfStmt::DoExec(zeek::detail::Frame*, zeek::Val*, zeek::detail::StmtFlowType&)",
                     1, ZEEK},
    [F_EXPRSTMT_EXEC] = {"_ZN4zeek6detail8ExprStmt4ExecEPNS0_5FrameERNS0_12StmtFlowTypeE",
                         "zeek::detail::ExprStmt::Exec(" FLOW ")", 1, ZEEK},
    [F_CALL_EVAL] = {"_ZNK4zeek6detail8CallExpr4EvalEPNS0_5FrameE",
                     "zeek::detail::CallExpr::Eval(zeek::detail::Frame*) const", 1, ZEEK},
    [F_ASSIGN_EVAL] = {"_ZNK4zeek6detail10AssignExpr4EvalEPNS0_5FrameE",
                       "zeek::detail::AssignExpr::Eval(zeek::detail::Frame*) const", 1, ZEEK},
    [F_ADD_EVAL] = {"_ZNK4zeek6detail7AddExpr4EvalEPNS0_5FrameE",
                    "zeek::detail::AddExpr::Eval(zeek::detail::Frame*) const", 1, ZEEK},
    [F_BINARY_FOLD] = {"_ZNK4zeek6detail10BinaryExpr4FoldEPNS_3ValES3_",
                       "zeek::detail::BinaryExpr::Fold(zeek::Val*, zeek::Val*) const", 1, ZEEK},
    [F_INDEX_ASSIGN] = {"_ZN4zeek6detail9IndexExpr6AssignEPNS0_5FrameENS_12IntrusivePtrINS_3ValEEE",
                        "zeek::detail::IndexExpr::Assign(zeek::detail::Frame*, zeek::IntrusivePtr<zeek::Val>)",
                        1, ZEEK},
    [F_TABLE_ASSIGN] = {"_ZN4zeek8TableVal6AssignENS_12IntrusivePtrINS_3ValEEES3_bPb",
                        "zeek::TableVal::Assign(zeek::IntrusivePtr<zeek::Val>, zeek::IntrusivePtr<zeek::Val>, "
                        "bool, bool*)",
                        0, ZEEK},
    [F_MAKE_HASH_KEY] = {"_ZNK4zeek6detail13CompositeHash11MakeHashKeyERKNS_3ValEb",
                         "zeek::detail::CompositeHash::MakeHashKey(zeek::Val const&, bool) const", 0, ZEEK},
    [F_RB_INSERT] = {"_ZNSt8_Rb_treeINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt4pairIKS5_S5_"
                     "ESt10_Select1stIS8_ESt4lessIS5_ESaIS8_EE16_M_insert_uniqueIS8_EES6_ISt17_Rb_tree_"
                     "iteratorIS8_EbEOT_",
                     "std::pair<std::_Rb_tree_iterator<" PAIR " >, bool> std::_Rb_tree<" STR ", " PAIR
                     ", std::_Select1st<" PAIR " >, std::less<" STR " >, std::allocator<" PAIR
                     " > >::_M_insert_unique<" PAIR " >(" PAIR "&&)",
                     0, ZEEK},
    [F_MALLOC] = {"malloc", "malloc", 0, LIBC},
    [F_INTRUSIVE_DTOR] = {"_ZN4zeek12IntrusivePtrINS_3ValEED1Ev", "zeek::IntrusivePtr<zeek::Val>::~IntrusivePtr()",
                          0, ZEEK},
    [F_UNREF] = {"_ZN4zeek5UnrefEPNS_3ObjE", "zeek::Unref(zeek::Obj*)", 0, ZEEK},
    [F_TABLE_DTOR] = {"_ZN4zeek8TableValD1Ev", "zeek::TableVal::~TableVal()", 0, ZEEK},
    [F_FREE] = {"free", "free", 0, LIBC},
    [F_SORT_BIF] = {"_ZN4zeek7BifFunc8sort_bifEPNS_6detail5FrameEPKSt6vectorINS_12IntrusivePtrINS_3ValEEESaIS7_EE",
                    "zeek::BifFunc::sort_bif(zeek::detail::Frame*, " ARGS " const*)", 0, ZEEK},
    [F_INTROSORT] = {"_ZSt16__introsort_loopIN9__gnu_cxx17__normal_iteratorIPPN4zeek3ValESt6vectorIS4_SaIS4_"
                     "EEEElNS0_5__ops15_Iter_comp_iterIZNS2_6detail9sort_valsERS8_EUlS4_S4_E_EEEvT_SG_T0_T1_",
                     "void std::__introsort_loop<" VALS ", long, __gnu_cxx::__ops::_Iter_comp_iter<" LAMBDA
                     "> >(" VALS ", " VALS ", long, __gnu_cxx::__ops::_Iter_comp_iter<" LAMBDA ">)",
                     0, ZEEK},
    [F_COMP_ITER] = {"_ZN9__gnu_cxx5__ops15_Iter_comp_iterIZN4zeek6detail9sort_valsERSt6vectorIPNS2_3ValESaIS6_"
                     "EEEUlS6_S6_E_EclINS_17__normal_iteratorIPS6_S8_EESF_EEbT_T0_",
                     "bool __gnu_cxx::__ops::_Iter_comp_iter<" LAMBDA ">::operator()<" VALS ", " VALS " >(" VALS
                     ", " VALS ")",
                     0, ZEEK},
    /* The comparator's call, before its Frame is on Zeek's call stack:
     * the interpreter's, but under a BiF's C++, so kept. */
    [F_INVOKE] = {"_ZNK4zeek6detail10ScriptFunc6InvokeEPSt6vectorINS_12IntrusivePtrINS_3ValEEESaIS5_EEPNS0_5FrameE",
                  "zeek::detail::ScriptFunc::Invoke(" ARGS "*, zeek::detail::Frame*) const", 1, ZEEK},
    [F_SET_ELEMENT] = {"_ZN4zeek6detail5Frame10SetElementEiNS_12IntrusivePtrINS_3ValEEE",
                       "zeek::detail::Frame::SetElement(int, zeek::IntrusivePtr<zeek::Val>)", 1, ZEEK},
};

/* Source files of the LINES records: SYMBOL ids after the functions'. */
enum { S_EXPR_CC = NFNS, S_INTRUSIVE_H, S_OBJ_H, NSYMBOLS };
static const char *const FILES[NSYMBOLS - NFNS] = {"/usr/src/zeek/src/Expr.cc", "/usr/src/zeek/src/IntrusivePtr.h",
                                                   "/usr/src/zeek/src/Obj.h"};

/* A PC: the function it is in, and the functions inlined there,
 * outermost first (DWARF's inlined instances). */
typedef struct pc {
    int fn;
    int ninlined;
    int inlined[2];
} pc;

static const struct part {
    int n;
    pc pcs[GEN_NATIVE_MAX_PART];
} PARTS[GN_NPARTS] = {
    [GN_ENTRY] = {7, {{F_START}, {F_LIBC_START_MAIN}, {F_MAIN}, {F_RUN_LOOP}, {F_DRAIN}, {F_DISPATCH},
                      {F_HANDLER_CALL}}},
    [GN_TRIGGER] = {7, {{F_START}, {F_LIBC_START_MAIN}, {F_MAIN}, {F_RUN_LOOP}, {F_TRIGGERS}, {F_TRIGGER_EVAL},
                        {F_NAME_EVAL, 2, {F_INTRUSIVE_DTOR, F_UNREF}}}},
    [GN_PLUMBING] = {5, {{F_STMTLIST_EXEC}, {F_IF_DOEXEC}, {F_STMTLIST_EXEC}, {F_EXPRSTMT_EXEC}, {F_CALL_EVAL}}},
    [GN_TAIL_EVAL] = {5, {{F_STMTLIST_EXEC}, {F_EXPRSTMT_EXEC}, {F_ASSIGN_EVAL}, {F_ADD_EVAL}, {F_BINARY_FOLD}}},
    [GN_TAIL_TABLE] = {8, {{F_STMTLIST_EXEC}, {F_EXPRSTMT_EXEC}, {F_ASSIGN_EVAL}, {F_INDEX_ASSIGN},
                           {F_TABLE_ASSIGN}, {F_MAKE_HASH_KEY}, {F_RB_INSERT}, {F_MALLOC}}},
    [GN_TAIL_INLINED] = {5, {{F_STMTLIST_EXEC}, {F_EXPRSTMT_EXEC}, {F_NAME_EVAL, 2, {F_INTRUSIVE_DTOR, F_UNREF}},
                             {F_TABLE_DTOR}, {F_FREE}}},
    [GN_TAIL_CALLBACK] = {5, {{F_SORT_BIF}, {F_INTROSORT}, {F_COMP_ITER}, {F_INVOKE}, {F_SET_ELEMENT}}},
};

static int same_pc(const pc *a, const pc *b)
{
    return a->fn == b->fn && a->ninlined == b->ninlined && a->inlined[0] == b->inlined[0] &&
           a->inlined[1] == b->inlined[1];
}

/* Each distinct PC is one LOCATION, numbered in the order the parts list
 * them: a PC in two parts (StmtList::Exec under every script frame, the
 * NameExpr::Eval of a when condition and of a statement) is one location,
 * as it is one address in a recording. *first: whether this is where it
 * is listed first. */
static uint64_t location_of(gen_native_part part, int k, int *first)
{
    uint64_t id = 0;
    for (int p = 0; p < GN_NPARTS; p++)
        for (int j = 0; j < PARTS[p].n; j++) {
            const pc *at = &PARTS[p].pcs[j];
            int seen = 0;
            for (int q = 0; q <= p && !seen; q++)
                for (int i = 0; i < (q == p ? j : PARTS[q].n) && !seen; i++)
                    seen = same_pc(&PARTS[q].pcs[i], at);
            if (same_pc(at, &PARTS[part].pcs[k]) && !seen) {
                if (first)
                    *first = p == (int)part && j == k;
                return id;
            }
            id += !seen;
        }
    return id; /* not reached: part's own PC is listed */
}

int gen_native_write(zs_writer *wr, uint32_t pid, zs_error *err)
{
    for (int m = 0; m < NMODULES; m++)
        if (zs_writer_module(wr, pid, &MODULES[m], err))
            return -1;
    for (int f = 0; f < NSYMBOLS; f++)
        if (zs_writer_symbol(wr, pid, (uint64_t)f, f < NFNS ? FNS[f].symbol : FILES[f - NFNS], err))
            return -1;
    for (int p = 0; p < GN_NPARTS; p++)
        for (int k = 0; k < PARTS[p].n; k++) {
            const pc *at = &PARTS[p].pcs[k];
            int first;
            uint64_t id = location_of((gen_native_part)p, k, &first);
            if (!first)
                continue;
            zs_native_location l = {id, (uint64_t)FNS[at->fn].module + 1, 0x1000 + id * 0x40, (uint64_t)at->fn};
            if (zs_writer_location(wr, pid, &l, err))
                return -1;
            if (!at->ninlined)
                continue;
            /* Innermost first: the PC's line in the innermost inlined
             * function, then each call site in its caller. */
            zs_native_lines lines = {id, (size_t)at->ninlined + 1, {{0}}};
            static const int FILE_OF[NFNS] = {[F_UNREF] = S_OBJ_H, [F_INTRUSIVE_DTOR] = S_INTRUSIVE_H};
            for (int j = 0; j < at->ninlined; j++) {
                int fn = at->inlined[at->ninlined - 1 - j];
                lines.line[j] = (zs_native_line){(uint64_t)fn, (uint64_t)FILE_OF[fn], 40 + (uint64_t)j};
            }
            lines.line[at->ninlined] = (zs_native_line){(uint64_t)at->fn, S_EXPR_CC, 380};
            if (zs_writer_lines(wr, pid, &lines, err))
                return -1;
        }
    return 0;
}

size_t gen_native_frames(gen_native_part part, zs_frame *out)
{
    for (int k = 0; k < PARTS[part].n; k++)
        out[k] = zs_native_frame(location_of(part, k, NULL));
    return (size_t)PARTS[part].n;
}

static void append(char *text, size_t cap, const char *name)
{
    size_t len = strlen(text);
    if (len + 1 + strlen(name) + 1 > cap)
        return; /* the caller sized it: a test tool */
    if (len)
        text[len++] = ';';
    strcpy(text + len, name);
}

/* Whether every function at pc is the interpreter's. */
static int interpreter_pc(const pc *at)
{
    for (int j = 0; j < at->ninlined; j++)
        if (!FNS[at->inlined[j]].interpreter)
            return 0;
    return FNS[at->fn].interpreter;
}

void gen_native_names(gen_native_part part, int hide_leading_interpreter, char *text, size_t cap)
{
    int hiding = hide_leading_interpreter;
    for (int k = 0; k < PARTS[part].n; k++) {
        const pc *at = &PARTS[part].pcs[k];
        /* A PC is hidden whole or shown whole: one pprof Location. */
        hiding = hiding && interpreter_pc(at);
        if (hiding)
            continue;
        append(text, cap, FNS[at->fn].name);
        for (int j = 0; j < at->ninlined; j++)
            append(text, cap, FNS[at->inlined[j]].name);
    }
}

int gen_native_all_interpreter(gen_native_part part)
{
    for (int k = 0; k < PARTS[part].n; k++)
        if (!interpreter_pc(&PARTS[part].pcs[k]))
            return 0;
    return 1;
}

gen_native_part gen_native_tail(int builtin, uint64_t which)
{
    static const gen_native_part SCRIPT_TAILS[] = {GN_TAIL_EVAL, GN_TAIL_TABLE, GN_TAIL_INLINED};
    return builtin ? GN_TAIL_CALLBACK : SCRIPT_TAILS[which % 3];
}
