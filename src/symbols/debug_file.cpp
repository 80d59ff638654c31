#include "symbols/debug_file.h"

#include <string>
#include <vector>

namespace funclatency {
namespace {

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}

std::string join(const std::string& directory, const std::string& name) {
  return directory.ends_with('/') ? directory + name : directory + "/" + name;
}

bool belongs_to(const ElfFile& candidate, const ElfFile& binary, bool check_crc) {
  if (!candidate.has_symtab()) return false;
  if (binary.build_id() && candidate.build_id()) return *binary.build_id() == *candidate.build_id();
  if (check_crc && binary.debug_link()) return candidate.crc32() == binary.debug_link()->crc;
  return false;
}

}  // namespace

std::optional<ElfFile> find_debug_file(const ElfFile& binary, const SearchPaths& paths) {
  if (const auto& build_id = binary.build_id(); build_id && build_id->size() > 2) {
    for (const auto& root : paths.debug_roots) {
      const std::string path =
          join(root, ".build-id/" + build_id->substr(0, 2) + "/" + build_id->substr(2) + ".debug");
      if (auto candidate = ElfFile::open(path);
          candidate && belongs_to(*candidate, binary, false)) {
        return std::move(*candidate);
      }
    }
  }
  if (const auto& link = binary.debug_link()) {
    const std::string directory = directory_of(binary.path());
    std::vector<std::string> places = {join(directory, link->file_name),
                                       join(directory, ".debug/" + link->file_name)};
    for (const auto& root : paths.debug_roots) {
      places.push_back(join(root + directory, link->file_name));
    }
    for (const auto& path : places) {
      if (path == binary.path()) continue;
      if (auto candidate = ElfFile::open(path); candidate && belongs_to(*candidate, binary, true)) {
        return std::move(*candidate);
      }
    }
  }
  return std::nullopt;
}

}  // namespace funclatency
