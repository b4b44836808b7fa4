// Where `gpuobs export` writes: a new file, or an existing regular file only
// with --force (like `gpuobs record`), always through a temporary name renamed
// when complete, so a failed export leaves no truncated file; a character
// device or a pipe (-o /dev/stdout, /dev/null) is written in place and never
// replaced by a file (the defect issue 15 found in `record -f -o /dev/null`).
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "common/result.h"

namespace gpuobs::cli {

// Writes `write`'s output to path; an Error says why nothing was written.
Status write_output(const std::string& path, bool force, const std::function<Status(std::ostream&)>& write);

}  // namespace gpuobs::cli
