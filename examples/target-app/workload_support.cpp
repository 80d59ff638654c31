#include "workload_support.h"

#include <signal.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unordered_set>

namespace funclatency::workload {

std::size_t usec_row(std::uint64_t duration_ns) {
  std::uint64_t usec = duration_ns / 1000;
  if (usec < 2) return 0;
  std::size_t row = std::bit_width(usec) - 1;
  return row < kLog2Rows ? row : kLog2Rows - 1;
}

std::uint64_t edge_margin_us(std::uint64_t row_low_us) {
  return std::max<std::uint64_t>(50, row_low_us / 16);
}

std::uint64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(now.tv_nsec);
}

void precise_sleep_ns(std::uint64_t duration_ns, std::uint64_t spin_ns) {
  const std::uint64_t deadline = monotonic_ns() + duration_ns;
  if (duration_ns > spin_ns) {
    std::uint64_t wake = deadline - spin_ns;
    timespec wake_at{static_cast<time_t>(wake / 1'000'000'000ull),
                     static_cast<long>(wake % 1'000'000'000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake_at, nullptr) == EINTR) {
    }
  }
  while (monotonic_ns() < deadline) {
  }
}

std::optional<std::uint64_t> whole_number(const char* text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-') return std::nullopt;
  return value;
}

std::optional<int> parse_command_line(int argc, char** argv, const char* program,
                                      const ::option* table, const std::string& usage,
                                      OptionHandler& handler) {
  opterr = 0;
  for (int index = 0, code; (code = getopt_long(argc, argv, "h", table, &index)) != -1;) {
    if (code == 'h') {
      std::fputs(usage.c_str(), stdout);
      return 0;
    }
    if (code == '?') {
      std::fprintf(stderr, "%s: unknown option or missing value: %s (see --help)\n", program,
                   argv[optind - 1]);
      return 2;
    }
    if (auto exit_code = handler.handle(code, optarg)) return exit_code;
  }
  if (optind < argc) {
    std::fprintf(stderr, "%s: unexpected argument: %s (see --help)\n", program, argv[optind]);
    return 2;
  }
  return std::nullopt;
}

int bad_option_value(const char* program, const char* name, const char* value,
                     const char* expected) {
  std::fprintf(stderr, "%s: --%s %s: expected %s (see --help)\n", program, name, value, expected);
  return 2;
}

std::uint64_t involuntary_switches() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<std::uint64_t>(usage.ru_nivcsw);
}

namespace {

void atomic_min(std::atomic<std::uint64_t>& target, std::uint64_t value) {
  std::uint64_t current = target.load(std::memory_order_relaxed);
  while (value < current && !target.compare_exchange_weak(current, value)) {
  }
}

void atomic_max(std::atomic<std::uint64_t>& target, std::uint64_t value) {
  std::uint64_t current = target.load(std::memory_order_relaxed);
  while (value > current && !target.compare_exchange_weak(current, value)) {
  }
}

}  // namespace

BodySpan*& current_body_span() {
  thread_local BodySpan* span = nullptr;
  return span;
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!empty_.empty()) {
    if (!empty_.back()) out_ += ',';
    empty_.back() = false;
  }
}

JsonWriter& JsonWriter::open(char bracket) {
  before_value();
  out_ += bracket;
  empty_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  out_ += bracket;
  if (!empty_.empty()) empty_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::scalar(const std::string& text) {
  before_value();
  out_ += text;
  return *this;
}

void FunctionTruth::record_return(std::uint64_t duration_ns, bool preempted,
                                  std::optional<std::uint64_t> body_ns) {
  // Functions this thread has already returned from once.
  thread_local std::unordered_set<const FunctionTruth*> returned_before;
  bool first_return_on_thread = returned_before.insert(this).second;
  bool disturbed = preempted || first_return_on_thread;
  returned_.fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(duration_ns, std::memory_order_relaxed);
  if (!disturbed) {
    undisturbed_.fetch_add(1, std::memory_order_relaxed);
    undisturbed_sum_ns_.fetch_add(duration_ns, std::memory_order_relaxed);
  }
  atomic_min(min_ns_, duration_ns);
  atomic_max(max_ns_, duration_ns);
  if (keep_medians_) keep(duration_ns, body_ns);
  std::size_t row = usec_row(duration_ns);
  rows_[row].fetch_add(1, std::memory_order_relaxed);
  if (body_ns) {
    timed_bodies_.fetch_add(1, std::memory_order_relaxed);
    body_sum_ns_.fetch_add(std::min(*body_ns, duration_ns), std::memory_order_relaxed);
    atomic_max(body_max_ns_, std::min(*body_ns, duration_ns));
    std::size_t body_row = usec_row(std::min(*body_ns, duration_ns));
    if (body_row < row) body_lower_[row][body_row].fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::uint64_t row_low_us = row == 0 ? 0 : (1ull << row);
  // Each call is counted in at most one of the two: disturbed covers more.
  if (disturbed) {
    disturbed_[row].fetch_add(1, std::memory_order_relaxed);
  } else if (row > 0 && duration_ns / 1000 - row_low_us < edge_margin_us(row_low_us)) {
    near_edge_[row].fetch_add(1, std::memory_order_relaxed);
  }
}

void FunctionTruth::keep(std::uint64_t duration_ns, std::optional<std::uint64_t> body_ns) {
  std::lock_guard<std::mutex> lock(kept_mutex_);
  if (!kept_all_ || kept_ns_.size() == kMaxKeptCalls) {
    kept_all_ = false;
    return;
  }
  kept_ns_.push_back(duration_ns);
  if (body_ns) kept_body_ns_.push_back(std::min(*body_ns, duration_ns));
}

namespace {

// The call at rank ceil(n / 2) (1-based) of `values` once sorted: the median
// as funclatency reads its histograms ("the smallest value with at least half
// of the calls at or below it").
std::uint64_t median_of(std::vector<std::uint64_t> values) {
  const std::size_t rank = std::max<std::size_t>(1, (values.size() + 1) / 2);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank - 1),
                   values.end());
  return values[rank - 1];
}

// A JSON string: function and program names are printable, but quote what
// JSON requires all the same.
void append_json_string(std::string& out, const std::string& text) {
  out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
}

void append_field(std::string& out, const char* key, std::uint64_t value) {
  out += '"';
  out += key;
  out += "\":";
  out += std::to_string(value);
}

}  // namespace

