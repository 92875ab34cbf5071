/* SPDX-License-Identifier: BSD-3-Clause */
// layout_zeek30.h - interpreter objects of the Zeek 3.0 layout generation,
// as reproduced by zeek-double (a TEST DOUBLE of Zeek, not Zeek).
//
// These classes mirror the class names, namespaces (none: Zeek 3.x lived in the
// global namespace), member order and member types that zeek-spy reads from a
// real Zeek 3.0.1 built with GCC and libstdc++ on x86_64. Only the members the
// profiler follows are modelled by name; the rest of each object is opaque
// storage of the right size, so that every offset the profiler relies on is the
// one of the real build. The static_asserts below pin those offsets: if one
// fires, the double no longer tests what it claims to test.
//
// Written for zeek-spy from the layout facts in the design brief; no Zeek code.

#ifndef ZEEK_DOUBLE_LAYOUT_ZEEK30_H
#define ZEEK_DOUBLE_LAYOUT_ZEEK30_H

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <vector>

class Scope;
class BroType;
class Frame;
class Expr;

// Zeek 3.0's Location still had a vtable, which pushes the filename to offset 8.
class Location {
public:
	Location(const char* fname, int first, int last)
		: filename(fname), first_line(first), last_line(last) { }
	virtual ~Location() = default;

	const char* filename;
	int first_line;
	int last_line;
	int first_column = 0;
	int last_column = 0;
	bool delete_data = false;
	int timestamp = 0;
	char* text = nullptr;
};

class BroObj {
public:
	explicit BroObj(Location* loc = nullptr) : location(loc) { }
	virtual ~BroObj() = default;

	Location* location;
	int ref_cnt = 1;
	uint32_t obj_flags_ = 0;   // stands in for Zeek's bookkeeping flags
};

// Statement kinds the double's interpreter needs. STMT_SPIN is the double's own
// stand-in for "an expensive statement": it burns a fixed amount of CPU time.
enum StmtTag { STMT_LIST, STMT_EXPR, STMT_SPIN };

class Stmt : public BroObj {
public:
	Stmt(StmtTag t, Location* loc) : BroObj(loc), tag(t) { }
	// Runs the statement: Zeek's virtual Stmt::Exec, here a dispatch on the
	// tag (zeek_double.cc), so that the layout stays as it is.
	void Exec(Frame* f) const;

	StmtTag tag;
};

class StmtList : public Stmt {
public:
	explicit StmtList(Location* loc) : Stmt(STMT_LIST, loc) { }
	// The interpreter, by Zeek's names: the C++ a native unwind sees between
	// two script frames and inside the innermost one (zeek_double.cc). Not
	// virtual: the layout stays as it is.
	void Exec(Frame* f) const;

	std::vector<Stmt*> stmts;
};

class ExprStmt : public Stmt {
public:
	ExprStmt(Expr* expr, Location* loc) : Stmt(STMT_EXPR, loc), e(expr) { }
	void Exec(Frame* f) const;   // as StmtList::Exec

	Expr* e;
};

class SpinStmt : public Stmt {
public:
	SpinStmt(int64_t ns, Location* loc) : Stmt(STMT_SPIN, loc), spin_ns(ns) { }
	void Exec(Frame* f) const;   // as StmtList::Exec

	int64_t spin_ns;
};

class Func;

class Expr : public BroObj {
public:
	explicit Expr(Location* loc) : BroObj(loc) { }
};

// In Zeek the callee is an expression evaluated at run time; the double calls
// a fixed Func, and `arg` stands in for the argument list.
class CallExpr : public Expr {
public:
	CallExpr(const Func* f, int64_t a, Location* loc) : Expr(loc), callee(f), arg(a) { }
	void Eval(Frame* f) const;   // as StmtList::Exec

	const Func* callee;
	int64_t arg;
};

class Func : public BroObj {
public:
	enum Kind { BRO_FUNC, BUILTIN_FUNC };   // a 4-byte enum in 3.0

	struct Body {
		Stmt* stmts;
		int priority;
	};

	Func(Kind k, std::string n, Location* loc)
		: BroObj(loc), kind(k), name(std::move(n)) { }

	std::vector<Body> bodies;
	Scope* scope = nullptr;
	Kind kind;
	BroType* type = nullptr;
	std::string name;
	int unique_id = 0;
};

class BroFunc : public Func {
public:
	BroFunc(std::string n, Location* loc) : Func(BRO_FUNC, std::move(n), loc) { }

	// Where Zeek 3.0 pushes call_stack (src/Func.cc); a native unwind finds
	// the script frames' places by this name. Not virtual: the layout is Zeek's.
	void Call(const CallExpr* call) const;

	int frame_size = 0;
	// Test-double bookkeeping, not in Zeek: the ground-truth slot charged while
	// each body runs. It sits after every member the profiler reads.
	std::vector<int> gt_slots;
};

