/* SPDX-License-Identifier: BSD-3-Clause */
// A Zeek plugin as zeek-double loads it with --plugin: a shared library
// dlopen'ed while the process runs (after a recording may have started),
// whose packet analysis is native work outside any script frame. Built
// -O2 without frame pointers, as the double, and linked stripped (-s):
// like a packaged library on a sensor, its exported functions keep their
// names (.dynsym) and its local ones have none (no .symtab).
#include <cstdint>
#include <ctime>

namespace zeek::plugin::Demo {

static int64_t now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Most of the analyzer's time, in a local function no symbol names once
// the library is stripped: native frames name it after its module,
// [zeek-plugin-demo.so], not by its address.
__attribute__((noinline)) static uint64_t checksum(uint64_t x)
{
	for ( int i = 0; i < 2000; ++i ) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		asm volatile("" : "+r"(x));   // one step at a time: no closed form, no vectors
	}
	return x;
}

static volatile uint64_t sink;

struct Analyzer {
	__attribute__((noinline)) static void DeliverPacket(int64_t ns)
	{
		const int64_t start = now_ns();
		uint64_t x = sink;
		while ( now_ns() - start < ns )
			x = checksum(x);
		sink = x;
	}
};

}   // namespace zeek::plugin::Demo

extern "C" void zeek_plugin_demo_deliver(int64_t ns)
{
	zeek::plugin::Demo::Analyzer::DeliverPacket(ns);
}
