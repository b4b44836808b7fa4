// A capture's schedule (replay/exec_schedule.h) as an MLCommons Chakra
// execution trace, for simulators (ASTRA-sim and others that read Chakra):
// one node per GPU operation and per host synchronization, with the
// dependencies the schedule holds (docs/export.md "Chakra").
//  - a kernel, graph or host function: COMP_NODE of its GPU length; a copy to
//    the device MEM_LOAD_NODE, to the host MEM_STORE_NODE, on the device
//    COMP_NODE, with its bytes (tensor_size); a memset COMP_NODE with its bytes.
//  - a stream, event or context sync: a CPU COMP_NODE (is_cpu_op) of length 0
//    (its blocked time is what the dependencies cost), its host time in blocked_ns.
//  - ctrl_deps: the previous operation on the same stream, and the issuing
//    thread's last synchronization (the host could not issue before it returned).
//  - data_deps: other streams' operations it waits for: through an event
//    (cuStreamWaitEvent on what a cuEventRecord followed), the legacy
//    stream's implicit synchronization, and what a sync waits for.
// Node ids are the schedule's step indexes (the `i` of --schedule-out's JSON).
#pragma once

#include <string>

#include "common/result.h"
#include "replay/exec_schedule.h"

namespace gpuobs::exporter {

// The file's bytes: GlobalMetadata then each Node, each preceded by its length (varint).
Result<std::string> chakra_trace(const replay::Schedule& schedule, const std::string& source);

}  // namespace gpuobs::exporter
