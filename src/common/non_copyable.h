// A base for the classes that own something only one object may own (a
// kernel object, a thread, an OpenSSL context): copying one would free or
// join it twice. Inheriting it (privately) says so once, where a class's
// declaration would otherwise repeat the two deleted members.
#pragma once

namespace funclatency {

class NonCopyable {
 public:
  NonCopyable(const NonCopyable&) = delete;
  NonCopyable& operator=(const NonCopyable&) = delete;

 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;
};

}  // namespace funclatency
