// The one rule for every command's output file (export, stacks -o and, for
// a capture, record): a new file, or an existing regular file only with
// --force, never through a link planted there, never a device other than
// /dev/null or a terminal. Streams (export, stacks) may also go to "-"
// (standard output), a pipe or a socket; a capture is a database and needs a
// regular file (store/capture_file.h refuses the rest).
//
// Where `gpuobs export` writes: a new file, or an existing regular file only
// with --force (like `gpuobs record`), always through a temporary file of its
// own (mkstemp, beside the target) renamed when complete, so a failed export
// leaves no truncated file and destroys nothing. A character device, a pipe
// or a socket (-o /dev/null, -o /dev/stdout into a pipe, a terminal or a
// file) is written in place and never replaced: through a symbolic link the
// link's target is what counts, and the link itself is never renamed over
// (the defect issue 15 found in `record -f -o /dev/null`).
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "common/result.h"

namespace gpuobs::cli {

// -o -: standard output.
inline constexpr const char* kStdoutPath = "-";

// Refuses, before any work, what write_output would refuse (an existing
// output without force, a directory): a big export should not run for
// minutes and then say "exists".
Status check_output(const std::string& path, bool force);

// Writes `write`'s output to path; an Error says why nothing was written.
Status write_output(const std::string& path, bool force, const std::function<Status(std::ostream&)>& write);

}  // namespace gpuobs::cli
