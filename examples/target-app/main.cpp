// target-app: a program to point funclatency at. Each iteration of a worker
// calls slow_op() once with a sleep drawn from a clustered distribution, then
// fast_op() four times and cet_op() once. With --truth it writes what it
// measured around every call, which the end-to-end tests compare with the tool.
// Its options are parsed with getopt_long: the demo builds this program, and
// a header-only parser would cost it more than the rest of it together.
#include <getopt.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "traced_functions.h"
#include "workload_support.h"

namespace {

using funclatency::workload::FunctionTruth;
using funclatency::workload::timed_call;

struct Options {
  std::uint64_t calls = 0;  // slow_op calls over all threads; 0 = until stopped
  unsigned threads = 1;
  double rate = 0;  // iterations per second per thread; 0 = as fast as possible
  std::uint64_t seed = 1;
  std::string truth_path;
  bool wait_signal = false;
  double slow_scale = 1.0;  // multiplies every slow_op sleep (a "slower build" for diff)
};

// One cluster of slow_op durations, in microseconds. Every cluster lies at
// least 15% away from each power-of-two edge, so each one fills exactly one
// log2 usec row and a few microseconds of probe overhead cannot move a call.
struct Cluster {
  double centre_us;
  double half_width_us;
  double weight;
};
// Rows 256-511, 512-1023, 1024-2047, 2048-4095, 4096-8191.
constexpr std::array<Cluster, 5> kClusters{
    {{360, 40, 30}, {720, 80, 25}, {1450, 150, 20}, {2900, 300, 15}, {5800, 600, 10}}};

// Picks a cluster by weight, then a point with a triangular shape inside it.
class SleepDistribution {
 public:
  explicit SleepDistribution(std::uint64_t seed) : random_(seed) {
    std::vector<double> weights;
    for (const Cluster& cluster : kClusters) weights.push_back(cluster.weight);
    pick_cluster_ = std::discrete_distribution<std::size_t>(weights.begin(), weights.end());
  }

  std::uint64_t next_ns() {
    const Cluster& cluster = kClusters[pick_cluster_(random_)];
    double offset = (unit_(random_) + unit_(random_) - 1.0) * cluster.half_width_us;
    return static_cast<std::uint64_t>((cluster.centre_us + offset) * 1000.0);
  }

 private:
  std::mt19937_64 random_;
  std::discrete_distribution<std::size_t> pick_cluster_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
};

struct Truths {
  FunctionTruth& slow;
  FunctionTruth& fast;
  FunctionTruth& cet;
};

constexpr int kFastCallsPerIteration = 4;

void run_worker(std::uint64_t iterations, double rate, std::uint64_t seed, double slow_scale,
                Truths truths, const funclatency::workload::RunControl& control) {
  SleepDistribution sleeps(seed);
  funclatency::workload::Pacer pacer(rate);
  std::uint64_t sink = 0;
  for (std::uint64_t i = 0; i < iterations && !control.stop_requested(); ++i) {
    pacer.wait_for_call(i);
    auto sleep_ns = static_cast<std::uint64_t>(static_cast<double>(sleeps.next_ns()) * slow_scale);
    sink += timed_call(truths.slow, [&] { return slow_op(sleep_ns); });
    for (int k = 0; k < kFastCallsPerIteration; ++k) {
      sink += timed_call(truths.fast, [&] { return fast_op(sink + k); });
    }
    sink += timed_call(truths.cet, [&] { return cet_op(sink); });
  }
  // Keeps the results observable so the calls are not optimised away.
  asm volatile("" : : "r"(sink));
}

constexpr const char* kUsage =
    "usage: target-app [--calls N] [--threads N] [--rate R] [--seed N] [--truth FILE]\n"
    "                  [--slow-scale X] [--wait-signal]\n"
    "target-app: a program whose slow_op(), fast_op() and cet_op() funclatency can time\n"
    "\n"
    "  --calls N       slow_op calls over all threads (0 = until SIGINT)\n"
    "  --threads N     worker threads (1-1024)\n"
    "  --rate R        slow_op calls per second per thread (0 = no limit)\n"
    "  --seed N        seed of the sleep distribution\n"
    "  --truth FILE    at exit, write calls and the measured log2 usec histogram per\n"
    "                  function as JSON\n"
    "  --slow-scale X  multiply slow_op's sleeps by X (1.5: a 1.5x slower slow_op, for diff)\n"
    "  --wait-signal   print 'ready pid=N', then start only when SIGUSR1 arrives\n"
    "\n"
    "Examples:\n"
    "  target-app &                      # slow_op forever, about 600 calls/s\n"
    "  funclatency -i 2 ./target-app:slow_op -p $!\n"
    "  target-app --calls 1000 --threads 4 --truth truth.json\n";

// The whole text as a finite number, or nothing.
std::optional<double> real_number(const char* text) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(value)) return std::nullopt;
  return value;
}

