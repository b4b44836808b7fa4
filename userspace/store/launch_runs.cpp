#include "store/launch_runs.h"

namespace gpuobs {
namespace {

uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t z) { return static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1); }

// One varint at p; false when cut short or longer than 10 bytes.
bool get(std::span<const uint8_t> b, size_t& p, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 70 && p < b.size(); shift += 7) {
    uint8_t c = b[p++];
    v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (c < 0x80) return true;
  }
  return false;
}

}  // namespace

void LaunchRunEncoder::start(int64_t first_key) {
  bytes_.clear();
  first_ = key_ = first_key;
  shape_ = 0;
  launches_ = 0;
}

void LaunchRunEncoder::put(uint64_t v) {
  while (v >= 0x80) {
    bytes_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  bytes_.push_back(static_cast<char>(v));
}

void LaunchRunEncoder::add(int64_t key, int64_t shape) {
  // Unsigned differences: defined for any keys (the caller keeps them increasing).
  put(static_cast<uint64_t>(key) - static_cast<uint64_t>(key_));
  put(zigzag(static_cast<int64_t>(static_cast<uint64_t>(shape) - static_cast<uint64_t>(shape_))));
  key_ = key;
  shape_ = shape;
  ++launches_;
}

bool decode_launch_run(int64_t first_key, std::span<const uint8_t> bytes, std::vector<RunLaunch>& out) {
  const size_t before = out.size();  // a run's first launch has step 0, the others more
  uint64_t key = static_cast<uint64_t>(first_key), shape = 0;
  size_t p = 0;
  while (p < bytes.size()) {
    uint64_t dk = 0, ds = 0;
    if (!get(bytes, p, dk) || !get(bytes, p, ds) || (dk == 0 && out.size() != before) ||
        dk > static_cast<uint64_t>(kMaxRunSpanNs) * 8 + 7)
      return false;
    key += dk;
    shape += static_cast<uint64_t>(unzigzag(ds));
    if (static_cast<int64_t>(shape) < 1) return false;
    out.push_back(RunLaunch{static_cast<int64_t>(key), static_cast<int64_t>(shape)});
  }
  return true;
}

}  // namespace gpuobs
