// Error values carried through std::expected: what was being done, and the
// errno that stopped it. Helpers return them; only main() prints and exits.
#pragma once

#include <cerrno>
#include <cstring>
#include <expected>
#include <string>
#include <utility>

namespace funclatency {

enum class ErrorKind {
  kBadInput,  // the user's input is wrong: exit code 2
  kRuntime,   // the system failed us: exit code 1
};

struct Error {
  ErrorKind kind = ErrorKind::kRuntime;
  std::string context;  // "attach uprobe to /usr/bin/x:foo at 0x1234"
  int errno_value = 0;  // 0 when no system call failed
  std::string hint;     // how to fix it, may be empty

  std::string message() const {
    std::string text = context;
    if (errno_value != 0) text += ": " + std::string(std::strerror(errno_value));
    if (!hint.empty()) text += " (" + hint + ")";
    return text;
  }
  int exit_code() const { return kind == ErrorKind::kBadInput ? 2 : 1; }
};

template <typename T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> bad_input(std::string context, std::string hint = {}, int err = 0) {
  return std::unexpected(Error{ErrorKind::kBadInput, std::move(context), err, std::move(hint)});
}

inline std::unexpected<Error> runtime_error(std::string context, int err = 0,
                                            std::string hint = {}) {
  return std::unexpected(Error{ErrorKind::kRuntime, std::move(context), err, std::move(hint)});
}

// For libbpf calls, which return -errno.
inline int errno_from(long libbpf_result) {
  return libbpf_result < 0 ? static_cast<int>(-libbpf_result) : errno;
}

}  // namespace funclatency
