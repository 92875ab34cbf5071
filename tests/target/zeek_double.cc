/* SPDX-License-Identifier: BSD-3-Clause */
// zeek_double.cc - zeek-double, a TEST DOUBLE of Zeek's script interpreter for
// zeek-spy's tests. This is NOT Zeek and contains no Zeek code.
//
// Zeek is not packaged for the machines zeek-spy is tested on, so the
// end-to-end tests profile this program instead. Compiled with ZEEK_GEN = 30,
// 80 or 82, it reproduces the interpreter objects and exported globals of Zeek
// 3.0.1, 8.0.10 or 8.2.2 respectively (see layout_zeek30.h / layout_zeek8.h):
// the same class names, namespaces, member offsets and .dynsym symbol names
// that zeek-spy reads from a real zeek process.
//
// On top of those objects runs a minimal tree-walking "interpreter" with the
// call protocol of the mirrored generation (push CallInfo, push or create a
// Frame, set Frame::next_stmt per statement, pop on return) and a fixed,
// deterministic script workload: one event with two handler bodies in two
// files, five script functions with clearly different CPU shares, a BiF, call
// depth five, and idle time with an empty call stack.
//
// The double knows its own ground truth: every change of the innermost frame
// is timestamped and the elapsed wall time is charged to whatever was innermost
// until then, so the per-function self times add up to the whole run. At exit
// it can write them to a file that the tests compare with the profile.
//
// stdout carries only a checksum of the executed statement trace, which is the
// same however long the program ran and whether or not it was profiled.

#if !defined(ZEEK_GEN)
#error "compile with -DZEEK_GEN=30, 80 or 82"
#elif ZEEK_GEN == 30
#include "layout_zeek30.h"
#elif ZEEK_GEN == 80 || ZEEK_GEN == 82
#include "layout_zeek8.h"
#else
#error "unsupported ZEEK_GEN"
#endif

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

// ---------------------------------------------------------------------------
// The exported globals, under the symbol names of the mirrored generation.
// The executable is linked with -rdynamic, so these land in .dynsym as they do
// in a real zeek.

#if ZEEK_GEN == 30
namespace iosource {
PktSrc::~PktSrc() = default;
pcap::PcapSource::~PcapSource() = default;
}   // namespace iosource
iosource::Manager* iosource_mgr = nullptr;
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
}   // namespace zeek
#ifdef ZEEK_DOUBLE_HAS_ZAM
namespace zeek::detail {
// Scope.cc's scope stack, the global scope first: a static, as in Zeek.
__attribute__((used)) static std::vector<IntrusivePtr<Scope>> scopes;
// Exported, as Zeek's: it finds the scope stack where that static's own
// symbol was stripped (strip --strip-all).
IntrusivePtr<Scope> global_scope() { return scopes.empty() ? IntrusivePtr<Scope>() : scopes.front(); }
}
#endif
namespace zeek {
namespace iosource {
PktSrc::~PktSrc() = default;
pcap::PcapSource::~PcapSource() = default;
}   // namespace iosource
iosource::Manager* iosource_mgr = nullptr;
}   // namespace zeek
#if ZEEK_GEN == 80
std::vector<zeek::detail::Frame*> g_frame_stack;
char version[] = "8.0.10";
#else
char version[] = "8.2.2";
#endif
#endif

namespace zd {

// ---------------------------------------------------------------------------
// Memory visibility for an outside reader.
//
// zeek-spy reads call_stack, the Frames and next_stmt from another process at
// arbitrary moments. Every store the interpreter makes to those structures is
// followed by a compiler barrier, so that by the time the program goes on to
// burn CPU, the structures in memory describe exactly what is running (x86 is
// TSO, so no hardware fence is needed for a reader that stops or samples us).

static inline void publish() { asm volatile("" ::: "memory"); }

static int64_t now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// ---------------------------------------------------------------------------
// Ground truth: wall time charged to whatever is innermost.

struct Slot {
	const char* kind;   // "idle", "function", "body" or "bif"
	std::string name;
	std::string file;
	int first_line;
	int64_t ns;
};

class Ledger {
public:
	int add(const char* kind, std::string name, std::string file, int first_line)
	{
		slots_.push_back(Slot{kind, std::move(name), std::move(file), first_line, 0});
		return int(slots_.size()) - 1;
	}

	void start(int slot)
	{
		cur_ = slot;
		last_ = now_ns();
		start_ = last_;
	}

	// Called at every change of the innermost frame (and once at the end).
	// Bookkeeping between two calls is charged to the frame that was innermost
	// while it ran, which is also what a sampler would have seen.
	void switch_to(int slot)
	{
		int64_t now = now_ns();
		slots_[cur_].ns += now - last_;
		last_ = now;
		cur_ = slot;
		if ( log_.capacity() > log_.size() )
			log_.push_back(Switch{now, slot});
	}

	// --switch-log: every switch kept (memory reserved up front, so logging
	// costs no allocation), written at exit. A sampler's samples can then be
	// checked one by one against what was innermost at their tick time.
	struct Switch {
		int64_t ns;
		int slot;
	};
	void keep_switches(size_t n) { log_.reserve(n); }
	const std::vector<Switch>& switches() const { return log_; }

