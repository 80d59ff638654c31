#include "symbols/process_files.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace funclatency {
namespace {

std::string proc_path(int pid, const char* entry) {
  return "/proc/" + std::to_string(pid) + "/" + entry;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat first, second;
  return stat(a.c_str(), &first) == 0 && stat(b.c_str(), &second) == 0 &&
         first.st_dev == second.st_dev && first.st_ino == second.st_ino;
}

// Both exist and are not the same file.
bool different_files(const std::string& a, const std::string& b) {
  struct stat first, second;
  return stat(a.c_str(), &first) == 0 && stat(b.c_str(), &second) == 0 &&
         (first.st_dev != second.st_dev || first.st_ino != second.st_ino);
}

constexpr std::string_view kDeletedSuffix = " (deleted)";

}  // namespace

Result<void> require_process(int pid) {
  struct stat status;
  if (pid <= 0 || stat(proc_path(pid, "").c_str(), &status) != 0) {
    return bad_input("no process with PID " + std::to_string(pid));
  }
  return {};
}

std::string process_root_prefix(int pid) {
  const std::string root = proc_path(pid, "root");
  // A private mount namespace usually keeps the same root directory: its own
  // mounts are seen only through /proc/PID/root. Unreadable namespace links
  // (another user's process) count as the same namespace.
  const bool same_namespace = !different_files(proc_path(pid, "ns/mnt"), "/proc/self/ns/mnt");
  return same_file(root, "/") && same_namespace ? std::string() : root;
}

std::string path_in_process(int pid, const std::string& openable) {
  const std::string root = proc_path(pid, "root");
  if (openable.starts_with(root + "/")) return openable.substr(root.size());
  if (openable == proc_path(pid, "exe")) {
    char buffer[PATH_MAX];
    const ssize_t length = readlink(openable.c_str(), buffer, sizeof buffer - 1);
    if (length > 0 && buffer[0] == '/') {
      std::string path(buffer, static_cast<size_t>(length));
      if (path.ends_with(kDeletedSuffix)) path.resize(path.size() - kDeletedSuffix.size());
      return path;
    }
  }
  return openable;
}

Result<std::string> process_executable(int pid) {
  if (auto exists = require_process(pid); !exists) return std::unexpected(exists.error());
  const std::string link = proc_path(pid, "exe");
  char buffer[PATH_MAX];
  const ssize_t length = readlink(link.c_str(), buffer, sizeof buffer - 1);
  if (length < 0) {
    const int err = errno;
    std::string what = "read the executable of PID " + std::to_string(pid) + " (" + link + ")";
    if (err == EACCES || err == EPERM) {
      return bad_input(std::move(what),
                       "another user's process needs CAP_SYS_PTRACE: run as root or grant it", err);
    }
    return runtime_error(std::move(what), err);
  }
  std::string path(buffer, static_cast<size_t>(length));
  if (path.ends_with(kDeletedSuffix)) path.resize(path.size() - kDeletedSuffix.size());
  // The name the process sees is the one users read; use it when it is the
  // same file for us too, else reach it through the process's root, else
  // through the exe link itself (a deleted or hidden file).
  if (same_file(path, link)) return path;
  const std::string in_root = process_root_prefix(pid) + path;
  if (same_file(in_root, link)) return in_root;
  return link;
}

Result<std::vector<std::string>> executable_mappings(int pid) {
  if (auto exists = require_process(pid); !exists) return std::unexpected(exists.error());
  std::ifstream maps(proc_path(pid, "maps"));
  if (!maps) {
    const int err = errno;
    return runtime_error("read " + proc_path(pid, "maps"), err);
  }
  std::vector<std::string> files;
  std::string line;
  while (std::getline(maps, line)) {
    // address perms offset dev inode path (the path may hold spaces)
    std::istringstream fields(line);
    std::string address, permissions, offset, device, inode;
    if (!(fields >> address >> permissions >> offset >> device >> inode)) continue;
    if (permissions.size() < 3 || permissions[2] != 'x') continue;
    std::string path;
    std::getline(fields >> std::ws, path);
    if (path.empty() || path.front() != '/' || path.ends_with(kDeletedSuffix)) continue;
    if (std::find(files.begin(), files.end(), path) == files.end()) files.push_back(path);
  }
  return files;
}

}  // namespace funclatency
