// gzip of a buffer, read back with zlib's own inflate: text that shrinks
// tenfold, random bytes that do not shrink at all (the output must grow past
// its first guess of an eighth of the input), and nothing.
#include "common/gzip.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>

using namespace gpuobs;

namespace {

std::string gunzip(const std::string& gz, size_t expect) {
  std::string out(expect + 16, '\0');
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

}  // namespace

TEST(Gzip, RoundTripsTextRandomBytesAndNothing) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "cuLaunchKernel <- at::native::add <- forward (train.py:" + std::to_string(i % 7) + ")\n";
  std::string random(3 << 20, '\0');
  std::mt19937_64 rng(7);
  for (auto& c : random) c = static_cast<char>(rng());
  for (const std::string* in : {&text, &random}) {
    for (int level : {1, -1}) {
      auto gz = gzip(*in, level);
      ASSERT_TRUE(gz.ok());
      EXPECT_EQ(gunzip(*gz, in->size()), *in);
      if (in == &text) EXPECT_LT(gz->size(), in->size() / 10);
      else EXPECT_GT(gz->size(), in->size());  // stored: larger than an eighth, and than the input
    }
  }
  auto empty = gzip("", 1);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(gunzip(*empty, 0), "");
}
