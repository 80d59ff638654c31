// The ground truth for --self: traced functions that call traced functions,
// with the time each spends in its own body known. Per round:
//   parent_op: 350 us, leaf_a (300 us), leaf_b (650 us), 350 us
//   recurse(3): 300 us a level, then the level below (recursion)
//   nest_outer: 500 us, then nest_mid (350 us, then leaf_a): grandchildren
//   catcher_op: 200 us, leaf_a, then relay_op (200 us, then throw_child:
//     300 us and a C++ exception through relay_op, caught in catcher_op)
//   jumper_op: 400 us, then longjmp_child (300 us, then a longjmp out of it)
// Besides the usual truth, TRUTH.self holds per function the bounds each
// call's traced inclusive and self durations must lie in (see Span).
#include <array>
#include <csetjmp>
#include <cstdint>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "workload_options.h"

namespace wl = funclatency::workload;

namespace {

// A tracer's entry clock read comes after the caller's read before the call
// and before the body's first; its return read after the body's last and
// before the caller's read after the call. So a call's traced duration lies
// in [body, site], and its self time (its duration less its returned
// children's) in [body - children's sites, site - children's bodies].
struct Span {
  std::uint64_t site_ns = 0;  // measured by the caller around the call
  std::uint64_t body_ns = 0;  // measured by the function of its own body
};

// A traced call in progress: its body's span (begin() first in the body,
// end() last), and its traced children that returned.
struct Call {
  std::uint64_t body_start = 0;
  std::uint64_t body_end = 0;
  std::vector<Span> children;
  void begin() { body_start = wl::monotonic_ns(); }
  void end() { body_end = wl::monotonic_ns(); }
};

struct Truth {
  std::map<std::string, wl::FunctionTruth*> functions;
  // Per function: [incl_lo, incl_hi, self_lo, self_hi] of each call.
  std::map<std::string, std::vector<std::array<std::uint64_t, 4>>> bounds;
};

Truth& truth() {
  static Truth all;
  return all;
}

// Calls `fn(&call)`, a traced function, and records its bounds; returns its span.
template <typename Fn>
Span traced(const char* name, Fn&& fn) {
  Call call;
  const std::uint64_t start = wl::monotonic_ns();
  fn(&call);
  const Span span{wl::monotonic_ns() - start, call.body_end - call.body_start};
  std::uint64_t child_sites = 0, child_bodies = 0;
  for (const Span& child : call.children) {
    child_sites += child.site_ns;
    child_bodies += child.body_ns;
  }
  const std::uint64_t self_lo = span.body_ns > child_sites ? span.body_ns - child_sites : 0;
  truth().bounds[name].push_back(
      {span.body_ns, span.site_ns, self_lo, span.site_ns - child_bodies});
  truth().functions.at(name)->record_return(span.site_ns, false, span.body_ns);
  return span;
}

// A traced call made by the traced call `parent`.
template <typename Fn>
void child(Call* parent, const char* name, Fn&& fn) {
  parent->children.push_back(traced(name, std::forward<Fn>(fn)));
}

void work_us(std::uint64_t us) {
  wl::precise_sleep_ns(us * 1000, wl::kDefaultSpinNs);
}

}  // namespace

