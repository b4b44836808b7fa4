// `gpuobs diff --fail-on 'p95_latency>+10%,new_kernels>0'`: thresholds a CI
// job sets, each checked against the diff; any one crossed fails the run.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "diff/diff_compare.h"

namespace gpuobs::diff {

struct Threshold {
  std::string text;    // as the user wrote it
  std::string metric;  // e.g. p95_latency, launches, new_kernels
  enum class Op { gt, ge, lt, le } op = Op::gt;
  double value = 0;       // a fraction when relative (+10% -> 0.10)
  bool relative = false;  // row metrics compare relative changes; counts compare counts
};

// "METRIC OP VALUE[,...]": OP is >, >=, < or <=; row metrics take a
// percentage (+10%, -5%), counts a number. Errors name the bad part (exit 2).
Result<std::vector<Threshold>> parse_fail_on(std::string_view spec);

// The metrics --fail-on knows, for the error message and --help.
std::string fail_on_metrics();

struct Breach {
  std::string threshold;  // its text
  std::string detail;     // what crossed it, e.g. "cuStreamSynchronize latency p95 +212% (q=1e-30)"
};
std::vector<Breach> evaluate(const std::vector<Threshold>& ts, const DiffResult& d);

}  // namespace gpuobs::diff