JsonWriter& JsonWriter::key(const std::string& name) {
  before_value();
  append_json_string(out_, name);
  out_ += ':';
  after_key_ = true;
  return *this;
}

void FunctionTruth::append_json(std::string& out) const {
  std::uint64_t returned = returned_.load();
  std::uint64_t abandoned = abandoned_.load();
  out += "{\"name\":";
  append_json_string(out, name_);
  out += ',';
  append_field(out, "calls", returned + abandoned);
  out += ',';
  append_field(out, "returned", returned);
  out += ',';
  append_field(out, "abandoned", abandoned);
  out += ',';
  append_field(out, "sum_ns", sum_ns_.load());
  out += ',';
  append_field(out, "undisturbed", undisturbed_.load());
  out += ',';
  append_field(out, "undisturbed_sum_ns", undisturbed_sum_ns_.load());
  out += ',';
  append_field(out, "min_ns", returned == 0 ? 0 : min_ns_.load());
  out += ',';
  append_field(out, "max_ns", max_ns_.load());
  out += ',';
  append_field(out, "timed_bodies", timed_bodies_.load());
  out += ',';
  append_field(out, "body_sum_ns", body_sum_ns_.load());
  out += ',';
  append_field(out, "body_max_ns", body_max_ns_.load());
  {
    std::lock_guard<std::mutex> lock(kept_mutex_);
    if (kept_all_ && !kept_ns_.empty() && kept_ns_.size() == returned) {
      out += ',';
      append_field(out, "p50_ns", median_of(kept_ns_));
      if (kept_body_ns_.size() == kept_ns_.size()) {
        out += ',';
        append_field(out, "body_p50_ns", median_of(kept_body_ns_));
      }
    }
  }
  out += ",\"log2_usec\":[";
  bool first_row = true;
  for (std::size_t row = 0; row < kLog2Rows; ++row) {
    std::uint64_t count = rows_[row].load();
    if (count == 0) continue;
    if (!first_row) out += ',';
    first_row = false;
    out += "\n  {";
    append_field(out, "row", row);
    out += ',';
    append_field(out, "low_us", row == 0 ? 0 : (1ull << row));
    out += ',';
    append_field(out, "high_us", (2ull << row) - 1);
    out += ',';
    append_field(out, "count", count);
    out += ',';
    append_field(out, "near_edge", near_edge_[row].load());
    out += ',';
    append_field(out, "disturbed", disturbed_[row].load());
    out += ",\"body_lower\":[";
    bool first_pair = true;
    for (std::size_t lowest = 0; lowest < row; ++lowest) {
      std::uint64_t calls = body_lower_[row][lowest].load();
      if (calls == 0) continue;
      if (!first_pair) out += ',';
      first_pair = false;
      out += '[' + std::to_string(lowest) + ',' + std::to_string(calls) + ']';
    }
    out += "]}";
  }
  out += "]}";
}

bool TruthReport::write(const std::string& path, const std::string& program) const {
  std::string report = "{\"program\":";
  append_json_string(report, program);
  report += ",\"pid\":" + std::to_string(getpid()) + ",\"functions\":[";
  bool first = true;
  for (const FunctionTruth& function : functions_) {
    if (!first) report += ',';
    first = false;
    report += '\n';
    function.append_json(report);
  }
  report += "]}\n";
  // Write then rename, so a reader never sees half a file.
  std::string partial = path + ".partial";
  {
    std::ofstream out(partial);
    out << report;
    if (!out) return false;
  }
  return std::rename(partial.c_str(), path.c_str()) == 0;
}

namespace {

sigset_t control_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

RunControl::RunControl() {
  sigset_t set = control_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

RunControl::~RunControl() {
  finished_ = true;
  if (watcher_.joinable()) watcher_.join();
}

void RunControl::announce_and_wait(bool wait_for_start) {
  std::printf("ready pid=%d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  if (wait_for_start) {
    sigset_t set = control_signals();
    int signal_number = 0;
    sigwait(&set, &signal_number);
    if (signal_number != SIGUSR1) stop_ = true;
  }
  watcher_ = std::thread([this] { watch_stop_signals(); });
}

void RunControl::watch_stop_signals() {
  sigset_t set = control_signals();
  const timespec poll_interval{0, 50'000'000};
  while (!finished_.load()) {
    int signal_number = sigtimedwait(&set, nullptr, &poll_interval);
    if (signal_number == SIGINT || signal_number == SIGTERM) stop_ = true;
  }
}

void Pacer::wait_for_call(std::uint64_t call_index) const {
  if (rate_ <= 0) return;
  auto due = start_ns_ + static_cast<std::uint64_t>(static_cast<double>(call_index) * 1e9 / rate_);
  std::uint64_t now = monotonic_ns();
  if (due > now) precise_sleep_ns(due - now, 0);
}

std::uint64_t share_of_calls(std::uint64_t total, unsigned threads, unsigned index) {
  return total / threads + (index < total % threads ? 1 : 0);
}

}  // namespace funclatency::workload
