// target-app: a program to point funclatency at. Each iteration of a worker
// calls slow_op() once with a sleep drawn from a clustered distribution, then
// fast_op() four times and cet_op() once. With --truth it writes what it
// measured around every call, which the end-to-end tests compare with the tool.
#include <CLI/CLI.hpp>
#include <array>
#include <cstdint>
#include <cstdio>
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

}  // namespace

int main(int argc, char** argv) {
  funclatency::workload::RunControl control;

  Options options;
  CLI::App app{
      "target-app: a program whose slow_op(), fast_op() and cet_op() funclatency can time"};
  app.add_option("--calls", options.calls, "slow_op calls over all threads (0 = until SIGINT)");
  app.add_option("--threads", options.threads, "worker threads")->check(CLI::Range(1u, 1024u));
  app.add_option("--rate", options.rate, "slow_op calls per second per thread (0 = no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", options.seed, "seed of the sleep distribution");
  app.add_option("--truth", options.truth_path,
                 "at exit, write calls and the measured log2 usec histogram per function as JSON");
  app.add_option("--slow-scale", options.slow_scale,
                 "multiply slow_op's sleeps by this (1.5: a 1.5x slower slow_op, for diff)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--wait-signal", options.wait_signal,
               "print 'ready pid=N', then start only when SIGUSR1 arrives");
  app.footer(
      "Examples:\n"
      "  target-app &                      # slow_op forever, about 600 calls/s\n"
      "  funclatency -i 2 ./target-app:slow_op -p $!\n"
      "  target-app --calls 1000 --threads 4 --truth truth.json");
  CLI11_PARSE(app, argc, argv);

  funclatency::workload::TruthReport report;
  Truths truths{report.add("slow_op"), report.add("fast_op"), report.add("cet_op")};

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
