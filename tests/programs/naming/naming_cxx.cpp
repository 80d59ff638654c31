// naming-cxx: C++ functions the tests name by demangled globs
// ('naming::Shape::area*' matches both overloads of area) and by mangled
// names. Per --calls round: area(int) once, area(double) twice,
// perimeter() three times, naming::scale<int>() once.
#include <cstdint>
#include <cstdio>

#include "workload_options.h"

namespace naming {

class Shape {
 public:
  explicit Shape(std::uint64_t side) : side_(side) {}
  [[gnu::noinline]] std::uint64_t area(int factor) const;
  [[gnu::noinline]] double area(double factor) const;
  [[gnu::noinline]] std::uint64_t perimeter() const;

 private:
  std::uint64_t side_;
};

std::uint64_t Shape::area(int factor) const {
  std::uint64_t side = side_;
  asm volatile("" : "+r"(side));
  return side * side * static_cast<std::uint64_t>(factor);
}

double Shape::area(double factor) const {
  double side = static_cast<double>(side_);
  asm volatile("" : "+x"(side));
  return side * side * factor;
}

std::uint64_t Shape::perimeter() const {
  std::uint64_t side = side_;
  asm volatile("" : "+r"(side));
  return 4 * side;
}

template <typename T>
[[gnu::noinline]] T scale(T value) {
  asm volatile("" : "+r"(value));
  return value * 3;
}

}  // namespace naming

int main(int argc, char** argv) {
  funclatency::workload::WorkloadRun run(argc, argv, "naming-cxx",
                                         "--calls rounds of naming::Shape methods", {.calls = 100});
  if (auto exit_code = run.early_exit()) return *exit_code;
  auto& area_int = run.add_function("naming::Shape::area(int) const");
  auto& area_double = run.add_function("naming::Shape::area(double) const");
  auto& perimeter = run.add_function("naming::Shape::perimeter() const");
  auto& scale = run.add_function("int naming::scale<int>(int)");
  run.start();
  double checksum = 0;
  for (std::uint64_t i = 0; i < run.options().calls && run.keep_going(); ++i) {
    naming::Shape shape(i + 1);
    using funclatency::workload::timed_call;
    checksum += static_cast<double>(timed_call(area_int, [&] { return shape.area(2); }));
    for (int k = 0; k < 2; ++k)
      checksum += timed_call(area_double, [&] { return shape.area(0.5); });
    for (int k = 0; k < 3; ++k) {
      checksum += static_cast<double>(timed_call(perimeter, [&] { return shape.perimeter(); }));
    }
    checksum += timed_call(scale, [&] { return naming::scale<int>(static_cast<int>(i)); });
  }
  std::printf("checksum %.1f\n", checksum);
  return run.finish();
}
