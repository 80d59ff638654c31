// One way to own a C library's handle (an OpenSSL BIO, a curl easy handle,
// a libbpf ring buffer): a std::unique_ptr whose deleter is the library's own
// free function, named once at the type. So every file frees with the same
// few lines, none writes a deleter struct of its own, and no handle is freed
// by hand on one path and forgotten on another.
#pragma once

#include <memory>

namespace funclatency {

// Calls `Free` on a non-null pointer (std::unique_ptr never passes null).
template <auto Free>
struct FreeWith {
  template <typename T>
  void operator()(T* handle) const noexcept {
    Free(handle);
  }
};

// UniqueHandle<BIO, BIO_free>, UniqueHandle<CURL, curl_easy_cleanup>, ...
template <typename T, auto Free>
using UniqueHandle = std::unique_ptr<T, FreeWith<Free>>;

}  // namespace funclatency
