// gzip of a buffer, read back with zlib's own inflate: text that shrinks
// tenfold, random bytes that do not shrink at all (the output must grow past
// its first guess of an eighth of the input), and nothing.
#include "common/gzip.h"
#include "gunzip_util.h"

#include <gtest/gtest.h>
#include <random>
#include <string>

using namespace gpuobs;

using gpuobs::testing::gunzip;

TEST(Gzip, RoundTripsTextRandomBytesAndNothing) {
  std::string text;
  for (int i = 0; i < 20000; ++i)
    text += "cuLaunchKernel <- at::native::add <- forward (train.py:" + std::to_string(i % 7) + ")\n";
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
