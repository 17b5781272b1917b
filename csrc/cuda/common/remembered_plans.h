#pragma once
// Launch plans remembered by key, so that a repeated call costs one lookup instead of its plan's
// occupancy queries and models. A plan must depend only on what its key holds (the call's
// shape, the device and every tuning aid the planner reads). One small direct-mapped table per
// RememberedPlans object, guarded by a mutex; a clash on a slot recomputes and replaces.
//
// Key and Plan: default-constructible and copyable; Key equality-comparable, with `uint64_t hash() const`. (An aid
// changed and changed back by another thread while a plan is computed can file a stale plan: the aids are tuning
// tools, set between calls.)
#include <cstdint>
#include <initializer_list>
#include <mutex>

namespace kbit {
namespace cuda {

// A hash of a plan key's integers (each mixed by its own odd multiplier, then folded).
inline uint64_t plan_key_hash(std::initializer_list<int64_t> values) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (const int64_t v : values) h = (h ^ static_cast<uint64_t>(v)) * 0xC2B2AE3D27D4EB4Full + 0x165667B19E3779F9ull;
  return h ^ (h >> 29);
}

template <typename Key, typename Plan, int kSlots = 64>
class RememberedPlans {
 public:
  // The plan for key_now()'s key: the remembered one, else compute(), stored only if key_now() still gives the
  // same key afterwards (a tuning aid set while it ran would otherwise file a plan under the wrong key).
  template <typename KeyNow, typename Compute>
  Plan get(KeyNow&& key_now, Compute&& compute) {
    const Key key = key_now();
    Entry& e = table_[key.hash() % kSlots];
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (e.used && e.key == key) return e.plan;
    }
    const Plan plan = compute();
    if (key_now() == key) {
      std::lock_guard<std::mutex> lock(mutex_);
      e = Entry{key, plan, true};
    }
    return plan;
  }

 private:
  struct Entry {
    Key key;
    Plan plan;
    bool used;
  };
  std::mutex mutex_;
  Entry table_[kSlots] = {};
};

}  // namespace cuda
}  // namespace kbit