	int current() const { return cur_; }
	int64_t running_ns() const { return now_ns() - start_; }
	// Up to the last switch: after the final switch_to(), the whole run.
	int64_t elapsed_ns() const { return last_ - start_; }
	const std::vector<Slot>& slots() const { return slots_; }

private:
	std::vector<Slot> slots_;
	std::vector<Switch> log_;
	int cur_ = 0;
	int64_t last_ = 0;
	int64_t start_ = 0;
};

static Ledger ledger;
static int idle_slot;

// ---------------------------------------------------------------------------
// The statement trace: FNV-1a over what the interpreter executes, read back
// from the interpreter objects themselves. Identical for every iteration.

static uint64_t trace = 0;

static void trace_mix(const void* data, size_t len)
{
	const unsigned char* p = static_cast<const unsigned char*>(data);
	for ( size_t i = 0; i < len; ++i ) {
		trace ^= p[i];
		trace *= 0x100000001b3ULL;
	}
}

static void trace_mix_str(const char* s) { trace_mix(s, strlen(s)); }

static void trace_mix_int(int64_t v) { trace_mix(&v, sizeof v); }

static void trace_stmt(const Stmt* s)
{
	trace_mix_str(s->location->filename);
	trace_mix_int(s->location->first_line);
	trace_mix_int(int64_t(call_stack.size()));
}

// ---------------------------------------------------------------------------
// Connection sizes. If every iteration took the same time, a profiler sampling
// at a fixed rate whose period is near a multiple of the iteration length would
// hit the same phase of the workload over and over, and its profile would be
// wrong through no fault of its own. Real traffic is not periodic; the double
// imitates that by scaling all work of an iteration, idle time included, by a
// factor in [0.5, 1.5) drawn from a fixed pseudo-random sequence. The expected
// shares do not change, and neither does the executed statement trace.

static uint64_t size_state = 0x9e3779b97f4a7c15ULL;
static double conn_scale = 1.0;

static void next_connection_size()
{
	// xorshift64: deterministic, so every run sees the same sequence.
	size_state ^= size_state << 13;
	size_state ^= size_state >> 7;
	size_state ^= size_state << 17;
	conn_scale = 0.5 + double(size_state >> 11) * 0x1.0p-53;
}

// Busy-waits on the CPU for `ns` scaled by the connection size; the time is
// charged by the ledger at the next switch.
static void spin(int64_t ns)
{
	const int64_t start = now_ns();
	const int64_t scaled = int64_t(double(ns) * conn_scale);
	while ( now_ns() - start < scaled ) {
	}
}

// --slow-after S --slow-for S: DNS::log_reply's statements cost this many
// times more for a while, as a script that turns expensive.
static const int kSlowFactor = 12;
static bool slow_now = false;
static std::vector<const SpinStmt*> slowable;

static bool is_slowable(const SpinStmt* s)
{
	for ( const SpinStmt* x : slowable )
		if ( x == s )
			return true;
	return false;
}

// ---------------------------------------------------------------------------
// The script workload, as Zeek would have parsed it from these files. Lines
// are consistent: each statement lies inside its body's first..last_line.

struct StmtDef {
	int line;
	int spin_us;          // > 0: an expensive statement burning this long
	const char* callee;   // otherwise: a call of this function
	int64_t arg_us;       // work asked of the callee (BiFs only)
};

static StmtDef spin_at(int line, int us) { return StmtDef{line, us, nullptr, 0}; }
static StmtDef call_at(int line, const char* callee, int64_t arg_us = 0)
{
	return StmtDef{line, 0, callee, arg_us};
}

struct BodyDef {
	const char* file;
	int first_line;
	int last_line;
	std::vector<StmtDef> stmts;
};

struct FuncDef {
	const char* name;
	bool is_event;
	std::vector<BodyDef> bodies;
};

static const char kEventDeclFile[] = "base/bif/event.bif.zeek";
static const int kEventDeclLine = 227;

// Per iteration ("connection"): on average about 3.2 ms of script time plus
// about 0.8 ms idle. Intended self shares: HTTP::parse_request 25 %,
// Conn::set_state 15 %, DNS::log_reply 10 %, Files::describe 7 %, md5_hash 7 %
// (two call sites), Site::is_local_addr 4 %, each connection_state_remove body
// 6 %, idle about 20 %. The deepest stack is connection_state_remove ->
// HTTP::parse_request -> Files::describe -> Site::is_local_addr -> md5_hash.
static std::vector<FuncDef> script_defs()
{
	return {
		{"connection_state_remove", true,
		 {{"base/protocols/http/main.zeek", 329, 341,
		   {spin_at(331, 140), call_at(334, "HTTP::parse_request"), spin_at(338, 100)}},
		  {"base/protocols/conn/main.zeek", 140, 156,
		   {spin_at(142, 120), call_at(145, "Conn::set_state"),
		    call_at(149, "DNS::log_reply"), spin_at(153, 120)}}}},
		{"HTTP::parse_request", false,
		 {{"base/protocols/http/utils.zeek", 41, 78,
		   {spin_at(44, 500), call_at(52, "Files::describe"), spin_at(61, 500)}}}},
		{"Files::describe", false,
		 {{"base/frameworks/files/main.zeek", 470, 489,
		   {spin_at(473, 280), call_at(481, "Site::is_local_addr")}}}},
		{"Site::is_local_addr", false,
		 {{"base/utils/site.zeek", 140, 152,
		   {spin_at(143, 160), call_at(147, "md5_hash", 200)}}}},
		{"Conn::set_state", false,
		 {{"base/protocols/conn/main.zeek", 212, 238,
		   {spin_at(215, 300), call_at(224, "md5_hash", 80), spin_at(231, 300)}}}},
		{"DNS::log_reply", false,
		 {{"base/protocols/dns/main.zeek", 388, 421,
		   {spin_at(392, 200), spin_at(405, 200)}}}},
	};
}

static const int kIdleUs = 750;   // usleep overshoots by ~50-100 us

}   // namespace zd

// A BiF's C++ body and a native callee chain under it, by names of the kind a
// real zeek exports: native frames of known names for zeek-spy's --native.
namespace zeek::detail {
__attribute__((noinline)) void hash_block(int64_t ns)
{
	zd::spin(ns);
	asm volatile("" ::: "memory");
}
__attribute__((noinline)) void hash_update(int64_t ns)
{
	hash_block(ns);
	asm volatile("" ::: "memory");
}
}   // namespace zeek::detail

