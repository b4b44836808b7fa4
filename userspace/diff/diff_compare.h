// The comparison of two sides: one row per key seen on either side, tested
// (rate test for counts, Mann–Whitney U for distributions), the p-values
// adjusted across the whole diff (Benjamini–Hochberg), each row's verdict,
// and the time it added or removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diff/diff_side.h"

namespace gpuobs::diff {

// What counts are divided by: one run, the window's seconds, or its steps
// (the step marker's occurrences).
enum class Per { run, second, step };

struct CompareOptions {
  Per per = Per::run;
  double alpha = 0.01;       // the false discovery rate: a row is significant at q <= alpha...
  double min_change = 0.10;  // ...and when its value moved by this fraction at least...
  // ...and (distributions) when |Cliff's delta| reaches 0.6: between two
  // runs of one unchanged program on one host, host timings differ by up to
  // |delta| 0.43 on the development VM (45 pairs,
  // bench/diff_false_positives.sh) and 0.9 on the H200 host in calls of a
  // microsecond (PyTorch training, bench/h100/run_issue21.sh), a difference
  // between runs that no test within one run can see; the known changes
  // reach 0.98. The impact floor below is what keeps the H200's pairs clean.
  double min_effect = 0.6;
  // ...and, for rows with a time (latency, blocked, gpu_time, launch_gap),
  // when the time they added or removed is at least this fraction of the
  // activity time (per unit): 10 identical PyTorch runs on the H200 differ
  // by 20-55% in the medians of calls of about 1 us (cuKernelGetFunction,
  // cuMemsetD8Async: lazy loading and caches inside the driver) with
  // |delta| up to 0.93, a few hundred microseconds in a 12 s run.
  double min_impact = 0.001;
};

enum class Verdict { regressed, improved, new_key, vanished, same };
std::string_view to_string(Verdict v);

struct Row {
  Key key;
  Verdict verdict = Verdict::same;
  bool tested = false;  // a p-value was computed (enough events on both sides)
  // The row's value on each side: count measures per unit (run, second,
  // step), distributions their median, alloc_peak and the byte totals
  // (per unit) their bytes.
  double base = 0, next = 0;
  double base_p95 = 0, next_p95 = 0, base_p99 = 0, next_p99 = 0;  // distributions; NaN otherwise
  uint64_t base_n = 0, next_n = 0;                                // events behind each side
  double change = 0;     // next / base - 1 (infinity for a new key, -1 for a vanished one)
  double p = 1, q = 1;   // q: p adjusted over every tested row of this diff
  double effect = 0;     // distributions: Cliff's delta; counts: the rate ratio
  double impact_ns = 0;  // time added (+) or removed (-) per unit; NaN when the measure has no time
  std::string stack_text;
};

struct DiffResult {
  std::vector<Row> rows;  // every key, sorted: significant first, then by |impact_ns|, then by q
  std::vector<std::string> new_kernels, vanished_kernels;
  uint64_t new_stacks = 0, vanished_stacks = 0;
  uint64_t tested = 0, regressed = 0, improved = 0;
  double base_units = 1, next_units = 1;  // the exposures counts were divided by
  double alpha = 0.01, min_effect = 0.6;  // the options', for --fail-on's percentiles
  double activity_ns = 0, min_impact = 0.001;
  std::vector<std::string> notes;  // what limits the comparison (hosts, schemas, GPU times, stacks)
};

// Refuses (exit 2) a Per::step without steps on a side, and windows with no event.
Result<DiffResult> compare(const Side& base, const Side& next, const CompareOptions& o);

// The unit of a row's base/next values, as a column shows it.
std::string unit_of(Measure m, Per per);

}  // namespace gpuobs::diff
