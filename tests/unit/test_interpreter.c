/* SPDX-License-Identifier: BSD-3-Clause */
/* conv_interpreter: Zeek's interpreter functions recognised by their
 * names as a --native recording gives them (symbols demangled, with their
 * parameters; DWARF names of inlined functions without; clone suffixes),
 * in Zeek 8.2's spelling and 3.x's global namespace; everything a script
 * calls on (BiFs, values, tables, the event manager, libstdc++, the test
 * double's own helpers) is not the interpreter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "names/conv_demangle.h"
#include "names/conv_interpreter.h"

static void expect(const char *name, int want)
{
    int got = conv_is_interpreter_function(name);
    if (got != want)
        fprintf(stderr, "\"%s\": %s, want %s\n", name, got ? "interpreter" : "not", want ? "interpreter" : "not");
    CHECK(got == want);
}

/* The same for a mangled symbol (as g++ emits Zeek 8.2's), demangled as
 * the converter does. */
static void expect_mangled(const char *mangled, int want)
{
    char *name = conv_demangle(mangled);
    CHECK(name && strcmp(name, mangled));
    if (name)
        expect(name, want);
    free(name);
}

int main(void)
{
    /* Statements, expressions, calls, locals, ZAM: Zeek 8.2's symbols. */
    expect_mangled("_ZN4zeek6detail8StmtList4ExecEPNS0_5FrameERNS0_12StmtFlowTypeE", 1);
    expect_mangled("_ZN4zeek6detail8ExprStmt4ExecEPNS0_5FrameERNS0_12StmtFlowTypeE", 1);
    expect_mangled("_ZN4zeek6detail6IfStmt6DoExecEPNS0_5FrameEPNS_3ValERNS0_12StmtFlowTypeE", 1);
    expect_mangled("_ZN4zeek6detail7ForStmt6DoExecEPNS0_5FrameEPNS_3ValERNS0_12StmtFlowTypeE", 1);
    expect_mangled("_ZNK4zeek6detail10SwitchStmt18FindCaseLabelMatchEPKNS_3ValE", 1);
    expect_mangled("_ZNK4zeek6detail8CallExpr4EvalEPNS0_5FrameE", 1);
    expect_mangled("_ZNK4zeek6detail8NameExpr4EvalEPNS0_5FrameE", 1);
    expect_mangled("_ZNK4zeek6detail10AssignExpr4EvalEPNS0_5FrameE", 1);
    expect_mangled("_ZNK4zeek6detail7AddExpr4EvalEPNS0_5FrameE", 1);
    expect_mangled("_ZNK4zeek6detail9IndexExpr4EvalEPNS0_5FrameE", 1);
    expect_mangled("_ZNK4zeek6detail9IndexExpr4FoldEPNS_3ValES3_", 1);
    expect_mangled("_ZN4zeek6detail9IndexExpr6AssignEPNS0_5FrameENS_12IntrusivePtrINS_3ValEEE", 1);
    expect_mangled("_ZNK4zeek6detail10BinaryExpr4FoldEPNS_3ValES3_", 1);
    expect_mangled("_ZNK4zeek6detail10BinaryExpr10StringFoldEPNS_3ValES3_", 1);
    expect_mangled("_ZN4zeek6detail9eval_listEPNS0_5FrameEPKNS0_8ListExprE", 1);
    expect_mangled("_ZNK4zeek6detail10ScriptFunc6InvokeEPSt6vectorINS_12IntrusivePtrINS_3ValEEESaIS5_EEPNS0_5FrameE", 1);
    expect_mangled("_ZNK4zeek6detail11BuiltinFunc6InvokeEPSt6vectorINS_12IntrusivePtrINS_3ValEEESaIS5_EEPNS0_5FrameE", 1);
    expect_mangled("_ZN4zeek6detail5Frame10SetElementEiNS_12IntrusivePtrINS_3ValEEE", 1);
    expect_mangled("_ZN4zeek6detail5Frame5ResetEi", 1);
    expect_mangled("_ZN4zeek6detail5ZBody4ExecEPNS0_5FrameERNS0_12StmtFlowTypeE", 1);
    /* The test double's spelling (const, no flow argument): the same names. */
    expect("zeek::detail::StmtList::Exec(zeek::detail::Frame*) const", 1);
    expect("zeek::detail::Stmt::Exec(zeek::detail::Frame*) const", 1);
    /* DWARF names of inlined instances, and clones. */
    expect("zeek::detail::NameExpr::Eval", 1);
    expect("zeek::detail::IfStmt::DoExec(zeek::detail::Frame*, zeek::Val*, zeek::detail::StmtFlowType&) [clone .cold]", 1);
    expect("zeek::detail::ExprStmt::Exec [clone .cold]", 1);
    /* Zeek 3.x: the global namespace, BroFunc. */
    expect("StmtList::Exec(Frame*, stmt_flow_type&)", 1);
    expect("CallExpr::Eval(Frame*) const", 1);
    expect("BroFunc::Call(std::vector<IntrusivePtr<Val>, std::allocator<IntrusivePtr<Val> > >*, Frame*) const", 1);
    expect("BuiltinFunc::Call(val_list*, Frame*) const", 1);

    /* What the interpreter calls: kept. */
    expect_mangled("_ZN4zeek7BifFunc12md5_hash_bifEPNS_6detail5FrameEPKSt6vectorINS_12IntrusivePtrINS_3ValEEESaIS7_EE", 0);
    expect_mangled("_ZN4zeek8TableVal6AssignENS_12IntrusivePtrINS_3ValEEES3_bPb", 0);
    expect_mangled("_ZN4zeek8TableVal13FindOrDefaultERKNS_12IntrusivePtrINS_3ValEEE", 0);
    expect_mangled("_ZN4zeek3Val5CloneEv", 0);
    expect_mangled("_ZNK4zeek6detail13CompositeHash11MakeHashKeyERKNS_3ValEb", 0);
    expect_mangled("_ZN4zeek8EventMgr5DrainEv", 0);
    expect_mangled("_ZN4zeek6detail10hash_blockEl", 0);
    expect_mangled("_ZNSt8_Rb_treeINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt4pairIKS5_S5_"
                   "ESt10_Select1stIS8_ESt4lessIS5_ESaIS8_EE16_M_insert_uniqueIS8_EES6_ISt17_Rb_tree_"
                   "iteratorIS8_EbEOT_",
                   0);
    /* Other members of the interpreter's classes are not its running. */
    expect("zeek::detail::ScriptFunc::CreateCaptures(zeek::detail::Frame*)", 0);
    expect("zeek::detail::CallExpr::ExprDescribe(zeek::ODesc*) const", 0);
    expect("zeek::detail::Frame::Clone() const", 0);
    /* Another namespace, or a class that only ends like one. */
    expect("hilti::rt::detail::StmtList::Exec()", 0);
    expect("zeek::detail::StmtListener::Exec()", 0);
    expect("zeek::plugin::Demo::Analyzer::DeliverPacket(long)", 0);
    /* The test double's own helpers, and the C of libc. */
    expect("zd::run_script(zeek::detail::ScriptFunc const*, zeek::detail::Frame*)", 0);
    expect("exec_stmt", 0);
    expect("zd::spin(long)", 0);
    expect("malloc", 0);
    expect("[unknown]", 0);
    expect("", 0);
    CHECK_MAIN_END;
}
