/* SPDX-License-Identifier: BSD-3-Clause */
// The smallest zeek-like executable for the ELF and DWARF fuzz seeds
// (make_elf_corpus.py): the test double's interpreter classes and exported
// globals of one generation (-DZEEK_GEN=30, 80 or 82), and nothing else.
#if ZEEK_GEN == 30
#include "layout_zeek30.h"
#else
#include "layout_zeek8.h"
#endif
#include <vector>
#if ZEEK_GEN == 30
std::vector<CallInfo> call_stack;
std::vector<Frame*> g_frame_stack;
double network_time = 0.0;
char version[] = "3.0.1";
#else
namespace zeek {
namespace detail {
std::vector<CallInfo> call_stack;
}
namespace run_state {
double network_time = 0.0;
}
}
#if ZEEK_GEN == 80
std::vector<zeek::detail::Frame*> g_frame_stack;
char version[] = "8.0.10";
#else
char version[] = "8.2.2";
#endif
#endif
int main() { return version[0]; }
