// A capture's stacks as one line of text each, innermost first ("f <- g
// (train.py:42) <- ..."; Python frames with their file's name and line):
// the exports' slice argument and the fleet's stack column.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "common/result.h"
#include "store/db.h"

namespace gpuobs {

// stack id -> its first max_frames frames as one line.
Result<std::unordered_map<int64_t, std::string>> stack_lines(Db& capture, int max_frames);

}  // namespace gpuobs
