// See proc_root_path.h: /proc/PID/root paths resolved inside that root.
#include "symbols/proc_root_path.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "common/unique_fd.h"

namespace funclatency {
namespace {

// As the kernel's MAXSYMLINKS: more symlinks on one path is a loop.
constexpr int kMaxSymlinks = 40;

// The components of `path` other than "" and ".", in order.
std::vector<std::string> components_of(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    if (!part.empty() && part != ".") parts.emplace_back(part);
    start = end + 1;
  }
  return parts;
}

std::string joined(const std::vector<std::string>& parts, size_t first, size_t last,
                   bool absolute) {
  std::string path = absolute ? "/" : "";
  for (size_t i = first; i < last; ++i) {
    if (i > first) path += '/';
    path += parts[i];
  }
  return path;
}

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<ProcRootPath> split_proc_root(std::string_view path) {
  if (!path.starts_with('/')) return std::nullopt;
  const std::vector<std::string> parts = components_of(path);
  if (parts.size() < 3 || parts[0] != "proc" || !all_digits(parts[1])) return std::nullopt;
  size_t root_end = 0;  // components making up the root
  if (parts[2] == "root") {
    root_end = 3;
  } else if (parts.size() >= 5 && parts[2] == "task" && all_digits(parts[3]) &&
             parts[4] == "root") {
    root_end = 5;
  } else {
    return std::nullopt;
  }
  return ProcRootPath{joined(parts, 0, root_end, true),
                      joined(parts, root_end, parts.size(), true)};
}

Result<std::string> resolve_in_root(int root_fd, std::string_view inside) {
  std::vector<std::string> resolved;  // symlink-free components so far
  std::vector<std::string> pending = components_of(inside);
  std::reverse(pending.begin(), pending.end());  // the next component is last
  int symlinks = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.back());
    pending.pop_back();
    if (part == "..") {
      if (!resolved.empty()) resolved.pop_back();
      continue;
    }
    resolved.push_back(std::move(part));
    // Relative to the root's fd: every component before this one is no symlink.
    const std::string relative = joined(resolved, 0, resolved.size(), false);
    struct stat status;
    if (fstatat(root_fd, relative.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) {
      const int err = errno;
      return bad_input("cannot find /" + relative, "the path is resolved inside the root", err);
    }
    if (!S_ISLNK(status.st_mode)) continue;
    if (++symlinks > kMaxSymlinks) {
      return bad_input("cannot resolve " + std::string(inside), "a symlink loop", ELOOP);
    }
    char target[PATH_MAX];
    const ssize_t length = readlinkat(root_fd, relative.c_str(), target, sizeof target - 1);
    if (length < 0) {
      const int err = errno;
      return runtime_error("read the symlink /" + relative, err);
    }
    const std::string_view target_path(target, static_cast<size_t>(length));
    resolved.pop_back();
    // An absolute target starts again at the process's root, not ours.
    if (target_path.starts_with('/')) resolved.clear();
    std::vector<std::string> more = components_of(target_path);
    pending.insert(pending.end(), more.rbegin(), more.rend());
  }
  return joined(resolved, 0, resolved.size(), true);
}

Result<std::string> real_path(const std::string& path) {
  if (auto split = split_proc_root(path)) {
    const UniqueFd root(open(split->root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root) {
      const int err = errno;
      return bad_input("cannot open " + split->root + " (for " + path + ")",
                       "the process may have exited; reading another user's process's root "
                       "needs CAP_SYS_PTRACE",
                       err);
    }
    auto inside = resolve_in_root(root.get(), split->inside);
    if (!inside) {
      Error error = inside.error();
      error.context += " in " + split->root + " (for " + path + ")";
      return std::unexpected(std::move(error));
    }
    return split->root + (*inside == "/" ? "" : *inside);
  }
  char buffer[PATH_MAX];
  if (realpath(path.c_str(), buffer) == nullptr) {
    const int err = errno;
    return bad_input("cannot find " + path, "check the path", err);
  }
  return std::string(buffer);
}

}  // namespace funclatency
