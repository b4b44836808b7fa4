// What /proc says about a process: used for processes that were running before
// the capture, and for the command `gpuobs record` starts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "store/writer.h"

namespace gpuobs {

std::optional<ProcessInfo> read_proc_info(uint32_t tgid, const std::string& proc_root = "/proc");

}  // namespace gpuobs
