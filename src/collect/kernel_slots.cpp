#include "collect/kernel_slots.h"

namespace funclatency {

KernelSlots::KernelSlots(uint32_t slots, const std::vector<std::optional<uint32_t>>& owners,
                         Clock::duration cooling)
    : slots_(slots), cooling_(cooling) {
  for (uint32_t slot = 0; slot < slots && slot < owners.size(); slot++) {
    slots_[slot].owner = owners[slot];
  }
}

std::optional<uint32_t> KernelSlots::take(uint32_t fn_id) {
  for (uint32_t slot = 0; slot < slots_.size(); slot++) {
    if (slots_[slot].owner) continue;
    slots_[slot].owner = fn_id;
    return slot;
  }
  return std::nullopt;
}

void KernelSlots::release(uint32_t fn_id, Clock::time_point now) {
  for (Slot& slot : slots_) {
    if (slot.owner == fn_id && !slot.cooling_since) slot.cooling_since = now;
  }
}

std::vector<uint32_t> KernelSlots::reclaim(Clock::time_point now) {
  std::vector<uint32_t> freed;
  for (uint32_t index = 0; index < slots_.size(); index++) {
    Slot& slot = slots_[index];
    if (!slot.cooling_since || now - *slot.cooling_since < cooling_) continue;
    slot = Slot{};
    freed.push_back(index);
  }
  return freed;
}

std::optional<uint32_t> KernelSlots::slot_of(uint32_t fn_id) const {
  for (uint32_t slot = 0; slot < slots_.size(); slot++) {
    if (slots_[slot].owner == fn_id && !slots_[slot].cooling_since) return slot;
  }
  return std::nullopt;
}

bool KernelSlots::any_cooling() const {
  for (const Slot& slot : slots_) {
    if (slot.cooling_since) return true;
  }
  return false;
}

bool KernelSlots::any_free() const {
  for (const Slot& slot : slots_) {
    if (!slot.owner) return true;
  }
  return false;
}

}  // namespace funclatency
