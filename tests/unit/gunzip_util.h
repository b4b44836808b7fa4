// gzip's inverse for the tests that check what gpuobs compressed (pprof
// files, ClickHouse request bodies): zlib's own inflate, at most max_bytes.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

namespace gpuobs::testing {

inline std::string gunzip(const std::string& gz, size_t max_bytes = size_t{1} << 20) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out(max_bytes + 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

}  // namespace gpuobs::testing
