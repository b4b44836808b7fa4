// gzip (RFC 1952) of a buffer in memory: pprof files on disk and the
// ClickHouse shipper's request bodies.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace gpuobs {

// level: zlib's 1 (fastest) to 9, or -1 for its default (6).
Result<std::string> gzip(std::string_view bytes, int level = -1);

}  // namespace gpuobs
