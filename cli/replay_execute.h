// gpuobs replay --execute (cli/replay_execute.cpp): the capture's schedule run
// on this host's GPU by gpuobs_replay_exec under `gpuobs record`, each run
// compared with the original and the comparison stored (report replay_exec_sum).
#pragma once

#include "cli/commands.h"
#include "replay/exec_schedule.h"
#include "store/db.h"

namespace gpuobs::cli {

// Before the capture is opened: the executor found and a GPU present, or 0
// after saying why not (exit 1; 2: the executor is missing).
int execute_preflight(const ReplayArgs& a);

// `planned`: the part and the what-if edits; the original is compared with
// the same part unedited. Exit status: 0 done, 1 no GPU or a run failed, 2 bad input.
int execute_schedule(Db& capture, const ReplayArgs& a, const replay::ScheduleOptions& planned);

}  // namespace gpuobs::cli
