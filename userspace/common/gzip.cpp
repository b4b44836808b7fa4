#include "common/gzip.h"

#include <zlib.h>

#include <limits>

namespace gpuobs {

Result<std::string> gzip(std::string_view bytes, int level) {
  // One deflate call takes at most 4 GiB (uInt).
  if (bytes.size() > std::numeric_limits<uInt>::max()) return make_error("gzip: more than 4 GiB at once");
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return make_error("cannot start gzip compression");
  std::string out(deflateBound(&z, static_cast<uLong>(bytes.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return make_error("gzip compression failed");
  return out;
}

}  // namespace gpuobs
