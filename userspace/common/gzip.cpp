#include "common/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

namespace gpuobs {

Result<std::string> gzip(std::string_view bytes, int level) {
  // One deflate call takes at most 4 GiB (uInt).
  if (bytes.size() > std::numeric_limits<uInt>::max()) return make_error("gzip: more than 4 GiB at once");
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return make_error("cannot start gzip compression");
  // The output grows as deflate fills it, from an eighth of the input:
  // the shipper's rows compress about 10x, and a buffer of deflateBound
  // (more than the input) would be zero-filled and paged in whole for each
  // request only to be cut to a tenth.
  std::string out(std::max<size_t>(bytes.size() / 8, 4096), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  int rc;
  do {
    if (z.total_out == out.size()) out.resize(out.size() * 2);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + z.total_out);
    z.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - z.total_out, std::numeric_limits<uInt>::max()));
    rc = deflate(&z, Z_FINISH);
  } while (rc == Z_OK || (rc == Z_BUF_ERROR && z.avail_out == 0));
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return make_error("gzip compression failed");
  return out;
}

}  // namespace gpuobs
