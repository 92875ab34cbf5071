// A Zeek plugin as zeek-double loads it with --plugin: a shared library
// dlopen'ed while the process runs (after a recording may have started),
// whose packet analysis is native work outside any script frame. Built
// -O2 without frame pointers, as the double.
#include <cstdint>
#include <ctime>

namespace zeek::plugin::Demo {

static int64_t now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Analyzer {
	__attribute__((noinline)) static void DeliverPacket(int64_t ns)
	{
		const int64_t start = now_ns();
		while ( now_ns() - start < ns ) {
		}
		asm volatile("" ::: "memory");
	}
};

}   // namespace zeek::plugin::Demo

extern "C" void zeek_plugin_demo_deliver(int64_t ns)
{
	zeek::plugin::Demo::Analyzer::DeliverPacket(ns);
}
