// When each operation can have run, and how deep each queue was: one sweep per
// queue over the observations that cover it (docs/replay.md, "Windows").
#include <algorithm>
#include <tuple>

#include "replay/replay_engine.h"

namespace gpuobs::replay::detail {

void Engine::windows_and_depth() {
  const size_t nq = r_.queues.size();
  std::vector<std::vector<size_t>> by_queue(nq);  // op indexes, in seq order (ids grow with seq)
  for (size_t i = 0; i < r_.ops.size(); ++i) by_queue[r_.ops[i].queue_id - 1].push_back(i);

  // latest_end: the earliest-returning observation whose frontier covers the
  // op. Sorted by (queue, end, observation), each queue's ops are assigned
  // once, in runs from the last covered seq up to each new frontier.
  auto& obs = r_.observations;
  std::sort(covers_.begin(), covers_.end(), [&](const Cover& a, const Cover& b) {
    return std::tie(a.queue, obs[a.observation].end_ns, a.observation) <
           std::tie(b.queue, obs[b.observation].end_ns, b.observation);
  });
  size_t current = SIZE_MAX;
  int64_t covered = 0;
  for (const Cover& cv : covers_) {
    if (cv.queue != current) current = cv.queue, covered = 0;
    const auto& ops = by_queue[cv.queue];
    int64_t upto = std::min<int64_t>(cv.seq, static_cast<int64_t>(ops.size()));
    for (int64_t sq = covered + 1; sq <= upto; ++sq) {
      Op& op = r_.ops[ops[sq - 1]];
      op.latest_end_ns = obs[cv.observation].end_ns;
      op.bound_by = obs[cv.observation].id;
      obs[cv.observation].ops_completed += 1;
    }
    covered = std::max(covered, upto);
  }

  // Depth: +1 at enqueue, -1 at latest_end; changes at one instant fold into one sample.
  std::vector<std::pair<int64_t, int>> changes;
  for (size_t q = 0; q < nq; ++q) {
    changes.clear();
    for (size_t i : by_queue[q]) {
      changes.emplace_back(r_.ops[i].enqueue_ns, +1);
      if (r_.ops[i].latest_end_ns) changes.emplace_back(*r_.ops[i].latest_end_ns, -1);
    }
    std::sort(changes.begin(), changes.end());
    int64_t depth = 0, last = 0;
    for (size_t i = 0; i < changes.size();) {
      int64_t ts = changes[i].first;
      for (; i < changes.size() && changes[i].first == ts; ++i) depth += changes[i].second;
      if (depth == last) continue;
      r_.depth.push_back(DepthSample{r_.queues[q].id, ts, depth});
      r_.queues[q].max_depth = std::max(r_.queues[q].max_depth, depth);
      last = depth;
    }
  }
}

}  // namespace gpuobs::replay::detail
