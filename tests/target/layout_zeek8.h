/* SPDX-License-Identifier: BSD-3-Clause */
// layout_zeek8.h - interpreter objects of the Zeek 8.0 and 8.2 layout
// generations, as reproduced by zeek-double (a TEST DOUBLE of Zeek, not Zeek).
//
// ZEEK_GEN == 80 mirrors Zeek 8.0.10: a call pushes a CallInfo {call, func,
// args}; a script function also pushes a heap Frame on the global
// g_frame_stack.
//
// ZEEK_GEN == 82 mirrors Zeek 8.2.2 (the model introduced in 8.1): there is no
// g_frame_stack; CallInfo is {call, frame}, every call (BiFs included) has a
// Frame, and that Frame is a local variable of the C++ function performing
// the call. The function is reached through frame->function.
//
// Class names, namespaces, member order and member types follow what zeek-spy
// reads from real GCC/libstdc++ x86_64 builds; members the profiler never
// reads are opaque storage of the right size. The static_asserts pin every
// offset the profiler relies on.
//
// Written for zeek-spy from the layout facts in the design brief; no Zeek code.

#ifndef ZEEK_DOUBLE_LAYOUT_ZEEK8_H
#define ZEEK_DOUBLE_LAYOUT_ZEEK8_H

#if ZEEK_GEN != 80 && ZEEK_GEN != 82
#error "layout_zeek8.h serves ZEEK_GEN 80 and 82 only"
#endif

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace zeek {

// Zeek 8 holds most objects through an intrusive smart pointer whose only
// member is the raw pointer, so a StmtPtr reads exactly like a Stmt*. The
// double does not reference-count: every object it creates lives forever.
template <class T>
class IntrusivePtr {
public:
	IntrusivePtr() = default;
	explicit IntrusivePtr(T* p) : ptr_(p) { }
	T* get() const { return ptr_; }

private:
	T* ptr_ = nullptr;
};

class Type;
class Val;
class Func;

namespace detail {

// Since 3.1 Location has no vtable: filename at 0, lines at 8 and 12.
class Location {
public:
	Location(const char* fname, int first, int last)
		: filename(fname), first_line(first), last_line(last) { }

	const char* filename;
	int first_line;
	int last_line;
};

class Scope;
class Frame;

}   // namespace detail

class Obj {
public:
	explicit Obj(detail::Location* loc = nullptr) : location(loc) { }
	virtual ~Obj() = default;

	detail::Location* location;
	int ref_cnt = 1;
	uint32_t obj_flags_ = 0;   // stands in for Zeek's bookkeeping flags
};

namespace detail {

// Statement kinds the double's interpreter needs. STMT_SPIN is the double's own
// stand-in for "an expensive statement": it burns a fixed amount of CPU time.
enum StmtTag { STMT_LIST, STMT_EXPR, STMT_SPIN, STMT_ZAM };

class Stmt : public Obj {
public:
	Stmt(StmtTag t, Location* loc) : Obj(loc), tag(t) { }
	// Runs the statement: Zeek's virtual Stmt::Exec, here a dispatch on the
	// tag (zeek_double.cc), so that the layout stays as it is.
	void Exec(Frame* f) const;

	StmtTag tag;
};

using StmtPtr = IntrusivePtr<Stmt>;

class StmtList : public Stmt {
public:
	explicit StmtList(Location* loc) : Stmt(STMT_LIST, loc) { }
	// The interpreter, by Zeek's names: the C++ a native unwind sees between
	// two script frames and inside the innermost one (zeek_double.cc). Not
	// virtual: the layout stays as it is.
	void Exec(Frame* f) const;

	std::vector<Stmt*> stmts;
};

class Expr : public Obj {
public:
	explicit Expr(Location* loc) : Obj(loc) { }
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

// In Zeek the callee is an expression evaluated at run time; the double calls
// a fixed Func, and `arg` stands in for the argument list.
class CallExpr : public Expr {
public:
	CallExpr(const Func* f, int64_t a, Location* loc) : Expr(loc), callee(f), arg(a) { }
	void Eval(Frame* f) const;   // as StmtList::Exec

	const Func* callee;
	int64_t arg;
};

// -O ZAM: a body compiled into an array of instructions (Zeek's
// src/script_opt/ZAM). Each instruction carries its location: the function
// it came from (an inlined callee's name inside its caller's body) and its
// file:line; from 7.2 on `parent` (the inlining chain) stays null, as here.
struct ZAMLocInfo {
	std::string func_name;
	std::set<std::string> modules;   // never read
	std::shared_ptr<Location> loc;
	std::shared_ptr<ZAMLocInfo> parent;
};

enum StmtFlowType { FLOW_NEXT, FLOW_RETURN };

// The double's two operations: burn CPU, or call a Func that was not
// inlined (a BiF, an event, a function too large to inline).
enum ZOp : uint16_t { OP_SPIN, OP_CALL, OP_INLINED_CALL };

struct ZInst {
	const void* opaque_head_ = nullptr;
	ZOp op = OP_SPIN;
	int64_t spin_ns = 0;
	const Func* callee = nullptr;
	const CallExpr* call = nullptr;
	// Test-double bookkeeping, not in Zeek: where the time goes in the
	// ground truth, and what the statement trace mixes in.
	const Stmt* stmt = nullptr;
	int gt_slot = -1;
	int inline_depth = 0;
	unsigned char opaque_mid_[8] = {};
	std::shared_ptr<ZAMLocInfo> loc;
	unsigned char opaque_tail_[8] = {};
};

class ZBody : public Stmt {
public:
	ZBody(std::string name, Location* body_loc, std::vector<ZInst> code);
	// Out of line: the vtable (_ZTVN4zeek6detail5ZBodyE) is emitted and
	// exported with the executable, as in a real zeek.
	~ZBody() override;
	// The instruction loop (zeek_double.cc), by Zeek's name and signature.
	void Exec(Frame* f, StmtFlowType& flow);

	unsigned char opaque_[24] = {};
	std::string func_name;
	ZInst* insts = nullptr;
	unsigned int end_pc = 0;
};

}   // namespace detail

class Func : public Obj {
public:
	enum Kind : uint8_t { SCRIPT_FUNC, BUILTIN_FUNC };   // one byte since 4.x

	struct Body {
		detail::StmtPtr stmts;
		int priority = 0;
		const void* groups = nullptr;   // event-group membership in Zeek; unused
	};

	Func(Kind k, std::string n, detail::Location* loc)
		: Obj(loc), kind(k), name(std::move(n)) { }

	std::vector<Body> bodies;
	IntrusivePtr<detail::Scope> scope;
	Kind kind;
	IntrusivePtr<Type> type;
	std::string name;
	int unique_id = 0;
};

namespace detail {

class ScriptFunc : public Func {
public:
	ScriptFunc(std::string n, Location* loc) : Func(SCRIPT_FUNC, std::move(n), loc) { }

	// Where Zeek pushes call_stack (src/Func.cc); a native unwind finds the
	// script frames' places by this name. Not virtual: the layout is Zeek's.
	void Invoke(const CallExpr* call) const;

	int frame_size = 0;
	// Test-double bookkeeping, not in Zeek: the ground-truth slot charged while
	// each body runs. It sits after every member the profiler reads.
	std::vector<int> gt_slots;
};

// -O ZAM coalesces an event's handlers into one body (src/script_opt/Inline.cc)
// and runs them as a Func of its own: a CoalescedScriptFunc, whose one body
// is that, and which keeps the event's own Func (ScriptOpt.h). Its orig_func
// sits where Zeek's does, after Zeek's larger ScriptFunc.
#if ZEEK_GEN >= 82
constexpr size_t kCoalescedOrigAt = 192;
#else
constexpr size_t kCoalescedOrigAt = 184;
#endif
class CoalescedScriptFunc : public ScriptFunc {
public:
	explicit CoalescedScriptFunc(ScriptFunc* orig)
		: ScriptFunc(orig->name, orig->location), orig_func(orig) { }
	~CoalescedScriptFunc() override = default;

	char rest_of_zeeks_script_func[kCoalescedOrigAt - sizeof(ScriptFunc)] = {};
	IntrusivePtr<ScriptFunc> orig_func;
};

class BuiltinFunc : public Func {
public:
	using built_in_func = void (*)(int64_t arg);

	BuiltinFunc(std::string n, built_in_func f)
		: Func(BUILTIN_FUNC, std::move(n), nullptr), func(f) { }

	void Invoke(const CallExpr* call) const;   // as ScriptFunc::Invoke

	built_in_func func;
	bool is_pure = false;
	int gt_slot = -1;   // test-double bookkeeping, not in Zeek
};

class Frame : public Obj {
public:
#if ZEEK_GEN >= 82
	Frame(const Func* f, const CallExpr* c) : function(f), call(c) { }
#else
	Frame(const ScriptFunc* f, const CallExpr* c) : function(f), call(c) { }
#endif

	int size = 0;
	void* frame = nullptr;          // ZVal array in Zeek
	const void* func_args = nullptr;
	const void* trigger = nullptr;
	const void* closure = nullptr;
#if ZEEK_GEN >= 82
	const Func* function;           // 8.1+: any Func, since BiFs get a Frame too
#else
	const ScriptFunc* function;
#endif
	const CallExpr* call;
	Stmt* next_stmt = nullptr;
	unsigned char opaque_tail_[24] = {};   // break flags, captures, ... never read
};

#if ZEEK_GEN >= 82
struct CallInfo {
	const CallExpr* call;
	Frame* frame;
};
#else
struct CallInfo {
	const CallExpr* call;
	const Func* func;
	const void* args;   // const zeek::Args* in Zeek
};
#endif

// Exported as _ZN4zeek6detail10call_stackE.
extern std::vector<CallInfo> call_stack;

// The global scope, where -O ZAM's inlined functions are found by name
// (Scope.h, ID.h): Scope.cc's scope stack holds it first (a static,
// _ZN4zeek6detailL6scopesE), its ordered_vars hold each global's ID, an
// ID its name and value. The members sit where Zeek's do.
class ID : public Obj {
public:
	ID(const char* n, Val* v) : name(n), val(v) { }
	char rest_of_zeeks_id_head[32 - sizeof(Obj)] = {};
	const char* name;
	char rest_of_zeeks_id[64 - 40] = {};
	IntrusivePtr<Val> val;
};

class Scope : public Obj {
public:
	char rest_of_zeeks_scope[120 - sizeof(Obj)] = {};
	std::vector<IntrusivePtr<ID>> ordered_vars;
};

}   // namespace detail

// A value (Val.h): a FuncVal holds its function at 32.
class Val : public Obj {
public:
	const void* type = nullptr;   // TypePtr in Zeek
};

class FuncVal : public Val {
public:
	explicit FuncVal(Func* f) : func_val(f) { }
	~FuncVal() override = default;
	IntrusivePtr<Func> func_val;
};

namespace run_state {
extern double network_time;   // _ZN4zeek9run_state12network_timeE
}

// The packet source (iosource/Manager.h, PktSrc.h, pcap/Source.h): the
// I/O manager's pkt_src at 56, a PcapSource's Properties and Stats after
// its PktSrc (336 bytes in 8.2, 328 in 8.0: Packet's size).
constexpr size_t kPktSrcSize = ZEEK_GEN >= 82 ? 336 : 328;
constexpr size_t kPcapStatsAt = kPktSrcSize + 48;
namespace iosource {
#include "layout_pktsrc.h"

class Manager {
public:
	char other_members[56] = {};
	PktSrc* pkt_src = nullptr;
};
}   // namespace iosource

extern iosource::Manager* iosource_mgr;   // _ZN4zeek12iosource_mgrE

}   // namespace zeek

#if ZEEK_GEN < 82
// A plain global-namespace symbol even in Zeek 8.0; removed in 8.1.
extern std::vector<zeek::detail::Frame*> g_frame_stack;
#endif
extern char version[];

// --- the offsets zeek-spy relies on, as measured on real Zeek 8.0.10 / 8.2.2 ---
static_assert(offsetof(zeek::detail::Location, filename) == 0, "Location::filename");
static_assert(offsetof(zeek::detail::Location, first_line) == 8, "Location::first_line");
static_assert(offsetof(zeek::detail::Location, last_line) == 12, "Location::last_line");
static_assert(sizeof(zeek::detail::Location) == 16, "sizeof(Location)");
static_assert(offsetof(zeek::Obj, location) == 8, "Obj::location");
static_assert(sizeof(zeek::Obj) == 24, "sizeof(Obj)");
static_assert(sizeof(zeek::IntrusivePtr<zeek::detail::Stmt>) == 8, "IntrusivePtr is one pointer");
static_assert(offsetof(zeek::Func::Body, stmts) == 0, "Func::Body::stmts");
static_assert(sizeof(zeek::Func::Body) == 24, "sizeof(Func::Body)");
static_assert(offsetof(zeek::Func, bodies) == 24, "Func::bodies");
static_assert(offsetof(zeek::Func, kind) == 56, "Func::kind");
static_assert(sizeof(zeek::Func::Kind) == 1, "sizeof(Func::Kind)");
static_assert(offsetof(zeek::Func, name) == 72, "Func::name");
static_assert(offsetof(zeek::detail::Frame, function) == 64, "Frame::function");
static_assert(offsetof(zeek::detail::Frame, next_stmt) == 80, "Frame::next_stmt");
static_assert(sizeof(zeek::detail::Frame) == 112, "sizeof(Frame)");
static_assert(offsetof(zeek::detail::CallInfo, call) == 0, "CallInfo::call");
// ZAM (8.x): ZInst 88 bytes with op (uint16) at 8 and loc at 64; ZAMLocInfo
// 112 bytes; ZBody's func_name, insts, end_pc at 56, 88, 96.
static_assert(sizeof(zeek::detail::ZInst) == 88, "sizeof(ZInst)");
static_assert(offsetof(zeek::detail::ZInst, op) == 8, "ZInst::op");
static_assert(offsetof(zeek::detail::ZInst, loc) == 64, "ZInst::loc");
static_assert(sizeof(zeek::detail::ZAMLocInfo) == 112, "sizeof(ZAMLocInfo)");
static_assert(offsetof(zeek::detail::ZAMLocInfo, func_name) == 0, "ZAMLocInfo::func_name");
static_assert(offsetof(zeek::detail::ZAMLocInfo, loc) == 80, "ZAMLocInfo::loc");
static_assert(offsetof(zeek::detail::ZAMLocInfo, parent) == 96, "ZAMLocInfo::parent");
static_assert(offsetof(zeek::detail::ZBody, func_name) == 56, "ZBody::func_name");
static_assert(offsetof(zeek::detail::ZBody, insts) == 88, "ZBody::insts");
static_assert(offsetof(zeek::detail::ZBody, end_pc) == 96, "ZBody::end_pc");
static_assert(offsetof(zeek::detail::Scope, ordered_vars) == 120, "Scope::ordered_vars");
static_assert(offsetof(zeek::detail::ID, name) == 32, "ID::name");
static_assert(offsetof(zeek::detail::ID, val) == 64, "ID::val");
static_assert(offsetof(zeek::FuncVal, func_val) == 32, "FuncVal::func_val");
static_assert(offsetof(zeek::detail::CoalescedScriptFunc, orig_func) == zeek::detail::kCoalescedOrigAt,
              "CoalescedScriptFunc::orig_func");
static_assert(offsetof(zeek::iosource::Manager, pkt_src) == 56, "Manager::pkt_src");
static_assert(offsetof(zeek::iosource::pcap::PcapSource, is_live) == zeek::kPcapStatsAt - 4,
              "PcapSource::props.is_live");
static_assert(offsetof(zeek::iosource::pcap::PcapSource, stats) == (ZEEK_GEN >= 82 ? 384 : 376),
              "PcapSource::stats");
#if ZEEK_GEN >= 82
static_assert(offsetof(zeek::detail::CallInfo, frame) == 8, "CallInfo::frame");
static_assert(sizeof(zeek::detail::CallInfo) == 16, "sizeof(CallInfo)");
#else
static_assert(offsetof(zeek::detail::CallInfo, func) == 8, "CallInfo::func");
static_assert(sizeof(zeek::detail::CallInfo) == 24, "sizeof(CallInfo)");
#endif

// The generation-neutral names the double's interpreter is written against.
namespace zd {
using zeek::Func;
using zeek::detail::Location;
using zeek::detail::Stmt;
using zeek::detail::StmtList;
using zeek::detail::ExprStmt;
using zeek::detail::SpinStmt;
using zeek::detail::CallExpr;
using zeek::detail::ScriptFunc;
using zeek::detail::BuiltinFunc;
using zeek::detail::Frame;
using zeek::detail::CallInfo;
using zeek::detail::STMT_LIST;
using zeek::detail::STMT_EXPR;
using zeek::detail::STMT_SPIN;
using zeek::detail::STMT_ZAM;
using zeek::detail::ZAMLocInfo;
using zeek::detail::ZInst;
using zeek::detail::ZBody;
using zeek::detail::CoalescedScriptFunc;
using zeek::detail::ID;
using zeek::detail::Scope;
using zeek::FuncVal;
using zeek::detail::OP_SPIN;
using zeek::detail::OP_CALL;
using zeek::detail::OP_INLINED_CALL;
#define ZEEK_DOUBLE_HAS_ZAM 1

using zeek::detail::call_stack;
#if ZEEK_GEN < 82
using ::g_frame_stack;
#endif
using zeek::run_state::network_time;

using PcapSource = zeek::iosource::pcap::PcapSource;
using IOManager = zeek::iosource::Manager;
inline void install_pkt_src(IOManager* m, PcapSource* s)
{
	m->pkt_src = s;
	zeek::iosource_mgr = m;
}

constexpr Func::Kind kScriptKind = Func::SCRIPT_FUNC;
constexpr Func::Kind kBuiltinKind = Func::BUILTIN_FUNC;

inline Stmt* body_stmts(const Func::Body& b) { return b.stmts.get(); }
inline Func::Body make_body(Stmt* s) { return Func::Body{zeek::detail::StmtPtr(s), 0, nullptr}; }
}   // namespace zd

#endif
