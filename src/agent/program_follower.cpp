// Why: see program_follower.h.
#include "agent/program_follower.h"

#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <thread>
#include <unordered_map>

#include "collect/hash_keys.h"
#include "collect/slow_thresholds.h"
#include "collect/tracing_choices.h"

namespace funclatency {

// One target and what it has attached: per file, its links and functions.
struct ProgramFollower::Followed {
  struct File {
    std::vector<UprobeLinks> links;
    std::vector<uint32_t> fn_ids;
    std::optional<SpanLinks> span;  // a span's points in this file
  };
  FollowTarget target;
  // A span instead of functions: its points in the program's files, at
  // span index `span_index` (function id span_first_fn + span_index).
  std::optional<SpanSpec> span;
  uint32_t span_index = 0;
  bool span_joined = false;  // its report group is in the aggregator
  std::map<FileId, File> files;
  // Files that are not this program, each with the mount namespace it was
  // judged in: the path `program` names is resolved in a process's own
  // namespace, so the file one process runs by another path (a host process
  // running what a container mounts at the program's path) can be the
  // program in another namespace.
  std::set<std::pair<FileId, uint64_t>> elsewhere;
  // The names this program's files were found to have (after symlinks).
  std::set<std::string> file_names;
};

namespace {

// Files known to be other programs are forgotten past this many (a host
// that runs ever new executables must not grow us without bound).
constexpr size_t kMaxElsewhere = 65536;

std::string_view basename_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// A target's own mode as the probes start in it; nothing: the run's (auto).
std::optional<uint32_t> own_mode_of(const std::optional<ModeChoice>& mode) {
  if (!mode || *mode == ModeChoice::kAuto) return std::nullopt;
  return kernel_mode_of(*mode);
}

// The names an exec of `program` may go by (a path's last part, or the
// file name itself): what the exec watch lets through for the follower to judge.
std::string exec_name_of(const std::string& program) {
  return std::string(basename_of(program));
}

// The name process `pid`'s program file has (after symlinks), if it can be read.
std::optional<std::string> file_name_of(int pid) {
  char target[PATH_MAX];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t length = readlink(link.c_str(), target, sizeof target - 1);
  if (length <= 0) return std::nullopt;
  std::string_view path(target, static_cast<size_t>(length));
  if (path.ends_with(" (deleted)")) path.remove_suffix(10);
  return std::string(basename_of(path));
}

}  // namespace

std::string_view follow_failure_name(FollowFailure failure) {
  switch (failure) {
    case FollowFailure::kNoFunction:
      return "no_function";
    case FollowFailure::kNoRoom:
      return "no_room";
    case FollowFailure::kKernelRefused:
      return "kernel_refused";
    case FollowFailure::kCount:
      break;
  }
  return "unknown";
}

Result<std::optional<std::string>> program_in_process(int pid, const std::string& program) {
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string exe_link = proc + "/exe";
  struct stat exe {};
  if (stat(exe_link.c_str(), &exe) != 0) {
    return runtime_error(fmt::format("read the program of process {}", pid), errno);
  }
  if (program.starts_with('/')) {
    // The program as the process sees it, through its own root: the same
    // file when stat() says so in the process's own mount namespace.
    const std::string path = proc + "/root" + program;
    struct stat named {};
    if (stat(path.c_str(), &named) != 0) return std::optional<std::string>();
    if (named.st_dev != exe.st_dev || named.st_ino != exe.st_ino) {
      return std::optional<std::string>();
    }
    return std::optional<std::string>(path);
  }
  char target[PATH_MAX];
  const ssize_t length = readlink(exe_link.c_str(), target, sizeof target - 1);
  if (length < 0) return runtime_error(fmt::format("read the program of process {}", pid), errno);
  std::string_view inside(target, static_cast<size_t>(length));
  if (inside.ends_with(" (deleted)")) inside.remove_suffix(10);
  if (basename_of(inside) != program || !inside.starts_with('/')) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(proc + "/root" + std::string(inside));
}

ProgramFollower::ProgramFollower(std::unique_ptr<ExecWatch> watch, FunctionAttacher& attacher,
                                 BpfObject& object, Aggregator& aggregator, Note note, Note detail,
                                 TestDelay test_delay, SpanHooks span_hooks)
    : watch_(std::move(watch)),
      attacher_(attacher),
      object_(object),
      aggregator_(aggregator),
      note_(std::move(note)),
      detail_(std::move(detail)),
      test_delay_(test_delay),
      span_hooks_(std::move(span_hooks)) {}

ProgramFollower::~ProgramFollower() = default;

namespace {

bool same_span(const SpanSpec& a, const SpanSpec& b) {
  return a.name == b.name && a.text == b.text;
}

// A removed span's open keys (function id `fn_id`), deleted: with its probes
// gone none can end, and its report must count them lost before it goes.
Result<uint64_t> take_open_spans_of(int open_spans_fd, uint32_t fn_id) {
  auto keys = keys_of_processes<fl_span_key>(
      open_spans_fd, [](uint32_t) { return true; }, "open spans (open_spans)");
  if (!keys) return std::unexpected(keys.error());
  uint64_t taken = 0;
  for (const fl_span_key& key : *keys) {
    if (key.fn_id != fn_id) continue;
    // Counted once: deleted here, or (ENOENT) the session took it meanwhile.
    if (bpf_map_delete_elem(open_spans_fd, &key) == 0) {
      taken++;
    } else if (errno != ENOENT) {
      return runtime_error("delete an open span", errno);
    }
  }
  return taken;
}

}  // namespace

size_t ProgramFollower::new_spans(const std::vector<SpanSpec>& spans) const {
  return static_cast<size_t>(std::count_if(spans.begin(), spans.end(), [&](const SpanSpec& span) {
    return std::none_of(followed_.begin(), followed_.end(), [&](const auto& followed) {
      return followed && followed->span && same_span(*followed->span, span);
    });
  }));
}

// Detaches what a target or span no longer followed attached: a span's
// starts before its ends, then its functions; a span's still-open spans are
// counted lost before its function goes.
void ProgramFollower::stop_following(Followed& gone) {
  for (auto& [file, attached] : gone.files) {
    attached.span.reset();
    for (auto& links : attached.links) links.detach_all();
    for (uint32_t fn_id : attached.fn_ids) aggregator_.remove_function(fn_id);
  }
  if (gone.span) {
    const uint32_t fn_id = object_.options().span_first_fn + gone.span_index;
    if (gone.span_joined) {
      auto open = take_open_spans_of(object_.open_spans_fd(), fn_id);
      if (!open) note_("span " + gone.span->name + ": " + open.error().message());
      if (open && *open) aggregator_.on_lost(fn_id, LostCounts{.span_open = *open});
      aggregator_.remove_function(fn_id);
    }
    note_(fmt::format("stopped following span {}", gone.span->name));
    return;
  }
  note_(fmt::format("stopped following {} ({})", gone.target.program, gone.target.name));
}

std::vector<uint32_t> ProgramFollower::follow(const std::vector<FollowTarget>& targets,
                                              const std::vector<SpanSpec>& spans) {
  std::vector<std::unique_ptr<Followed>> next;
  std::vector<Followed*> fresh;
  for (const auto& target : targets) {
    auto kept = std::find_if(followed_.begin(), followed_.end(), [&](const auto& followed) {
      return followed && !followed->span && followed->target == target;
    });
    if (kept != followed_.end()) {
      next.push_back(std::move(*kept));
      continue;
    }
    next.push_back(std::make_unique<Followed>(Followed{target, {}, {}, {}}));
    fresh.push_back(next.back().get());
  }
  // A span is followed on its own: the program its start names, its points
  // attached in each file of it (its own judging of files, as a target's).
  for (const auto& span : spans) {
    auto kept = std::find_if(followed_.begin(), followed_.end(), [&](const auto& followed) {
      return followed && followed->span && same_span(*followed->span, span);
    });
    if (kept != followed_.end()) {
      next.push_back(std::move(*kept));
      continue;
    }
    if (next_span_index_ >= span_hooks_.room || !span_hooks_.configure) {
      note_(fmt::format("span {} is not followed: the run has room for {} spans; restart to add it",
                        span.name, span_hooks_.room));
      continue;
    }
    const uint32_t index = next_span_index_++;
    if (auto configured = span_hooks_.configure(span, index); !configured) {
      note_(fmt::format("span {} is not followed: {}", span.name, configured.error().message()));
      continue;
    }
    FollowTarget target;
    target.program = span.start.binary;
    auto followed = std::make_unique<Followed>(Followed{target, {}, {}, {}});
    followed->span = span;
    followed->span_index = index;
    next.push_back(std::move(followed));
    fresh.push_back(next.back().get());
  }
  for (auto& gone : followed_) {
    if (gone) stop_following(*gone);
  }
  followed_ = std::move(next);
  std::vector<uint32_t> added;
  // A new target has judged no file yet: every file is asked about again.
  if (!fresh.empty()) watch_->forget_known();
  publish_names();
  if (fresh.empty()) return added;
  auto running = watch_->running();
  if (!running) {
    note_("cannot list the running processes: " + running.error().message() +
          "; programs already running are traced from their next start");
    return added;
  }
  for (Followed* followed : fresh) {
    for (const auto& start : *running) handle(start, *followed, added);
  }
  for (const auto& start : *running) publish_known(start);
  publish_names();
  return added;
}

void ProgramFollower::publish_names() {
  std::set<std::string> names;
  for (const auto& followed : followed_) {
    names.insert(exec_name_of(followed->target.program));
    names.insert(followed->file_names.begin(), followed->file_names.end());
  }
  if (auto ok = watch_->set_names(names); !ok) {
    note_(ok.error().message() + "; the names it has are kept");
  }
}

void ProgramFollower::publish_known(const ProgramStart& start) {
  if (!known_everywhere(start)) return;
  // Attached by every target: known in every namespace; else in this one.
  const bool attached = std::all_of(followed_.begin(), followed_.end(), [&](const auto& followed) {
    return followed->files.contains(*start.file);
  });
  auto ok = attached ? watch_->know(*start.file) : watch_->know_in(*start.file, start.mnt_ns);
  if (!ok) detail_(ok.error().message());
}

Result<std::vector<uint32_t>> ProgramFollower::poll() {
  auto drained = watch_->drain();
  if (!drained) return std::unexpected(drained.error());
  stats_.processes_seen += drained->size();
  // A process that exec'd twice since the last poll runs its last program.
  std::unordered_map<int, size_t> last;
  std::set<int> held;
  for (size_t i = 0; i < drained->size(); i++) {
    last[(*drained)[i].pid] = i;
    if ((*drained)[i].held) held.insert((*drained)[i].pid);
  }
  std::vector<uint32_t> added;
  bool names_learned = false;
  for (size_t i = 0; i < drained->size(); i++) {
    const ProgramStart& start = (*drained)[i];
    if (last[start.pid] != i) continue;
    if (test_delay_.applies_to(start) && !known_everywhere(start)) {
      note_(fmt::format("--test-follow-delay: judging process {} in {} ms", start.pid,
                        test_delay_.wait.count()));
      std::this_thread::sleep_for(test_delay_.wait);
    }
    const size_t names_before = learned_names();
    for (auto& followed : followed_) handle(start, *followed, added);
    names_learned |= learned_names() != names_before;
    // Its probes are in (or it runs no followed program): it goes on.
    if (held.contains(start.pid)) watch_->release(start.pid);
    publish_known(start);
  }
  if (names_learned) publish_names();
  return added;
}

size_t ProgramFollower::learned_names() const {
  size_t count = 0;
  for (const auto& followed : followed_) count += followed->file_names.size();
  return count;
}

// The kernel looks a process's code mapping up only when its memory map is
// not locked (bpf_find_vma tries the lock): right after exec, while the
// loader maps libraries, it can say nothing for a moment. Asked again a few
// times; a process still there that never says is taken to run `fallback`
// (the file its record names). Nothing when the process is gone.
Result<std::optional<FileId>> ProgramFollower::file_now(int pid, const FileId& fallback) const {
  for (int attempt = 0; attempt < 20; attempt++) {
    auto file = watch_->file_of(pid);
    if (!file || *file) return file;
    if (kill(pid, 0) != 0 && errno == ESRCH) return std::optional<FileId>();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::optional<FileId>(fallback);
}

bool ProgramFollower::known_everywhere(const ProgramStart& start) const {
  return start.file && std::all_of(followed_.begin(), followed_.end(), [&](const auto& followed) {
           return followed->files.contains(*start.file) ||
                  followed->elsewhere.contains({*start.file, start.mnt_ns});
         });
}

void ProgramFollower::handle(const ProgramStart& start, Followed& followed,
                             std::vector<uint32_t>& added) {
  if (!start.file) return;
  auto known = [&followed, &start](const FileId& file) {
    return followed.files.contains(file) || followed.elsewhere.contains({file, start.mnt_ns});
  };
  if (known(*start.file)) return;
  // The record may be stale: the process exec'd again since (a wrapper that
  // execs the program), or a scan caught a forked child before its exec,
  // still mapping its parent's program. What it runs is judged now, so the
  // file it runs now is the one named: keying a program's probes by another
  // file's name would attach them a second time at its next start.
  auto now = file_now(start.pid, *start.file);
  if (!now) {
    note_(fmt::format("cannot tell which program process {} runs: {}", start.pid,
                      now.error().message()));
    return;
  }
  if (!*now) return;  // gone (program_follower.h)
  const FileId file = **now;
  if (file != *start.file) {
    detail_(fmt::format("process {} runs file {}:{} now, not {}:{} as it did at its exec",
                        start.pid, file.dev, file.ino, start.file->dev, start.file->ino));
    if (known(file)) return;
  }
  auto path = program_in_process(start.pid, followed.target.program);
  if (!path) return;  // gone before it could be looked at (program_follower.h)
  // Judged on one file: had it exec'd again meanwhile, that exec's own
  // record comes next.
  auto after = file_now(start.pid, file);
  if (!after || *after != std::optional<FileId>(file)) return;
  if (!*path) {
    if (followed.elsewhere.size() >= kMaxElsewhere) {
      followed.elsewhere.clear();
      watch_->forget_known();
    }
    followed.elsewhere.insert({file, start.mnt_ns});
    return;
  }
  // The program's file may have a name of its own (the path is a symlink):
  // a later exec by that name alone (a new version of the file reached
  // through another link) is let through too.
  if (auto name = file_name_of(start.pid)) followed.file_names.insert(*name);
  if (followed.span) {
    attach_span(followed, **path, start.pid, file, added);
    return;
  }
  attach_file(followed, **path, start.pid, file, added);
}

void ProgramFollower::attach_span(Followed& followed, const std::string& path, int pid,
                                  const FileId& file, std::vector<uint32_t>& added) {
  // Remembered even when it fails, as a function's file is.
  Followed::File& attached = followed.files[file];
  const SpanSpec& span = *followed.span;
  auto links = span_hooks_.attach(span, followed.span_index, path);
  if (!links) {
    count_failure(links.error().kind == ErrorKind::kBadInput ? FollowFailure::kNoFunction
                                                             : FollowFailure::kKernelRefused);
    note_(fmt::format("process {} runs {}, but span {} stays untraced there: {}", pid,
                      followed.target.program, span.name, links.error().message()));
    return;
  }
  attached.span = std::move(*links);
  const uint32_t fn_id = object_.options().span_first_fn + followed.span_index;
  if (!followed.span_joined) {
    ReportGroup group{span.name, followed.target.program, 0};
    group.span = true;
    aggregator_.join_function(fn_id, std::move(group));
    followed.span_joined = true;
    added.push_back(fn_id);
  }
  note_(fmt::format("following span {}: attached in {} (process {}, file {}:{})", span.name,
                    followed.target.program, pid, file.dev, file.ino));
  detail_(fmt::format("through {}", path));
}

void ProgramFollower::attach_file(Followed& followed, const std::string& path, int pid,
                                  const FileId& file, std::vector<uint32_t>& added) {
  // Remembered even when nothing attaches (no function, refused), so the file
  // is not read again at every start. An attached file cannot be deleted and
  // its inode reused while its probes hold it; one that failed can, and a
  // new file given its inode number is then skipped too (not seen here).
  Followed::File& attached = followed.files[file];
  std::set<uint64_t> offsets;  // a function two patterns name is probed once
  auto keep = [&offsets](const ProbeSite& site) { return offsets.insert(site.file_offset).second; };
  std::vector<std::pair<std::string, std::string>> labels{{"target", followed.target.name}};
  if (followed.target.name.empty()) labels.clear();
  labels.insert(labels.end(), followed.target.labels.begin(), followed.target.labels.end());
  std::string binary;
  // A target's own --by: the probes split its calls by that only.
  std::optional<uint32_t> by;
  uint32_t flags = 0;
  if (followed.target.by) {
    by = series_by_bits(*followed.target.by);
    flags = own_series_by_flags(*by);
  }
  FunctionOptions options{.mode = own_mode_of(followed.target.mode), .extra_flags = flags};
  // A target's own slow calls: its probes' threshold and floor, its reports' K.
  if (followed.target.slowest || followed.target.slower_than_ns) {
    options.slow = slow_calls_for({.slowest = followed.target.slowest.value_or(0),
                                   .slower_than_ns = followed.target.slower_than_ns});
  }
  for (const auto& function : followed.target.functions) {
    const TargetSpec spec{"", function, followed.target.regex};
    auto result = attacher_.attach(path, spec, object_, pid, std::nullopt, keep, options);
    if (!result) {
      const AttachFailure reason = result.error().reason;
      count_failure(reason == AttachFailure::kNoRoom       ? FollowFailure::kNoRoom
                    : reason == AttachFailure::kNoFunction ? FollowFailure::kNoFunction
                                                           : FollowFailure::kKernelRefused);
      note_(fmt::format("process {} runs {}, but {} stays untraced there: {}", pid,
                        followed.target.program, function, result.error().error.message()));
      continue;
    }
    for (const auto& line : result->notes) note_(line);
    for (const auto& site : result->links.sites()) {
      ReportGroup group{site.symbol, site.binary, 0, std::nullopt, std::nullopt, labels};
      group.series_by = by;
      group.slowest = followed.target.slowest;
      if (auto cost = result->cost_ns.find(site.fn_id); cost != result->cost_ns.end()) {
        group.probe_cost_ns = cost->second;
      }
      aggregator_.join_function(site.fn_id, std::move(group));
      attached.fn_ids.push_back(site.fn_id);
      added.push_back(site.fn_id);
      binary = site.binary;
    }
    attached.links.push_back(std::move(result->links));
  }
  if (attached.fn_ids.empty()) return;
  note_(fmt::format("following {}: {} function{} attached in {} (process {}, file {}:{})",
                    followed.target.name.empty() ? followed.target.program : followed.target.name,
                    attached.fn_ids.size(), attached.fn_ids.size() == 1 ? "" : "s", binary, pid,
                    file.dev, file.ino));
  detail_(fmt::format("through {}", path));
}

FollowStats ProgramFollower::stats() const {
  FollowStats stats = stats_;
  stats.exec_dropped = watch_->dropped();
  // The execs the kernel judged alone were seen too.
  stats.processes_seen += watch_->skipped();
  stats.kernel_memory_bytes = watch_->locked_memory() + object_.locked_memory();
  for (const auto& followed : followed_) {
    for (const auto& [file, attached] : followed->files) {
      if (attached.fn_ids.empty()) continue;
      stats.files_attached++;
      stats.functions_attached += attached.fn_ids.size();
    }
  }
  return stats;
}

size_t ProgramFollower::link_count() const {
  size_t count = 0;
  for (const auto& followed : followed_) {
    for (const auto& [file, attached] : followed->files) {
      for (const auto& links : attached.links) count += links.link_count();
      if (attached.span) count += attached.span->starts.size() + attached.span->ends.size();
    }
  }
  return count;
}

}  // namespace funclatency
