// Memory hazards of the replay (docs/replay.md, "Hazards"): frees while work
// that names the allocation may still run (3), asynchronous copies through
// pageable host memory (4), and unordered accesses from two queues (6).
#include <algorithm>

#include "replay/replay_engine.h"

namespace gpuobs::replay::detail {

std::string hex(uint64_t v);

namespace {
constexpr size_t kFreeHazardCap = 10;   // hazards per free; the detail gives the total
constexpr size_t kPendingPruneAt = 64;  // pending ops per allocation before proven ones are dropped
}  // namespace

Allocation* Engine::find_allocation(ProcessState& p, uint64_t address) {
  auto it = p.live.upper_bound(address);
  if (it == p.live.begin()) return nullptr;
  --it;
  Allocation& a = it->second;
  return address - a.address < std::max<uint64_t>(a.bytes, 1) ? &a : nullptr;
}

void Engine::memory_access(ProcessState& p, const Call& c, const Op& op) {
  if (op.bytes == 0) return;
  struct Range {
    uint64_t lo, hi;
    bool write;
  };
  Range ranges[2] = {{op.dst, op.dst + op.bytes, true}, {op.src, op.src + op.bytes, false}};
  size_t n = op.kind == "copy" ? 2 : 1;
  const size_t qi = static_cast<size_t>(op.queue_id - 1);
  std::vector<int64_t> reported;
  for (size_t i = 0; i < n; ++i) {
    const Range& r = ranges[i];
    Allocation* a = find_allocation(p, r.lo);
    if (!a) continue;
    if (a->pending.empty() || a->pending.back().op != op.id) {
      a->pending.push_back(Access{op.id, qi, op.seq, r.lo, r.hi});
      // Pruning is O(pending): doing it only once the list has doubled since
      // the last prune keeps each push amortized O(1) when syncs are rare.
      if (a->pending.size() > a->prune_at) {
        std::erase_if(a->pending, [&](const Access& x) { return at(p.host, qs_[x.queue].local) >= x.seq; });
        a->prune_at = std::max(kPendingPruneAt, 2 * a->pending.size());
      }
    }
    // Ordered before this op: its seq is in this op's clock (events, legacy
    // sync, or the host having seen it complete before this enqueue).
    const Clock& clock = qs_[qi].clock;
    auto check = [&](const std::map<size_t, Access>& last, bool other_writes) {
      for (const auto& [oq, acc] : last) {
        if (oq == qi || acc.hi <= r.lo || r.hi <= acc.lo) continue;
        if (acc.seq <= at(clock, qs_[oq].local)) continue;
        if (std::find(reported.begin(), reported.end(), acc.op) != reported.end()) continue;
        reported.push_back(acc.op);
        const Op& other = r_.ops[acc.op - 1];
        Hazard& h = hazard("unordered_cross_stream", c);
        h.op_id = op.id;
        h.other_op_id = acc.op;
        h.other_stack_id = other.stack_id;
        uint64_t lo = std::max(r.lo, acc.lo), hi = std::min(r.hi, acc.hi);
        h.detail = op.api + " (op #" + std::to_string(op.id) + " on " + stream_label(qi) + ") " +
                   (r.write ? "writes" : "reads") + " [" + hex(lo) + ", " + hex(hi) + ") which " + other.api +
                   " (op #" + std::to_string(acc.op) + " on " + stream_label(oq) + ") " +
                   (other_writes ? "writes" : "reads") +
                   ", and no event, legacy-stream sync or host sync orders them; record an event after op #" +
                   std::to_string(acc.op) + " and make " + stream_label(qi) + " wait on it";
      }
    };
    check(a->last_write, true);
    if (r.write) check(a->last_read, false);
    (r.write ? a->last_write : a->last_read)[qi] = Access{op.id, qi, op.seq, r.lo, r.hi};
  }
}

void Engine::pageable_check(ProcessState& p, const Call& c, const Op& op) {
  uint64_t host;
  if (op.direction == "HtoD") host = op.src;
  else if (op.direction == "DtoH") host = op.dst;
  else return;
  Allocation* a = find_allocation(p, host);
  if (a && a->host) return;
  Hazard& h = hazard("pageable_async_copy", c);
  h.op_id = op.id;
  h.detail = op.api + " (op #" + std::to_string(op.id) + " on " + stream_label(op.queue_id - 1) + ") copies " +
             std::to_string(op.bytes) + " bytes " + (op.direction == "HtoD" ? "from" : "to") + " host memory " +
             hex(host) +
             " that no live cuMemAllocHost/cuMemHostAlloc range holds: a pageable buffer makes the copy staged and "
             "synchronous; allocate it pinned (cuMemHostRegister is not probed: registered memory shows here too)";
}

void Engine::check_free(ProcessState& p, const Call& c, const Op* free_op) {
  const std::string& kind = s(c.kind);
  if (!free_op && kind != "device" && kind != "pitch" && kind != "host") return;
  auto it = p.live.find(c.address);
  if (it == p.live.end() || (c.alloc_id && *c.alloc_id != it->second.row)) return;
  Allocation& a = it->second;
  const Clock* ordered = free_op ? &qs_[free_op->queue_id - 1].clock : nullptr;
  std::vector<const Access*> bad;
  for (const Access& acc : a.pending) {
    int64_t known = at(p.host, qs_[acc.queue].local);
    if (ordered) known = std::max(known, at(*ordered, qs_[acc.queue].local));
    if (known < acc.seq) bad.push_back(&acc);
  }
  const std::string who = free_op ? std::string(" (op #") + std::to_string(free_op->id) + ")" : std::string();
  for (size_t i = 0; i < bad.size() && i < kFreeHazardCap; ++i) {
    const Op& other = r_.ops[bad[i]->op - 1];
    Hazard& h = hazard("free_while_queued", c);
    if (free_op) h.op_id = free_op->id;
    h.other_op_id = other.id;
    h.other_stack_id = other.stack_id;
    h.detail = s(c.api) + who + " freed " + hex(a.address) + " (" + std::to_string(a.bytes) + " bytes) while " +
               other.api + " (op #" + std::to_string(other.id) + " on " + stream_label(bad[i]->queue) +
               "), which uses it, was not known complete (" + std::to_string(i + 1) + " of " +
               std::to_string(bad.size()) + " such operations); ";
    if (!free_op)
      h.detail +=
          "a synchronous free of memory with queued work relies on the driver's implicit synchronization "
          "(not documented as a completion guarantee) and stalls the host; ";
    h.detail +=
        "synchronize " + stream_label(bad[i]->queue) + " before the free, or free with cuMemFreeAsync on that stream";
  }
}

}  // namespace gpuobs::replay::detail