// Parses argv into `options`; returns an exit code when main() should stop
// (--help: 0, bad usage: 2, with the reason on stderr).
std::optional<int> parse_options(int argc, char** argv, Options& options) {
  enum { kCalls = 1, kThreads, kRate, kSeed, kTruth, kSlowScale, kWaitSignal };
  static const option kLong[] = {{"calls", required_argument, nullptr, kCalls},
                                 {"threads", required_argument, nullptr, kThreads},
                                 {"rate", required_argument, nullptr, kRate},
                                 {"seed", required_argument, nullptr, kSeed},
                                 {"truth", required_argument, nullptr, kTruth},
                                 {"slow-scale", required_argument, nullptr, kSlowScale},
                                 {"wait-signal", no_argument, nullptr, kWaitSignal},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  struct Handler final : funclatency::workload::OptionHandler {
    explicit Handler(Options& into) : options(into) {}
    Options& options;
    std::optional<int> handle(int code, const char* value) override {
      using funclatency::workload::whole_number;
      auto bad = [&](const char* name, const char* expected) {
        return funclatency::workload::bad_option_value("target-app", name, value, expected);
      };
      switch (code) {
        case kCalls:
          if (auto n = whole_number(value))
            options.calls = *n;
          else
            return bad("calls", "a whole number");
          break;
        case kThreads:
          if (auto n = whole_number(value); n && *n >= 1 && *n <= 1024)
            options.threads = static_cast<unsigned>(*n);
          else
            return bad("threads", "a whole number from 1 to 1024");
          break;
        case kRate:
          if (auto x = real_number(value); x && *x >= 0)
            options.rate = *x;
          else
            return bad("rate", "a number >= 0");
          break;
        case kSeed:
          if (auto n = whole_number(value))
            options.seed = *n;
          else
            return bad("seed", "a whole number");
          break;
        case kTruth:
          options.truth_path = value;
          break;
        case kSlowScale:
          if (auto x = real_number(value); x && *x > 0)
            options.slow_scale = *x;
          else
            return bad("slow-scale", "a number > 0");
          break;
        case kWaitSignal:
          options.wait_signal = true;
          break;
      }
      return std::nullopt;
    }
  } handler(options);
  return funclatency::workload::parse_command_line(argc, argv, "target-app", kLong, kUsage,
                                                   handler);
}

}  // namespace

int main(int argc, char** argv) {
  funclatency::workload::RunControl control;

  Options options;
  if (auto code = parse_options(argc, argv, options)) return *code;

  funclatency::workload::TruthReport report;
  Truths truths{report.add("slow_op"), report.add("fast_op"), report.add("cet_op")};
  truths.slow.keep_medians();  // its calls are few (tests/e2e/test_report_diff.py reads them)

  control.announce_and_wait(options.wait_signal);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < options.threads && !control.stop_requested(); ++t) {
    std::uint64_t iterations = options.calls == 0 ? UINT64_MAX
                                                  : funclatency::workload::share_of_calls(
                                                        options.calls, options.threads, t);
    workers.emplace_back(run_worker, iterations, options.rate, options.seed + t, options.slow_scale,
                         truths, std::cref(control));
  }
  for (std::thread& worker : workers) worker.join();

  if (!options.truth_path.empty() && !report.write(options.truth_path, "target-app")) {
    std::fprintf(stderr, "target-app: cannot write %s\n", options.truth_path.c_str());
    return 1;
  }
  return 0;
}
