/* SPDX-License-Identifier: BSD-3-Clause */
/* conv_shorten: real demangled libstdc++ and Zeek names (mangled as g++
 * emits them, demangled by conv_demangle as the converter does) shortened
 * for labels: template arguments and parameters elided, return types
 * dropped, operators, lambdas and anonymous namespaces intact; names that
 * are no C++ names unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "names/conv_demangle.h"
#include "output/conv_shorten.h"

static void expect(const char *name, const char *want)
{
    char *got = conv_short_name(name);
    CHECK(got != NULL);
    if (got && strcmp(got, want))
        fprintf(stderr, "shortening \"%s\":\n   got \"%s\"\n  want \"%s\"\n", name, got, want);
    CHECK(got && !strcmp(got, want));
    free(got);
}

/* The same for a mangled symbol, demangled first. */
static void expect_mangled(const char *mangled, const char *want)
{
    char *name = conv_demangle(mangled);
    CHECK(name && strcmp(name, mangled)); /* it is a C++ name */
    if (name)
        expect(name, want);
    free(name);
}

int main(void)
{
    /* std::map<std::string, std::string>::insert's tree: a return type
     * (std::pair<iterator, bool>) and 700 characters of arguments. */
    expect_mangled("_ZNSt8_Rb_treeINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt4pairIKS5_S5_"
                   "ESt10_Select1stIS8_ESt4lessIS5_ESaIS8_EE16_M_insert_uniqueIS8_EES6_ISt17_Rb_tree_"
                   "iteratorIS8_EbEOT_",
                   "std::_Rb_tree<...>::_M_insert_unique<...>");
    /* A pointer return type, then operator() of a nested class with its
     * own template arguments. */
    expect_mangled("_ZNKSt8_Rb_treeINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt4pairIKS5_S5_"
                   "ESt10_Select1stIS8_ESt4lessIS5_ESaIS8_EE11_Alloc_nodeclIS8_EEPSt13_Rb_tree_nodeIS8_"
                   "EOT_",
                   "std::_Rb_tree<...>::_Alloc_node::operator()<...>");
    /* std::unordered_map<std::string, int>::find's hashtable. */
    expect_mangled("_ZNKSt10_HashtableINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt4pairIKS5_iE"
                   "SaIS8_ENSt8__detail10_Select1stESt8equal_toIS5_ESt4hashIS5_ENSA_18_Mod_range_hashin"
                   "gENSA_20_Default_ranged_hashENSA_20_Prime_rehash_policyENSA_17_Hashtable_traitsILb1E"
                   "Lb0ELb1EEEE12_M_find_nodeEmRS7_m",
                   "std::_Hashtable<...>::_M_find_node");
    /* operator< of a template: the demangler's space before its arguments. */
    expect_mangled("_ZN9__gnu_cxxltIPPN4zeek3ValESt6vectorIS3_SaIS3_EEEEbRKNS_17__normal_iteratorIT_T0_EESD_",
                   "__gnu_cxx::operator< <...>");
    /* operator== and operator- with their arguments right after them. */
    expect_mangled("_ZN9__gnu_cxxeqIPPN4zeek3ValESt6vectorIS3_SaIS3_EEEEbRKNS_17__normal_iteratorIT_T0_EESD_",
                   "__gnu_cxx::operator==<...>");
    expect_mangled("_ZN9__gnu_cxxmiIPPN4zeek3ValESt6vectorIS3_SaIS3_EEEENS_17__normal_iteratorIT_T0_E15differe"
                   "nce_typeERKSB_SE_",
                   "__gnu_cxx::operator-<...>");
    /* std::sort's comparator: a lambda in a function, operator() with
     * template arguments. */
    expect_mangled("_ZN9__gnu_cxx5__ops15_Iter_comp_iterIZN4zeek6detail9sort_valsERSt6vectorIPNS2_3ValESaIS6_"
                   "EEEUlS6_S6_E_EclINS_17__normal_iteratorIPS6_S8_EESF_EEbT_T0_",
                   "__gnu_cxx::__ops::_Iter_comp_iter<...>::operator()<...>");
    /* std::function's call into a lambda of ins(). */
    expect_mangled("_ZNSt17_Function_handlerIFviEZ3insvEUliE_E9_M_invokeERKSt9_Any_dataOi",
                   "std::_Function_handler<...>::_M_invoke");
    expect_mangled("_ZNKSt8functionIFviEEclEi", "std::function<...>::operator()");
    /* A return type that is a lambda's reference. */
    expect_mangled("_ZNKSt9_Any_data9_M_accessIZ3insvEUliE_EERKT_v", "std::_Any_data::_M_access<...>");
    /* An anonymous namespace, and operator() in it. */
    expect_mangled("_ZN4zeek6detail12_GLOBAL__N_19helper_fnEi", "zeek::detail::(anonymous namespace)::helper_fn");
    expect_mangled("_ZNK4zeek6detail12_GLOBAL__N_16HelperclEi",
                   "zeek::detail::(anonymous namespace)::Helper::operator()");
    /* Zeek: the interpreter, a BiF, a table. */
    expect_mangled("_ZN4zeek6detail8StmtList4ExecEPNS0_5FrameERNS0_12StmtFlowTypeE", "zeek::detail::StmtList::Exec");
    expect_mangled("_ZNK4zeek6detail10ScriptFunc6InvokeEPSt6vectorINS_12IntrusivePtrINS_3ValEEESaIS5_EEPNS0_5FrameE",
                   "zeek::detail::ScriptFunc::Invoke");
    expect_mangled("_ZN4zeek7BifFunc12md5_hash_bifEPNS_6detail5FrameEPKSt6vectorINS_12IntrusivePtrINS_3ValEEESaIS7_EE",
                   "zeek::BifFunc::md5_hash_bif");
    expect_mangled("_ZN4zeek8TableVal6AssignENS_12IntrusivePtrINS_3ValEEES3_bPb", "zeek::TableVal::Assign");
    expect_mangled("_ZNK9__gnu_cxx17__normal_iteratorIPPN4zeek3ValESt6vectorIS3_SaIS3_EEEdeEv",
                   "__gnu_cxx::__normal_iterator<...>::operator*");

    /* Written out: the lambda in a function whose parameters say which
     * overload it is; operators the demangler writes with spaces or
     * brackets; an ABI tag; clone suffixes; a thunk. */
    expect("zeek::detail::sort_vals(std::vector<zeek::Val*, std::allocator<zeek::Val*> >&)::"
           "{lambda(zeek::Val*, zeek::Val*)#1}::operator()(zeek::Val*, zeek::Val*) const",
           "zeek::detail::sort_vals(...)::{lambda(...)#1}::operator()");
    expect("ins()::{lambda()#2}::operator()() const", "ins()::{lambda()#2}::operator()");
    expect("std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >"
           "(std::basic_ostream<char, std::char_traits<char> >&, char const*)",
           "std::operator<< <...>");
    expect("zeek::detail::operator<<(std::ostream&, zeek::detail::Key const&)", "zeek::detail::operator<<");
    expect("zeek::detail::operator<(zeek::detail::Key const&, zeek::detail::Key const&)", "zeek::detail::operator<");
    expect("zeek::ODesc::operator<<=(int)", "zeek::ODesc::operator<<=");
    expect("zeek::Val::operator->() const", "zeek::Val::operator->");
    expect("zeek::ListVal::operator[](int) const", "zeek::ListVal::operator[]");
    expect("operator new[](unsigned long)", "operator new[]");
    expect("operator delete(void*, unsigned long)", "operator delete");
    expect("zeek::IntrusivePtr<zeek::Val>::operator bool() const", "zeek::IntrusivePtr<...>::operator bool");
    expect("zeek::detail::Location::Describe[abi:cxx11]() const", "zeek::detail::Location::Describe");
    expect("zd::trace_stmt(zeek::detail::Stmt const*) [clone .isra.0]", "zd::trace_stmt");
    expect("zeek::detail::IfStmt::DoExec(zeek::detail::Frame*, zeek::Val*, zeek::detail::StmtFlowType&) [clone .cold]",
           "zeek::detail::IfStmt::DoExec");
    expect("non-virtual thunk to zeek::analyzer::tcp::TCP_Analyzer::Done()", "zeek::analyzer::tcp::TCP_Analyzer::Done");
    expect("std::vector<int, std::allocator<int> >::foo<>()", "std::vector<...>::foo<>");
    expect("{unnamed type#1}::operator()() const", "{unnamed type#1}::operator()");
    /* A name cut short (the unwinder's bound) inside an argument list. */
    expect("std::map<std::__cxx11::basic_string<char, std::char_tr", "std::map<...");

    /* Not C++: unchanged. */
    expect("main", "main");
    expect("clock_gettime@@GLIBC_2.17", "clock_gettime@@GLIBC_2.17");
    expect("[vdso]", "[vdso]");
    expect("[spicy fiber]", "[spicy fiber]");
    expect("zeek::detail::hash_block", "zeek::detail::hash_block"); /* a DWARF name */
    expect("my_operator(int)", "my_operator");
    expect("", "");

    /* Fitting to a bound keeps both ends, cuts between characters. */
    char *fit = conv_fit_name("std::_Hashtable<...>::_M_find_node", 20);
    CHECK(fit && !strcmp(fit, "std::_Ha...find_node"));
    free(fit);
    fit = conv_fit_name("short", 20);
    CHECK(fit && !strcmp(fit, "short"));
    free(fit);
    fit = conv_fit_name("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 5); /* six e-acute, two bytes each */
    CHECK(fit && !strcmp(fit, "\xc3\xa9...\xc3\xa9"));
    free(fit);
    CHECK_MAIN_END;
}
