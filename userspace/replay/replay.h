// `gpuobs replay`: rebuild, from a capture alone, the GPU queues the host
// drove, the ordering between them, the windows in which each operation can
// have run, and the hazards in how the host used them (docs/replay.md).
#pragma once

#include "common/result.h"
#include "replay/replay_model.h"
#include "store/db.h"

namespace gpuobs::replay {

// Reads the capture's API rows and replays them. Pure: the same capture gives
// the same Result, field for field. Does not write.
gpuobs::Result<replay::Result> run(Db& capture);

// Replaces the replay tables' contents (schema/migrations/008_replay.sql) with
// this result in one transaction: re-running gives byte-identical tables.
Status write(Db& capture, const replay::Result& result);

}  // namespace gpuobs::replay
