// Who holds which kernel slot (a per-CPU fn_stats entry) while tracing: a
// function in kernel mode holds one; one that leaves kernel mode keeps it
// while it cools (a call that read its old config may still add to it), then
// the slot is free for another. Pure, so the bookkeeping is tested alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace funclatency {

class KernelSlots {
 public:
  using Clock = std::chrono::steady_clock;
  // `owners[s]`: the function that holds slot s at the start, if any.
  KernelSlots(uint32_t slots, const std::vector<std::optional<uint32_t>>& owners,
              Clock::duration cooling);

  // A free slot for fn_id, which then holds it; nothing when none is free.
  std::optional<uint32_t> take(uint32_t fn_id);
  // fn_id left kernel mode: its slot cools from `now` on.
  void release(uint32_t fn_id, Clock::time_point now);
  // Frees the slots that cooled long enough by `now` and returns them. Read
  // their totals first: until now they are the function's that held them.
  std::vector<uint32_t> reclaim(Clock::time_point now);

  // The function whose calls slot s holds (its holder, or the one it cools
  // from), if any.
  std::optional<uint32_t> owner(uint32_t slot) const { return slots_[slot].owner; }
  std::optional<uint32_t> slot_of(uint32_t fn_id) const;
  uint32_t size() const { return static_cast<uint32_t>(slots_.size()); }
  bool any_free() const;
  bool any_cooling() const;

 private:
  struct Slot {
    std::optional<uint32_t> owner;
    std::optional<Clock::time_point> cooling_since;  // set while cooling
  };
  std::vector<Slot> slots_;
  Clock::duration cooling_;
};

}  // namespace funclatency