#if ZEEK_GEN == 30
namespace BifFunc {
__attribute__((noinline)) void bro_md5_hash(int64_t ns)
#else
namespace zeek::BifFunc {
__attribute__((noinline)) void md5_hash_bif(int64_t ns)
#endif
{
	zeek::detail::hash_update(ns);
	asm volatile("" ::: "memory");
}
}

namespace zd {

static void md5_hash_body(int64_t ns)
{
#if ZEEK_GEN == 30
	BifFunc::bro_md5_hash(ns);
#else
	zeek::BifFunc::md5_hash_bif(ns);
#endif
}

static volatile sig_atomic_t stop_requested = 0;
static bool hang_requested = false;   // --hang: see bif_md5_hash
// -O ZAM: frames as ZAM-compiled bodies leave them. ZAM runs instructions,
// not statements, so Frame::next_stmt is never set; a call it makes still
// names its CallExpr (Frame::SetOnlyCall), which the callee's CallInfo keeps.
static bool zam_frames = false;
// --zam-chains: each ZAM instruction's location chains up through the calls
// it was inlined at to the body's own, as Zeek 7.0 has them (7.2-8.2 keep
// only the innermost function, as without this option).
static bool zam_chains = false;

// The BiF: its cost is proportional to the "data" it is given. With --hang,
// its call from Site::is_local_addr (200 us of data) never returns (until
// SIGTERM): a zeek stuck in a loop, five frames deep, for --dump.
static void bif_md5_hash(int64_t arg_us)
{
	trace_mix_str("md5_hash");
	trace_mix_int(arg_us);
	if ( hang_requested && arg_us == 200 ) {
		fprintf(stderr, "zeek-double: hanging in md5_hash\n");
		while ( ! stop_requested )
			spin(1000000);
	}
	md5_hash_body(arg_us * 1000);
}

struct World {
	const ScriptFunc* event = nullptr;   // connection_state_remove
	const ScriptFunc* deep = nullptr;    // --deep: the head of a call chain
};

// Filenames are shared, long-lived strings, as in Zeek's parser.
static const char* intern_filename(const char* name)
{
	static std::map<std::string, const char*> names;
	auto it = names.find(name);
	if ( it != names.end() )
		return it->second;
	const char* copy = strdup(name);
	names.emplace(name, copy);
	return copy;
}

static Location* new_location(const char* file, int first, int last)
{
	return new Location(intern_filename(file), first, last);
}

#ifdef ZEEK_DOUBLE_HAS_ZAM
// -O ZAM, as Zeek's script compiler does it: plain functions are inlined
// into their callers (their statements become the caller's instructions,
// each still naming its own function and line), and are not compiled on
// their own; events (see compile_zam for their handlers), BiFs and
// Conn::set_state (standing for a function too large to inline) stay calls,
// which push a CallInfo.
static bool zam_inlines(const FuncDef& d)
{
	return ! d.is_event && strcmp(d.name, "Conn::set_state") != 0;
}

static const FuncDef* def_of(const std::vector<FuncDef>& defs, const std::string& name)
{
	for ( const FuncDef& d : defs )
		if ( name == d.name )
			return &d;
	return nullptr;
}

static void compile_body(const std::vector<FuncDef>& defs, const std::map<std::string, Func*>& funcs,
                         const char* func_name, const BodyDef& b, const StmtList* list, int slot,
                         int depth, const std::shared_ptr<ZAMLocInfo>& parent,
                         std::vector<ZInst>& out, const char** label)
{
	// Zeek 7.2-8.2 label each instruction with the function ZAM last
	// entered while compiling the body (the body's own, or an inlined one),
	// also after that one returned; its line stays right. With
	// --zam-chains (7.0) each is labelled with its own function.
	const char* own = func_name;
	if ( zam_chains )
		label = &own;
	*label = func_name;
	for ( size_t k = 0; k < b.stmts.size(); ++k ) {
		const StmtDef& sd = b.stmts[k];
		ZInst z;
		z.stmt = list->stmts[k];
		z.gt_slot = slot;
		z.inline_depth = depth;
		auto loc = std::make_shared<Location>(intern_filename(b.file), sd.line, sd.line);
		z.loc = std::make_shared<ZAMLocInfo>(ZAMLocInfo{*label, {}, loc, parent});
		if ( sd.spin_us > 0 ) {
			z.op = OP_SPIN;
			z.spin_ns = int64_t(sd.spin_us) * 1000;
			out.push_back(z);
			continue;
		}
		z.callee = funcs.at(sd.callee);
		z.call = static_cast<const CallExpr*>(static_cast<const ExprStmt*>(z.stmt)->e);
		const FuncDef* callee = def_of(defs, sd.callee);
		if ( ! callee || ! zam_inlines(*callee) ) {
			z.op = OP_CALL;
			out.push_back(z);
			continue;
		}
		z.op = OP_INLINED_CALL;
		out.push_back(z);
		const auto* fn = static_cast<const ScriptFunc*>(z.callee);
		compile_body(defs, funcs, callee->name, callee->bodies[0],
		             static_cast<const StmtList*>(body_stmts(fn->bodies[0])), fn->gt_slots[0],
		             depth + 1, zam_chains ? z.loc : nullptr, out, label);
	}
}

// The global scope: every function's ID, and two globals that are not
// functions (one without a value).
static void build_global_scope(const std::map<std::string, Func*>& funcs)
{
	auto* global = new Scope();
	global->ordered_vars.emplace_back(new ID("Site::local_nets", nullptr));
	global->ordered_vars.emplace_back(new ID("HTTP::default_capture_password", new zeek::Val()));
	for ( const auto& [name, fn] : funcs )
		global->ordered_vars.emplace_back(new ID(fn->name.c_str(), new FuncVal(fn)));
	zeek::detail::scopes.emplace_back(global);
}

// An event's handlers are coalesced into one body, run by a Func of its own
// (CoalescedScriptFunc), as Zeek does unless ZEEK_NO_EH_COALESCENCE is set;
// each handler is also compiled on its own, as in Zeek.
static void compile_zam(const std::vector<FuncDef>& defs, const std::map<std::string, Func*>& funcs,
                        World& w)
{
	const bool coalesce = ! getenv("ZEEK_NO_EH_COALESCENCE");
	for ( const FuncDef& d : defs ) {
		if ( zam_inlines(d) )
			continue;
		auto* fn = static_cast<ScriptFunc*>(funcs.at(d.name));
		const bool coalesced = coalesce && d.is_event && d.bodies.size() > 1;
		std::vector<ZInst> merged;
		const char* label;
		Location* merged_loc = body_stmts(fn->bodies[0])->location;
		for ( size_t i = 0; i < d.bodies.size(); ++i ) {
			std::vector<ZInst> code;
			const auto* list = static_cast<const StmtList*>(body_stmts(fn->bodies[i]));
			compile_body(defs, funcs, d.name, d.bodies[i], list, fn->gt_slots[i], 0, nullptr, code,
			             &label);
			if ( coalesced ) /* each handler starts under the event's name */
				compile_body(defs, funcs, d.name, d.bodies[i], list, fn->gt_slots[i], 0, nullptr,
				             merged, &label);
			fn->bodies[i] = make_body(new ZBody(d.name, list->location, std::move(code)));
		}
		if ( ! coalesced )
			continue;
		auto* c = new CoalescedScriptFunc(fn);
		c->bodies.push_back(make_body(new ZBody(d.name, merged_loc, std::move(merged))));
		c->gt_slots.push_back(fn->gt_slots[0]);
		if ( w.event == fn )
			w.event = c;
	}
}
#endif

// Builds the objects once at startup and never frees them, like Zeek's parsed
// scripts; zeek-spy may resolve any of these addresses at any time.
static World build_world()
{
	std::map<std::string, Func*> funcs;
	const std::vector<FuncDef> defs = script_defs();

	auto* md5 = new BuiltinFunc("md5_hash", bif_md5_hash);
	funcs[md5->name] = md5;

	for ( const FuncDef& d : defs ) {
		Location* loc = d.is_event
			? new_location(kEventDeclFile, kEventDeclLine, kEventDeclLine)
			: new_location(d.bodies[0].file, d.bodies[0].first_line, d.bodies[0].last_line);
		funcs[d.name] = new ScriptFunc(d.name, loc);
	}

	World w;
	for ( const FuncDef& d : defs ) {
		auto* fn = static_cast<ScriptFunc*>(funcs.at(d.name));
		for ( const BodyDef& b : d.bodies ) {
			auto* list = new StmtList(new_location(b.file, b.first_line, b.last_line));
			for ( const StmtDef& s : b.stmts ) {
				Location* sloc = new_location(b.file, s.line, s.line);
				if ( s.spin_us > 0 ) {
					list->stmts.push_back(new SpinStmt(int64_t(s.spin_us) * 1000, sloc));
					if ( strcmp(d.name, "DNS::log_reply") == 0 )
						slowable.push_back(static_cast<const SpinStmt*>(list->stmts.back()));
				} else {
					auto* call = new CallExpr(funcs.at(s.callee), s.arg_us,
					                          new_location(b.file, s.line, s.line));
					list->stmts.push_back(new ExprStmt(call, sloc));
				}
			}
			fn->bodies.push_back(make_body(list));

			if ( d.is_event ) {
				std::string body_name = std::string(d.name) + " " + b.file + ":" +
				                        std::to_string(b.first_line);
				fn->gt_slots.push_back(ledger.add("body", body_name, b.file, b.first_line));
			} else {
				fn->gt_slots.push_back(ledger.add("function", d.name, b.file, b.first_line));
			}
		}
		if ( d.is_event )
			w.event = fn;
	}
	md5->gt_slot = ledger.add("bif", md5->name, "<builtin>", 0);
#ifdef ZEEK_DOUBLE_HAS_ZAM
	build_global_scope(funcs);
	if ( zam_frames )
		compile_zam(defs, funcs, w);
#endif
	return w;
}

// --deep N: N script functions Deep::f1 .. Deep::fN, each calling the next,
// the last one burning deep_ms: a stack deeper than the recorder's 1,024
// frames, run once before the workload.
static const ScriptFunc* build_deep_chain(int n, int ms)
{
	static const char* file = intern_filename("deep.zeek");
	const int slot = ledger.add("function", "Deep::chain", file, 1);
	ScriptFunc* next = nullptr;
	for ( int i = n; i >= 1; --i ) {
		auto* name = new std::string("Deep::f" + std::to_string(i));
		auto* fn = new ScriptFunc(name->c_str(), new_location(file, i * 10, i * 10 + 5));
		auto* list = new StmtList(new_location(file, i * 10, i * 10 + 5));
		Location* sloc = new_location(file, i * 10 + 2, i * 10 + 2);
		if ( next )
			list->stmts.push_back(new ExprStmt(new CallExpr(next, 0, sloc), sloc));
		else
			list->stmts.push_back(new SpinStmt(int64_t(ms) * 1000000, sloc));
		fn->bodies.push_back(make_body(list));
		fn->gt_slots.push_back(slot);
		next = fn;
	}
	return next;
}

// ---------------------------------------------------------------------------
// The interpreter.

static void invoke(const Func* func, const CallExpr* call);
#ifdef ZEEK_DOUBLE_HAS_ZAM
static inline void zam_spin(const ZInst& z);
static inline void zam_call(const ZInst& z);
static inline void zam_inlined_call(const ZInst& z);
#endif

// Statements run in Stmt::Exec, StmtList::Exec, ExprStmt::Exec and
// SpinStmt::Exec, calls in CallExpr::Eval (below, by Zeek's names): the
// interpreter, between two script frames and inside the innermost one. They
// charge no time of their own to the ground truth: whatever runs in them is
// the innermost script frame's, as in Zeek.
//
// An event with several handlers is one Func with several bodies; they run in
// order under the same CallInfo and Frame. Inlined into ScriptFunc::Invoke
// (through invoke_impl), as the bodies loop is part of it in Zeek's Func.cc:
// the script frame takes that activation's place, and no frame of the
// double's own lies between it and the first statement.
__attribute__((always_inline)) static inline void run_script(const ScriptFunc* fn, Frame* f)
{
	for ( size_t i = 0; i < fn->bodies.size(); ++i ) {
		ledger.switch_to(fn->gt_slots[i]);
		body_stmts(fn->bodies[i])->Exec(f);
	}
}

static void run_builtin(const BuiltinFunc* bif, const CallExpr* call)
{
	ledger.switch_to(bif->gt_slot);
	bif->func(call ? call->arg : 0);
}

#if ZEEK_GEN >= 82

// 8.1+ model: every call gets a Frame, and it is a local of this C++ function,
// so it lives on the native stack only while the call runs. CallInfo points at
// it; the callee is reached through frame->function. A BiF's Frame never gets
// a next_stmt; a script function's is null until its first statement starts.
// Inlined into ScriptFunc::Invoke / BuiltinFunc::Invoke, as in Zeek's Func.cc:
// the Frame is a local of the activation a native unwind names, so its address
// lies between that frame's SP and CFA (what a merge by address relies on).
__attribute__((always_inline)) static inline void invoke_impl(const Func* func,
                                                              const CallExpr* call)
{
	const int caller_slot = ledger.current();

	Frame frame(func, call);
	call_stack.push_back(CallInfo{call, &frame});
	publish();

	if ( func->kind == kScriptKind )
		run_script(static_cast<const ScriptFunc*>(func), &frame);
	else
		run_builtin(static_cast<const BuiltinFunc*>(func), call);

	call_stack.pop_back();
	publish();
	ledger.switch_to(caller_slot);
}

#else

// Up to 8.0: a call pushes a CallInfo naming the Func; a script function also
// gets a heap Frame on g_frame_stack, a BiF gets none. Inlined into
// ScriptFunc::Invoke / BuiltinFunc::Invoke (BroFunc::Call / BuiltinFunc::Call
// in 3.0) as on 8.1+.
//
// The Frame goes on before the CallInfo and comes off after it, with a barrier
// in between, so whenever call_stack names a script function its Frame is on
// g_frame_stack. What a reader can still catch, for a few instructions after a
// call starts, is a new Frame whose next_stmt is still null, as in Zeek.
__attribute__((always_inline)) static inline void invoke_impl(const Func* func, const CallExpr* call)
{
	const int caller_slot = ledger.current();

	if ( func->kind == kScriptKind ) {
		const auto* fn = static_cast<const ScriptFunc*>(func);
		auto* frame = new Frame(fn, nullptr);
		g_frame_stack.push_back(frame);
		publish();
		call_stack.push_back(CallInfo{call, func, nullptr});
		publish();

		run_script(fn, frame);

		call_stack.pop_back();
		publish();
		g_frame_stack.pop_back();
		publish();
		delete frame;
	} else {
		call_stack.push_back(CallInfo{call, func, nullptr});
		publish();

		run_builtin(static_cast<const BuiltinFunc*>(func), call);

		call_stack.pop_back();
		publish();
	}

	ledger.switch_to(caller_slot);
}

#endif

}   // namespace zd

// Zeek's interpreter entry points, by their real names: the C++ frames a native
// unwind sees once per script frame. noinline and no sibling call (the empty
// asm after the call), so each keeps its own frame at -O2.
#if ZEEK_GEN == 30
__attribute__((noinline)) void BroFunc::Call(const CallExpr* call) const
{
	zd::invoke_impl(this, call);
	asm volatile("" ::: "memory");
}
__attribute__((noinline)) void BuiltinFunc::Call(const CallExpr* call) const
{
	zd::invoke_impl(this, call);
	asm volatile("" ::: "memory");
}
#else
namespace zeek::detail {
__attribute__((noinline)) void ScriptFunc::Invoke(const CallExpr* call) const
{
	zd::invoke_impl(this, call);
	asm volatile("" ::: "memory");
}
__attribute__((noinline)) void BuiltinFunc::Invoke(const CallExpr* call) const
{
	zd::invoke_impl(this, call);
	asm volatile("" ::: "memory");
}
}   // namespace zeek::detail
#endif

// The interpreter by Zeek's names (Stmt::Exec, StmtList::Exec, ExprStmt::Exec,
// SpinStmt::Exec, CallExpr::Eval; global namespace in 3.x): noinline and no
// sibling call, so that a native unwind sees each of them, between two script
// frames and inside the innermost one. Stmt::Exec stands for Zeek's virtual
// call, which has no frame: inlined into its callers.
#if ZEEK_GEN != 30
namespace zeek::detail {
#endif
__attribute__((always_inline)) inline void Stmt::Exec(Frame* f) const
{
	switch ( tag ) {
	case STMT_LIST:
		static_cast<const StmtList*>(this)->Exec(f);
		break;

	case STMT_EXPR:
		static_cast<const ExprStmt*>(this)->Exec(f);
		break;

	case STMT_SPIN:
		static_cast<const SpinStmt*>(this)->Exec(f);
		break;
#ifdef ZEEK_DOUBLE_HAS_ZAM
	case STMT_ZAM: {
		StmtFlowType flow = FLOW_NEXT;
		const_cast<ZBody*>(static_cast<const ZBody*>(this))->Exec(f, flow);
		break;
	}
#else
	default:
		break;
#endif
	}
}
__attribute__((noinline)) void StmtList::Exec(Frame* f) const
{
	for ( Stmt* sub : stmts ) {
		if ( ! zd::zam_frames )
			f->next_stmt = sub;
		zd::publish();
		sub->Exec(f);
	}
	asm volatile("" ::: "memory");
}
// The double's own statement: it burns its CPU time in zd::spin, as a Zeek
// statement does in what it calls (a BiF, a table, malloc).
__attribute__((noinline)) void SpinStmt::Exec(Frame*) const
{
	zd::trace_stmt(this);
	zd::spin(zd::slow_now && zd::is_slowable(this) ? spin_ns * zd::kSlowFactor : spin_ns);
	asm volatile("" ::: "memory");
}
__attribute__((noinline)) void ExprStmt::Exec(Frame* f) const
{
	const auto* call = static_cast<const CallExpr*>(e);
	zd::trace_stmt(this);
	zd::trace_mix_str(call->callee->name.c_str());
	call->Eval(f);
	asm volatile("" ::: "memory");
}
__attribute__((noinline)) void CallExpr::Eval(Frame*) const
{
	zd::invoke(callee, this);
	asm volatile("" ::: "memory");
}
#ifdef ZEEK_DOUBLE_HAS_ZAM
ZBody::ZBody(std::string name, Location* body_loc, std::vector<ZInst> code)
	: Stmt(STMT_ZAM, body_loc), func_name(std::move(name))
{
	end_pc = unsigned(code.size());
	insts = new ZInst[end_pc];   // never freed: zeek-spy may read it at any time
	for ( unsigned i = 0; i < end_pc; ++i )
		insts[i] = code[i];
}
ZBody::~ZBody() { delete[] insts; }

// ZAM's instruction loop. Compiled as Zeek's is (-O2 and more, no frame
// pointer), each operation inlined into it as in Zeek's generated code, so
// that the current instruction lives wherever the compiler keeps it across
// the calls an operation makes (a callee-saved register, a stack slot): what
// zeek-spy has to find.
__attribute__((noinline, optimize("O2", "omit-frame-pointer"))) void
ZBody::Exec(Frame*, StmtFlowType& flow)
{
	for ( unsigned int pc = 0; pc < end_pc; ++pc ) {
		const ZInst& z = insts[pc];
		switch ( z.op ) {
		case OP_SPIN:
			zd::zam_spin(z);
			break;
		case OP_CALL:
			zd::zam_call(z);
			break;
		case OP_INLINED_CALL:
			zd::zam_inlined_call(z);
			break;
		}
	}
	flow = FLOW_NEXT;
	asm volatile("" ::: "memory");
}
#endif
#if ZEEK_GEN != 30
}   // namespace zeek::detail
#endif

namespace zd {

static void invoke(const Func* func, const CallExpr* call)
{
#if ZEEK_GEN == 30
	if ( func->kind == kScriptKind )
		static_cast<const ScriptFunc*>(func)->Call(call);
	else
		static_cast<const BuiltinFunc*>(func)->Call(call);
#else
	if ( func->kind == kScriptKind )
		static_cast<const ScriptFunc*>(func)->Invoke(call);
	else
		static_cast<const BuiltinFunc*>(func)->Invoke(call);
#endif
}

#ifdef ZEEK_DOUBLE_HAS_ZAM
// The statement trace mixes the depth a statement runs at: an inlined body
// runs at its caller's call_stack depth, so its inlining depth is added
// back, and -O ZAM traces what the interpreter traces.
static void trace_inst(const ZInst& z)
{
	trace_mix_str(z.stmt->location->filename);
	trace_mix_int(z.stmt->location->first_line);
	trace_mix_int(int64_t(call_stack.size()) + z.inline_depth);
}

__attribute__((always_inline)) static inline void zam_spin(const ZInst& z)
{
	ledger.switch_to(z.gt_slot);
	trace_inst(z);
	spin(z.spin_ns);
	asm volatile("" ::: "memory");
}

__attribute__((always_inline)) static inline void zam_call(const ZInst& z)
{
	ledger.switch_to(z.gt_slot);
	trace_inst(z);
	trace_mix_str(z.callee->name.c_str());
	invoke(z.callee, z.call);
	asm volatile("" ::: "memory");
}

// Where the interpreter would have called a function ZAM inlined: only the
// trace notes it.
__attribute__((always_inline)) static inline void zam_inlined_call(const ZInst& z)
{
	trace_inst(z);
	trace_mix_str(z.callee->name.c_str());
	asm volatile("" ::: "memory");
}
#endif

// ---------------------------------------------------------------------------
// The main loop: one connection per iteration.


static void on_stop_signal(int) { stop_requested = 1; }

struct Options {
	double seconds = 5.0;
	long iterations = 0;   // > 0: run exactly this many instead of a time limit
	const char* ground_truth = nullptr;
	const char* switch_log = nullptr;
	bool quiet = false;
	long unstoppable_ms = 0;   // > 0: once a second, cannot be stopped for this long
	long deep = 0;             // > 0: first run a call chain this deep for deep_ms
	long deep_ms = 1000;
	bool spicy_fiber = false;  // each iteration also runs a Spicy-like parser on a fiber
	const char* plugin = nullptr;   // dlopen'ed after 1 s; its analyzer runs each iteration
	bool plugin_unlink = false;     // and its file deleted once loaded
	const char* live = nullptr;     // an interface: one connection a packet (8.x)
	double slow_after = -1;         // then DNS::log_reply costs kSlowFactor times more
	double slow_for = 0;            // for this long
};

struct Result {
	long iterations = 0;
	double wall_seconds = 0.0;
	uint64_t checksum = 0;
	bool consistent = true;
};

static void block_uninterruptibly(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	pid_t child = vfork();
	if ( child == 0 ) {
		syscall(SYS_nanosleep, &ts, nullptr);
		_exit(0);
	}
	if ( child > 0 )
		waitpid(child, nullptr, 0);
}

// --spicy-fiber: a Spicy parser as Zeek 6+ runs it, on a fiber with a stack
// of its own (HILTI's runtime enters a fiber through the extern "C"
// __fiber_run_trampoline), outside any script frame. A sampled stack taken
// there does not lead back to main.
static ucontext_t main_context, fiber_context;
static int64_t fiber_work_ns;

}   // namespace zd

namespace hilti_demo {
__attribute__((noinline)) void parse_chunk(int64_t ns)
{
	zd::spin(ns);
	asm volatile("" ::: "memory");
}
}   // namespace hilti_demo

extern "C" __attribute__((noinline)) void __fiber_run_trampoline(void* args)
{
	(void)args;
	for ( ;; ) {   // resumed once per chunk, never returns
		hilti_demo::parse_chunk(zd::fiber_work_ns);
		swapcontext(&zd::fiber_context, &zd::main_context);
	}
}

namespace zd {

static void fiber_entry() { __fiber_run_trampoline(nullptr); }

static bool start_fiber()
{
	const size_t size = 256 << 10;
	void* stack = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if ( stack == MAP_FAILED || getcontext(&fiber_context) != 0 )
		return false;
	fiber_context.uc_stack.ss_sp = stack;
	fiber_context.uc_stack.ss_size = size;
	fiber_context.uc_link = nullptr;
	makecontext(&fiber_context, fiber_entry, 0);
	return true;
}

static int fiber_slot = -1;

// One chunk of parsing on the fiber: its time is the fiber slot's.
static void run_fiber_chunk(int64_t ns)
{
	fiber_work_ns = ns;   // spin() scales it as any statement
	const int before = ledger.current();
	ledger.switch_to(fiber_slot);
	swapcontext(&main_context, &fiber_context);
	ledger.switch_to(before);
}

// --plugin: a shared library loaded while running, as Zeek loads plugins.
typedef void (*deliver_fn)(int64_t);
static deliver_fn plugin_deliver = nullptr;

static deliver_fn load_plugin(const char* path, bool unlink_it)
{
	void* h = dlopen(path, RTLD_NOW);
	if ( ! h ) {
		fprintf(stderr, "zeek-double: error: %s\n", dlerror());
		exit(1);
	}
	if ( unlink_it )
		unlink(path);
	return reinterpret_cast<deliver_fn>(dlsym(h, "zeek_plugin_demo_deliver"));
}

// --live IFACE: packets from an interface, as zeek -i reads them: a
// packet socket, one connection run per packet, network_time the packet's
// arrival time, the PcapSource's counters kept as Zeek keeps them (received
// and bytes at each packet; dropped and link when zeek asks the kernel,
// here once a second). Between packets the call stack is empty.
static IOManager live_mgr;
static PcapSource live_src;
static int live_fd = -1;
static int64_t live_stats_ns = 0;

static bool open_live(const char* iface)
{
	live_fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if ( live_fd < 0 )
		return false;
	sockaddr_ll sll{};
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = int(if_nametoindex(iface));
	// A small queue, so that a zeek that falls behind drops within seconds.
	int rcvbuf = 256 << 10;
	setsockopt(live_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	if ( ! sll.sll_ifindex || bind(live_fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0 )
		return false;
	live_src.is_live = true;
	install_pkt_src(&live_mgr, &live_src);
	return true;
}

// The kernel's counters since the last ask (PACKET_STATISTICS resets them),
// added up as Zeek's AF_Packet source adds them.
static void refresh_live_stats()
{
	tpacket_stats st{};
	socklen_t len = sizeof st;
	if ( getsockopt(live_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0 ) {
		live_src.stats.link += st.tp_packets;
		live_src.stats.dropped += st.tp_drops;
	}
}

// Waits up to 100 ms for a packet; true with network_time at its arrival.
static bool next_live_packet()
{
	if ( now_ns() - live_stats_ns >= 1000000000LL ) {
		refresh_live_stats();
		live_stats_ns = now_ns();
	}
	pollfd p{live_fd, POLLIN, 0};
	if ( poll(&p, 1, 100) <= 0 )
		return false;
	static unsigned char frame[65536];
	ssize_t n = recv(live_fd, frame, sizeof frame, 0);
	timespec ts{};
	if ( n <= 0 || ioctl(live_fd, SIOCGSTAMPNS, &ts) != 0 )
		return false;
	live_src.stats.received++;
	live_src.stats.bytes_received += uint64_t(n);
	network_time = double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
	publish();
	return true;
}

// Fake packet clock: deterministic, advancing 4 ms per connection.
static const double kFirstPacketTime = 1577836800.0;   // 2020-01-01
static const double kPacketSpacing = 0.004;

static Result run(const World& w, const Options& opt)
{
	Result r;
	const int64_t limit_ns = int64_t(opt.seconds * 1e9);
	int64_t next_unstoppable_ns = 500000000LL;

	ledger.start(idle_slot);
	ledger.switch_to(idle_slot);   // the log's first entry: the start
	if ( w.deep ) {
		invoke(w.deep, nullptr);
		ledger.switch_to(idle_slot);
	}
	for ( long iter = 0;; ++iter ) {
		if ( opt.slow_after >= 0 ) {
			const double t = double(ledger.running_ns()) / 1e9;
			slow_now = t >= opt.slow_after && t < opt.slow_after + opt.slow_for;
		}
		if ( opt.live ) {
			// Waiting for a packet: native time, empty call stack.
			next_connection_size();
			if ( ! next_live_packet() ) {
				if ( stop_requested || ledger.running_ns() >= limit_ns )
					break;
				--iter;
				continue;
			}
		} else {
			network_time = kFirstPacketTime + double(iter) * kPacketSpacing;
			publish();

			// A zeek that cannot reach a ptrace stop for a while (as one in
			// uninterruptible sleep on a slow log volume): the parent of a
			// vfork waits uninterruptibly until its child exits.
			if ( opt.unstoppable_ms > 0 && ledger.running_ns() >= next_unstoppable_ns ) {
				block_uninterruptibly(opt.unstoppable_ms);
				next_unstoppable_ns = ledger.running_ns() + 1000000000LL;
			}

			// Waiting for packets: native time, empty call stack.
			next_connection_size();
			usleep(useconds_t(kIdleUs * conn_scale));
			if ( fiber_slot >= 0 )
				run_fiber_chunk(300000);
			if ( opt.plugin && ! plugin_deliver && ledger.running_ns() >= 1000000000LL )
				plugin_deliver = load_plugin(opt.plugin, opt.plugin_unlink);
			if ( plugin_deliver )
				plugin_deliver(200000);   // native, outside scripts: charged to idle
		}

		// The event manager dispatches the event: there is no call expression.
		trace = 0xcbf29ce484222325ULL;
		invoke(w.event, nullptr);

		if ( iter == 0 )
			r.checksum = trace;
		else if ( trace != r.checksum )
			r.consistent = false;
		r.iterations = iter + 1;

		if ( stop_requested )
			break;
		if ( opt.iterations > 0 ? r.iterations >= opt.iterations
		                        : ledger.running_ns() >= limit_ns )
			break;
	}
	ledger.switch_to(idle_slot);
	r.wall_seconds = double(ledger.elapsed_ns()) / 1e9;
	return r;
}

// ---------------------------------------------------------------------------
// Ground truth file and command line.

static bool write_ground_truth(const char* path, double wall_seconds)
{
	FILE* f = fopen(path, "w");
	if ( ! f )
		return false;

	fprintf(f, "# zeek-double ground truth v1 (generation %s)\n", version);
	fprintf(f, "total\t-\t-\t0\t%.6f\n", wall_seconds);
	for ( const Slot& s : ledger.slots() )
		fprintf(f, "%s\t%s\t%s\t%d\t%.6f\n", s.kind, s.name.c_str(), s.file.c_str(),
		        s.first_line, double(s.ns) / 1e9);

	bool ok = ! ferror(f);
	return fclose(f) == 0 && ok;
}

// Slot names, then one line per switch: CLOCK_MONOTONIC ns, slot index.
static bool write_switch_log(const char* path)
{
	FILE* f = fopen(path, "w");
	if ( ! f )
		return false;
	fprintf(f, "# zeek-double switch log v1 (generation %s)\n", version);
	int i = 0;
	for ( const Slot& s : ledger.slots() )
		fprintf(f, "slot\t%d\t%s\n", i++, s.name.c_str());
	for ( const auto& sw : ledger.switches() )
		fprintf(f, "%lld\t%d\n", static_cast<long long>(sw.ns), sw.slot);
	bool ok = ! ferror(f);
	return fclose(f) == 0 && ok;
}

static void usage(FILE* out)
{
	fprintf(out,
	        "usage: zeek-double-<gen> [--seconds S] [--iterations N] [--ground-truth FILE] [--quiet]\n"
	        "A test double of Zeek %s's script interpreter for zeek-spy's tests (not Zeek).\n"
	        "  --seconds S         run the workload for S seconds of wall time (default 5)\n"
	        "  --iterations N      run exactly N iterations instead; prints the wall time\n"
	        "  --ground-truth FILE write the time spent per function/body/BiF at exit\n"
	        "  --switch-log FILE   write every change of the innermost frame (time, slot)\n"
	        "  --quiet             do not print the start banner\n"
	        "  --hang              get stuck in md5_hash, five calls deep, until SIGTERM\n"
	        "  --spicy-fiber       each connection also parses 300 us on a fiber, outside scripts\n"
	        "  --plugin SO         after 1 s dlopen SO; its analyzer runs 200 us a connection\n"
	        "  --plugin-unlink     delete SO's file once it is loaded\n"
	        "  --deep N            first run a chain of N nested script calls for 1 s\n"
	        "  -O ZAM              compile the scripts as ZAM does (8.0, 8.2): ZBodies, inlining\n"
	        "  --zam-chains        with -O ZAM, locations chained through the inlined calls (7.0)\n"
	        "  --live IFACE        one connection per packet read from IFACE (a packet socket)\n"
	        "  --slow-after S      from S seconds on, DNS::log_reply costs 12 times as much ...\n"
	        "  --slow-for S        ... for S seconds\n"
	        "  --unstoppable-ms MS once a second, be unable to stop (ptrace or job\n"
	        "                      control) for MS ms, in an uninterruptible wait\n",
	        version);
}

// Accepts "--name value" and "--name=value".
static const char* option_value(const char* name, int argc, char** argv, int* i)
{
	size_t n = strlen(name);
	if ( strncmp(argv[*i], name, n) != 0 )
		return nullptr;
	if ( argv[*i][n] == '=' )
		return argv[*i] + n + 1;
	if ( argv[*i][n] == '\0' && *i + 1 < argc )
		return argv[++*i];
	return nullptr;
}

static bool parse_options(int argc, char** argv, Options* opt)
{
	for ( int i = 1; i < argc; ++i ) {
		const char* v;
		char* end;
		if ( strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0 ) {
			opt->quiet = true;
		} else if ( strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ) {
			usage(stdout);
			exit(0);
		} else if ( (v = option_value("--seconds", argc, argv, &i)) ) {
			errno = 0;
			opt->seconds = strtod(v, &end);
			if ( errno || *end || end == v || ! (opt->seconds >= 0) )
				return false;
		} else if ( (v = option_value("--iterations", argc, argv, &i)) ) {
			errno = 0;
			opt->iterations = strtol(v, &end, 10);
			if ( errno || *end || end == v || opt->iterations <= 0 )
				return false;
		} else if ( (v = option_value("--ground-truth", argc, argv, &i)) ) {
			opt->ground_truth = v;
		} else if ( (v = option_value("--switch-log", argc, argv, &i)) ) {
			opt->switch_log = v;
		} else if ( (v = option_value("--plugin", argc, argv, &i)) ) {
			opt->plugin = v;
		} else if ( strcmp(argv[i], "--plugin-unlink") == 0 ) {
			opt->plugin_unlink = true;
		} else if ( strcmp(argv[i], "--spicy-fiber") == 0 ) {
			opt->spicy_fiber = true;
		} else if ( strcmp(argv[i], "--hang") == 0 ) {
			hang_requested = true;
		} else if ( (v = option_value("--deep", argc, argv, &i)) ) {
			errno = 0;
			opt->deep = strtol(v, &end, 10);
			if ( errno || *end || end == v || opt->deep <= 0 || opt->deep > 100000 )
				return false;
		} else if ( (v = option_value("--live", argc, argv, &i)) ) {
			opt->live = v;
		} else if ( (v = option_value("--slow-after", argc, argv, &i)) ) {
			opt->slow_after = atof(v);
		} else if ( (v = option_value("--slow-for", argc, argv, &i)) ) {
			opt->slow_for = atof(v);
		} else if ( strcmp(argv[i], "--zam-chains") == 0 ) {
			zam_chains = true;
		} else if ( (v = option_value("-O", argc, argv, &i)) ) {
			// zeek's script optimization: the recorder reads it from the
			// command line; -O ZAM leaves the frames as ZAM does (zam_frames).
			zam_frames = strcmp(v, "ZAM") == 0;
		} else if ( (v = option_value("--unstoppable-ms", argc, argv, &i)) ) {
			errno = 0;
			opt->unstoppable_ms = strtol(v, &end, 10);
			if ( errno || *end || end == v || opt->unstoppable_ms <= 0 )
				return false;
		} else {
			return false;
		}
	}
	return true;
}

}   // namespace zd

// The interpreter objects live until exit, as in Zeek: in the sanitizer build
// (scripts/ci-sanitize.sh) LeakSanitizer would call them leaks and fail the
// run, and it could not ptrace the threads of a process being recorded anyway.
// Only LeakSanitizer looks this hook up; other builds ignore it.
extern "C" int __lsan_is_turned_off() { return 1; }

int main(int argc, char** argv)
{
	using namespace zd;

	Options opt;
	if ( ! parse_options(argc, argv, &opt) ) {
		usage(stderr);
		return 2;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, nullptr);
	sigaction(SIGINT, &sa, nullptr);

	// Never reallocated while running, so a reader never sees a stale array.
	const size_t depth = size_t(opt.deep) + 64;
	call_stack.reserve(depth);
#if ZEEK_GEN < 82
	g_frame_stack.reserve(depth);
#endif

	idle_slot = ledger.add("idle", "empty_call_stack", "-", 0);
	World world = build_world();
	if ( opt.spicy_fiber ) {
		fiber_slot = ledger.add("native", "[spicy fiber]", "-", 0);
		if ( ! start_fiber() ) {
			fprintf(stderr, "zeek-double: error: cannot make a fiber: %s\n", strerror(errno));
			return 1;
		}
	}
	if ( opt.deep > 0 )
		world.deep = build_deep_chain(int(opt.deep), int(opt.deep_ms));
	if ( opt.live && ! open_live(opt.live) ) {
		fprintf(stderr, "zeek-double: error: cannot read interface %s: %s\n", opt.live, strerror(errno));
		return 1;
	}

	if ( ! opt.quiet ) {
		fprintf(stderr, "zeek-double %s (test double of Zeek) pid %ld\n", version, long(getpid()));
		fflush(stderr);
	}

	if ( opt.switch_log )
		ledger.keep_switches(size_t(4) << 20);
	const Result r = run(world, opt);

	// The checksum covers one iteration, so it does not depend on timing.
	printf("zeek-double %s: workload checksum %016llx\n", version,
	       static_cast<unsigned long long>(r.checksum));
	fflush(stdout);
	fprintf(stderr, "zeek-double %s: iterations %ld wall_seconds %.6f\n", version, r.iterations,
	        r.wall_seconds);
	if ( opt.live )
		fprintf(stderr, "zeek-double %s: packets received %llu\n", version,
		        static_cast<unsigned long long>(live_src.stats.received));

	int rc = 0;
	if ( ! r.consistent ) {
		fprintf(stderr, "zeek-double: error: iterations executed different statement traces\n");
		rc = 1;
	}
	if ( opt.ground_truth && ! write_ground_truth(opt.ground_truth, r.wall_seconds) ) {
		fprintf(stderr, "zeek-double: error: cannot write %s: %s\n", opt.ground_truth,
		        strerror(errno));
		rc = 1;
	}
	if ( opt.switch_log && ! write_switch_log(opt.switch_log) ) {
		fprintf(stderr, "zeek-double: error: cannot write %s: %s\n", opt.switch_log,
		        strerror(errno));
		rc = 1;
	}
	return rc;
}
