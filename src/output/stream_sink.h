// What the console sink and the JSON sink share: text written to a stream
// (stdout, or a file), flushed per write, and the one meaning of "broken"
// for both: a write failed (most often EPIPE, the reader of `| head` went
// away), so the sink writes nothing more and the run may stop.
#pragma once

#include <cstdio>
#include <string_view>

#include "model/sink.h"

namespace funclatency {

class StreamSink : public Sink {
 public:
  explicit StreamSink(std::FILE* out) : out_(out) {}
  bool broken() const final { return broken_; }

 protected:
  // Writes and flushes `text`; nothing once broken.
  void print(std::string_view text) {
    if (broken_) return;
    if (std::fwrite(text.data(), 1, text.size(), out_) != text.size() || std::fflush(out_) != 0) {
      broken_ = true;
    }
  }

 private:
  std::FILE* out_;
  bool broken_ = false;
};

}  // namespace funclatency
