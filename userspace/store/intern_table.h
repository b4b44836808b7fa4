// Interning of fixed-size keys (launch shapes) for the writer's hot path: key
// -> id in an open-addressing table of small slots, the keys themselves in
// one vector. A training step repeats a few thousand shapes per process; with
// std::unordered_map every lookup chased a bucket pointer to a separately
// allocated 170-byte node (two cache misses): 24% of the writer's CPU at 8
// processes x 1000 shapes (bench/writer_bench, perf). Here a lookup reads one
// 24-byte slot and, only when the 64-bit hash matches, compares one key.
#pragma once

#include <sys/random.h>

#include <chrono>
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
  // Pairs of words are multiplied into 128 bits and folded, each pair
  // independently of the others (the writer hashes a launch's 112-byte key
  // per launch: a chain of dependent multiplies per word cost 6% of the
  // daemon's CPU, issue 17). find() compares whole keys, so a collision
  // costs a probe, never a wrong id.
  static uint64_t hash(const Key& k) {
    const auto* p = reinterpret_cast<const unsigned char*>(&k);
    constexpr uint64_t kA = 0xa0761d6478bd642fULL, kB = 0xe7037ed1a0b428dbULL, kC = 0x8ebc6af09c88c6e3ULL;
    auto fold = [](uint64_t x, uint64_t y) {
      const unsigned __int128 m = static_cast<unsigned __int128>(x) * y;
      return static_cast<uint64_t>(m) ^ static_cast<uint64_t>(m >> 64);
    };
    // Seeded per process: fold(x, 0) is 0 whatever x, so a word equal to its
    // constant would make its pair's other word count for nothing; with a
    // random seed in the constants no program can aim at that.
    const uint64_t seed = hash_seed();
    uint64_t acc = sizeof(Key) * kC;
    size_t i = 0;
    for (; i + 16 <= sizeof(Key); i += 16) {
      uint64_t w0, w1;
      std::memcpy(&w0, p + i, 8);
      std::memcpy(&w1, p + i + 8, 8);
      acc += fold(w0 ^ (kA + i * kC + seed), w1 ^ (kB - i * kC - seed));  // the position in the key counts
    }
    uint64_t tail[2] = {0, 0};
    std::memcpy(tail, p + i, sizeof(Key) - i);
    acc += fold(tail[0] ^ (kC + seed), tail[1] ^ (kA - seed));
    return fold(acc ^ kA, kB);
  }
  // Random, once per process (getrandom; the clock if that fails).
  static uint64_t hash_seed() {
    static const uint64_t seed = [] {
      uint64_t s = 0;
      if (::getrandom(&s, sizeof s, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof s))
        s = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
      return s * 2 + 1;
    }();
    return seed;
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