class BuiltinFunc : public Func {
public:
	using built_in_func = void (*)(int64_t arg);

	BuiltinFunc(std::string n, built_in_func f)
		: Func(BUILTIN_FUNC, std::move(n), nullptr), func(f) { }

	void Call(const CallExpr* call) const;   // as BroFunc::Call

	built_in_func func;
	bool is_pure = false;
	int gt_slot = -1;   // test-double bookkeeping, not in Zeek
};

class Frame : public BroObj {
public:
	Frame(const BroFunc* f, const void* args) : function(f), func_args(args) { }

	int size = 0;
	void** frame = nullptr;                // Val** in Zeek
	const BroFunc* function;
	const void* func_args;
	unsigned char opaque_mid_[88] = {};   // trigger, call, closure, ... never read
	Stmt* next_stmt = nullptr;
	unsigned char opaque_tail_[32] = {};
};

struct CallInfo {
	const CallExpr* call;
	const Func* func;
	const void* args;   // const val_list* in Zeek
};

// The packet source (3.0: iosource/Manager.h, PktSrc.h, pcap/Source.h): the
// I/O manager (no vtable) keeps a std::list of sources at 32; a PcapSource's
// Properties (is_live at 332) and Stats (at 336) follow its 288-byte PktSrc.
constexpr size_t kPktSrcSize = 288;
namespace iosource {
#include "layout_pktsrc.h"

class Manager {
public:
	char other_members[32] = {};
	std::list<PktSrc*> pkt_srcs;
	std::list<void*> pkt_dumpers;
};
}   // namespace iosource

// The symbols the profiler looks up in .dynsym (plain names: global namespace).
extern iosource::Manager* iosource_mgr;
extern std::vector<CallInfo> call_stack;
extern std::vector<Frame*> g_frame_stack;
extern double network_time;
extern char version[];

// --- the offsets zeek-spy relies on, as measured on a real Zeek 3.0.1 ---
static_assert(offsetof(Location, filename) == 8, "Location::filename");
static_assert(offsetof(Location, first_line) == 16, "Location::first_line");
static_assert(offsetof(Location, last_line) == 20, "Location::last_line");
static_assert(sizeof(Location) == 48, "sizeof(Location)");
static_assert(offsetof(BroObj, location) == 8, "BroObj::location");
static_assert(sizeof(BroObj) == 24, "sizeof(BroObj)");
static_assert(offsetof(CallInfo, call) == 0, "CallInfo::call");
static_assert(offsetof(CallInfo, func) == 8, "CallInfo::func");
static_assert(sizeof(CallInfo) == 24, "sizeof(CallInfo)");
static_assert(offsetof(Func::Body, stmts) == 0, "Func::Body::stmts");
static_assert(sizeof(Func::Body) == 16, "sizeof(Func::Body)");
static_assert(offsetof(Func, bodies) == 24, "Func::bodies");
static_assert(offsetof(Func, kind) == 56, "Func::kind");
static_assert(sizeof(Func::Kind) == 4, "sizeof(Func::Kind)");
static_assert(offsetof(Func, name) == 72, "Func::name");
static_assert(sizeof(Func) == 112, "sizeof(Func)");
static_assert(offsetof(Frame, next_stmt) == 144, "Frame::next_stmt");
static_assert(offsetof(iosource::Manager, pkt_srcs) == 32, "Manager::pkt_srcs");
static_assert(offsetof(iosource::pcap::PcapSource, is_live) == 332, "PcapSource::props.is_live");
static_assert(offsetof(iosource::pcap::PcapSource, stats) == 336, "PcapSource::stats");
static_assert(sizeof(Frame) == 184, "sizeof(Frame)");

// The generation-neutral names the double's interpreter is written against.
namespace zd {
using ::Location;
using ::Stmt;
using ::StmtList;
using ::ExprStmt;
using ::SpinStmt;
using ::CallExpr;
using ::Func;
using ::BuiltinFunc;
using ::Frame;
using ::CallInfo;
using ScriptFunc = ::BroFunc;
using ::STMT_LIST;
using ::STMT_EXPR;
using ::STMT_SPIN;

using ::call_stack;
using ::g_frame_stack;
using ::network_time;

using PcapSource = ::iosource::pcap::PcapSource;
using IOManager = ::iosource::Manager;
inline void install_pkt_src(IOManager* m, PcapSource* s)
{
	m->pkt_srcs.push_back(s);
	::iosource_mgr = m;
}

constexpr Func::Kind kScriptKind = Func::BRO_FUNC;
constexpr Func::Kind kBuiltinKind = Func::BUILTIN_FUNC;

inline Stmt* body_stmts(const Func::Body& b) { return b.stmts; }
inline Func::Body make_body(Stmt* s) { return Func::Body{s, 0}; }
}   // namespace zd

#endif
