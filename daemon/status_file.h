// The status file: replaced whole each second (a temporary file renamed over
// it), so a reader never sees half of one.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"

namespace gpuobs::daemon {

// Writes text to path atomically with the given mode; creates the directory
// (0755) if missing.
Status write_atomically(const std::string& path, const std::string& text, mode_t mode = 0640);

}  // namespace gpuobs::daemon