extern "C" {

[[gnu::noinline]] void leaf_a(Call* call) {
  call->begin();
  work_us(300);
  call->end();
  asm volatile("" ::: "memory");
}

[[gnu::noinline]] void leaf_b(Call* call) {
  call->begin();
  work_us(650);
  call->end();
  asm volatile("" ::: "memory");
}

[[gnu::noinline]] void parent_op(Call* call) {
  call->begin();
  work_us(350);
  child(call, "leaf_a", [](Call* c) { leaf_a(c); });
  child(call, "leaf_b", [](Call* c) { leaf_b(c); });
  work_us(350);
  call->end();
  asm volatile("" ::: "memory");
}

[[gnu::noinline]] void recurse(int level, Call* call) {
  call->begin();
  work_us(300);
  if (level > 1) child(call, "recurse", [level](Call* c) { recurse(level - 1, c); });
  call->end();
  asm volatile("" ::: "memory");
}

[[gnu::noinline]] void nest_mid(Call* call) {
  call->begin();
  work_us(350);
  child(call, "leaf_a", [](Call* c) { leaf_a(c); });
  call->end();
  asm volatile("" ::: "memory");
}

[[gnu::noinline]] void nest_outer(Call* call) {
  call->begin();
  work_us(500);
  child(call, "nest_mid", [](Call* c) { nest_mid(c); });
  call->end();
  asm volatile("" ::: "memory");
}

// Each always leaves by the exception (or longjmp) here, but could return:
// its code has a `ret`, where the exception-safe exit probe goes (a return
// probe's trampoline would make the exception terminate the program).
[[gnu::noinline]] int throw_child(int should_throw) {
  work_us(300);
  if (should_throw != 0) throw std::runtime_error("workload-self_time: thrown on purpose");
  asm volatile("" ::: "memory");
  return should_throw + 1;
}

[[gnu::noinline]] int relay_op(int should_throw) {
  work_us(200);
  const int result = throw_child(should_throw);
  asm volatile("" ::: "memory");
  return result + 1;
}

[[gnu::noinline]] std::uint64_t longjmp_child(std::jmp_buf* escape) {
  work_us(300);
  if (escape != nullptr) std::longjmp(*escape, 1);
  asm volatile("" ::: "memory");
  return 1;
}

}  // extern "C"

namespace {

// The try block is kept out of catcher_op, whose code then has a plain `ret`.
[[gnu::noinline]] void catch_region() {
  try {
    relay_op(1);
  } catch (const std::runtime_error&) {
    truth().functions.at("relay_op")->record_abandoned();
    truth().functions.at("throw_child")->record_abandoned();
  }
}

}  // namespace

// relay_op and throw_child never return: their time stays in catcher_op's
// self time, and they are counted as abandoned.
extern "C" [[gnu::noinline]] void catcher_op(Call* call) {
  call->begin();
  work_us(200);
  child(call, "leaf_a", [](Call* c) { leaf_a(c); });
  catch_region();
  call->end();
  asm volatile("" ::: "memory");
}

namespace {

// Kept apart from jumper_op so that no object with a destructor lives
// between setjmp and longjmp.
[[gnu::noinline]] void jump_region() {
  std::jmp_buf escape;
  if (setjmp(escape) == 0) longjmp_child(&escape);
  truth().functions.at("longjmp_child")->record_abandoned();
}

}  // namespace

// longjmp_child never returns: its time stays in jumper_op's self time.
extern "C" [[gnu::noinline]] void jumper_op(Call* call) {
  call->begin();
  work_us(400);
  jump_region();
  call->end();
  asm volatile("" ::: "memory");
}

int main(int argc, char** argv) {
  wl::WorkloadRun run(argc, argv, "workload-self_time",
                      "--calls rounds of parent_op, recurse(3), nest_outer, catcher_op and "
                      "jumper_op (see the source)",
                      {.calls = 20});
  if (auto exit_code = run.early_exit()) return *exit_code;
  for (const char* name : {"parent_op", "leaf_a", "leaf_b", "recurse", "nest_outer", "nest_mid",
                           "catcher_op", "relay_op", "throw_child", "jumper_op", "longjmp_child"}) {
    truth().functions[name] = &run.add_function(name);
    truth().bounds[name] = {};
  }
  run.start();
  for (std::uint64_t i = 0; i < run.options().calls && run.keep_going(); ++i) {
    traced("parent_op", [](Call* c) { parent_op(c); });
    traced("recurse", [](Call* c) { recurse(3, c); });
    traced("nest_outer", [](Call* c) { nest_outer(c); });
    traced("catcher_op", [](Call* c) { catcher_op(c); });
    traced("jumper_op", [](Call* c) { jumper_op(c); });
  }
  if (!run.options().truth_path.empty()) {
    wl::JsonWriter out;
    out.begin_object();
    for (const auto& [name, calls] : truth().bounds) {
      out.key(name).begin_array();
      for (const auto& call : calls) {
        out.begin_array();
        for (std::uint64_t bound : call) out.value(bound);
        out.end_array();
      }
      out.end_array();
    }
    out.end_object();
    std::ofstream(run.options().truth_path + ".self") << out.text() << "\n";
  }
  return run.finish();
}
