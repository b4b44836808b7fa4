// Stacks as a pprof profile (gzip-compressed profile.proto): one sample per
// (stack, leaf), a value per measure of `gpuobs stacks --by`, the leaf (kernel
// launched, API called, ioctl made) as a synthetic innermost frame. The
// weights come from report/stacks_query, the same as `gpuobs stacks` and
// `gpuobs export folded`.
#pragma once

#include <string>

#include "common/result.h"
#include "report/stacks_query.h"
#include "store/db.h"

namespace gpuobs::exporter {

// Sample types, in this order, named after the measures:
// launches/count, calls/count, copied/bytes, allocated/bytes,
// blocked/nanoseconds, ioctls/count. `by` becomes default_sample_type.
// The filter applies to every measure it fits (--kernel: launches only).
Result<std::string> pprof_profile(Db& capture, StackMeasure by, const StackFilter& filter);

}  // namespace gpuobs::exporter
