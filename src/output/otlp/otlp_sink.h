// The OTLP sink. write() only records the latest report and returns: a
// collector that is down or slow never blocks tracing or the console. Any
// cadence of reports works (interval reports, live snapshots, the final
// total): each carries running totals, and delta temporality is computed
// here as the change of the totals between two exports. A sender thread turns the recorded
// state into a request every export interval, queues it (bounded: the
// oldest request is dropped and counted when the queue is full) and sends it
// with retries. close() sends what is left within the export timeout.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "common/non_copyable.h"
#include "model/sink.h"
#include "output/otlp/otlp_convert.h"
#include "output/otlp/otlp_options.h"
#include "output/otlp/otlp_transport.h"

namespace funclatency {

// What the sink has done so far; for tests and the final log line.
struct OtlpSinkStats {
  uint64_t requests_built = 0;
  uint64_t requests_sent = 0;    // accepted by the collector
  uint64_t failed_attempts = 0;  // every attempt that did not succeed
  uint64_t dropped_requests =
      0;  // given up: queue full, rejected, out of retries, or left at close
};

class OtlpSink final : public Sink, NonCopyable {
 public:
  OtlpSink(OtlpOptions options, ExportContext context, std::unique_ptr<OtlpTransport> transport,
           OtlpLogFunction log);
  ~OtlpSink() override;

  void write(const Report& report) override;
  // Exports what write() recorded and waits for the queue to drain, for at
  // most the export timeout; then stops the sender. Idempotent.
  void close() override;

  OtlpSinkStats stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct QueuedRequest {
    otlp_pb::ExportMetricsServiceRequest request;
    int failed_attempts = 0;
    Clock::time_point next_attempt;
  };

  void run();
  // Moves the recorded report, if any, into the send queue. Sender thread only.
  void enqueue_pending();
  // Rewrites a report's intervals as the calls since the previous export.
  // Sender thread only.
  void to_delta(Report& report);
  // One attempt at the head of the queue. Sender thread only.
  void attempt_head(Clock::time_point deadline);
  void drop_head(const std::string& why);

  const OtlpOptions options_;
  const ExportContext context_;
  std::unique_ptr<OtlpTransport> transport_;
  OtlpLogFunction log_;

  // Shared between write()/close() and the sender.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Report> pending_;
  bool stopping_ = false;
  bool sender_done_ = false;
  Clock::time_point close_deadline_;
  OtlpSinkStats stats_;

  // Sender thread only.
  std::deque<QueuedRequest> queue_;
  ExporterHealth health_reported_;  // cumulative values in the previous request (for delta)
  std::vector<FunctionReport> exported_totals_;  // totals in the previous request (for delta)
  std::optional<std::chrono::system_clock::time_point> last_exported_time_;
  bool failing_ = false;            // in a streak of failures (log once per streak)
  uint64_t dropped_in_streak_ = 0;  // requests dropped in that streak
  std::mt19937_64 jitter_{std::random_device{}()};

  bool closed_ = false;
  // Last: joined first when the sink goes, before anything the sender reads.
  std::jthread sender_;
};

}  // namespace funclatency
