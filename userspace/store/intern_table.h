// Interning of fixed-size keys (launch shapes) for the writer's hot path: key
// -> id in an open-addressing table of small slots, the keys themselves in
// one vector. A training step repeats a few thousand shapes per process; with
// std::unordered_map every lookup chased a bucket pointer to a separately
// allocated 170-byte node (two cache misses): 24% of the writer's CPU at 8
// processes x 1000 shapes (bench/writer_bench, perf). Here a lookup reads one
// 24-byte slot and, only when the 64-bit hash matches, compares one key.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace gpuobs {

template <class Key>
class InternTable {
  static_assert(std::is_trivially_copyable_v<Key>, "keys are hashed and compared as bytes");

 public:
  // Keys are hashed as bytes: zero their padding before setting fields.
  static uint64_t hash(const Key& k) {
    const auto* p = reinterpret_cast<const unsigned char*>(&k);
    uint64_t h = 0x243f6a8885a308d3ULL ^ sizeof(Key);
    size_t i = 0;
    for (; i + 8 <= sizeof(Key); i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
      h ^= h >> 29;
    }
    for (; i < sizeof(Key); ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    return h ^ (h >> 32);
  }
  // The key's id, or 0 when it is not in the table.
  int64_t find(const Key& k, uint64_t h) const {
    if (slots_.empty()) return 0;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (!s.id) return 0;
      if (s.hash == h && std::memcmp(&keys_[s.key], &k, sizeof(Key)) == 0) return s.id;
    }
  }
  // Adds a key that find() did not find, with a non-zero id.
  void insert(const Key& k, uint64_t h, int64_t id) {
    if ((keys_.size() + 1) * 2 > slots_.size()) grow();
    keys_.push_back(k);
    place(Slot{h, id, static_cast<uint32_t>(keys_.size() - 1)});
  }
  void clear() {
    slots_.clear();
    keys_.clear();
    mask_ = 0;
  }
  size_t size() const { return keys_.size(); }

 private:
  struct Slot {
    uint64_t hash = 0;
    int64_t id = 0;  // 0: empty
    uint32_t key = 0;
  };
  void place(const Slot& s) {
    size_t i = s.hash & mask_;
    while (slots_[i].id) i = (i + 1) & mask_;
    slots_[i] = s;
  }
  void grow() {  // at most half full: probes stay short
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old)
      if (s.id) place(s);
  }
  std::vector<Slot> slots_;
  std::vector<Key> keys_;
  size_t mask_ = 0;
};

}  // namespace gpuobs
