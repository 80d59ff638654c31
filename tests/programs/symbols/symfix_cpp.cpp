// C++ names for the symbol tests: namespaces, classes, overloads, templates.
#include <cstdio>
#include <string>

volatile int sink;

namespace shop {
namespace cart {

class Basket {
 public:
  __attribute__((noinline)) int add(int item);
  __attribute__((noinline)) int add(const std::string& item);
  __attribute__((noinline)) int total() const;

 private:
  int count_ = 0;
};

int Basket::add(int item) {
  return count_ += item + sink;
}
int Basket::add(const std::string& item) {
  return count_ += static_cast<int>(item.size()) + sink;
}
int Basket::total() const {
  return count_ + sink;
}

template <typename T>
__attribute__((noinline)) T scale(T value) {
  return value * 2 + sink;
}
template int scale<int>(int);
template double scale<double>(double);

}  // namespace cart
}  // namespace shop

extern "C" __attribute__((noinline)) int plain_c_function(int x) {
  return x + sink;
}

int main() {
  shop::cart::Basket basket;
  basket.add(1);
  basket.add(std::string("pear"));
  const double scaled = shop::cart::scale(1.5);
  std::printf("%d %d %f %d\n", basket.total(), shop::cart::scale(2), scaled, plain_c_function(1));
  return 0;
}
