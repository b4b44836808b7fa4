#include "capture/nccl_watch.h"

#include <algorithm>

namespace gpuobs {
namespace {

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

void NcclWatch::on_call(const ApiCallEvent& e, const ApiSpec& spec) {
  NcclCall c = decode_nccl(e, spec);
  int64_t seq = handles_.observe(c.call.tgid, c);
  const NcclComms::Comm* h = c.comm ? handles_.find(c.call.tgid, c.comm) : nullptr;
  if (!h || !h->id_hash || !h->rank) return;  // not matchable across processes
  Comm& m = comms_[h->id_hash];
  if (h->nranks) m.nranks = h->nranks;
  Rank& r = m.ranks[*h->rank];
  if (c.op == NcclOp::comm_init) r = Rank{};  // a communicator made anew under a known id (NCCL_COMM_ID)
  r.tgid = c.call.tgid;
  r.comm = c.comm;
  r.exited = false;
  if (c.op == NcclOp::comm_destroy || c.op == NcclOp::comm_abort) {
    r.gone = true;
    forget_if_gone(h->id_hash);
    return;
  }
  if (!seq) return;
  r.last_seq = seq;
  r.last_ts = static_cast<int64_t>(c.call.ts_ns);
  r.last_api = std::string(c.call.api);
  auto [it, fresh] = m.first_entry.emplace(seq, r.last_ts);
  if (!fresh) it->second = std::min(it->second, r.last_ts);
  m.op_of.emplace(seq, std::string(to_string(c.op)));
  prune(m);
}

void NcclWatch::on_exit(uint32_t tgid) {
  std::vector<uint64_t> touched;
  for (auto& [hash, m] : comms_)
    for (auto& [rank, r] : m.ranks)
      if (r.tgid == tgid) {
        r.exited = r.gone = true;
        touched.push_back(hash);
      }
  for (uint64_t h : touched) forget_if_gone(h);
  handles_.forget_process(tgid);
}

// A communicator every rank has destroyed or exited from is forgotten (the
// daemon runs for months): no stall can happen on it any more. Every rank:
// one that exits before its peers are seen (ring order is not call order)
// still holds the communicator for them; one with ranks on other hosts,
// never all seen, is forgotten by check() a while after its last call here.
void NcclWatch::forget_if_gone(uint64_t hash) {
  auto it = comms_.find(hash);
  if (it == comms_.end()) return;
  const Comm& m = it->second;
  if (!m.nranks || static_cast<int64_t>(m.ranks.size()) < *m.nranks) return;
  for (auto& [rank, r] : m.ranks)
    if (!r.gone) return;
  comms_.erase(it);
  std::erase_if(reported_, [&](const auto& k) { return std::get<0>(k) == hash; });
}

// Sequence numbers every rank has passed are of no more use. Until every
// rank has been seen, a rank seen later (its init arrives after its peers
// ran ahead: ring order across processes is not call order, and another
// host's ranks are never seen) may still be behind them: only the oldest
// beyond a bound are dropped then.
void NcclWatch::prune(Comm& m) {
  constexpr size_t kKeepUnmatched = 4096;
  int64_t low = INT64_MAX;
  for (auto& [rank, r] : m.ranks) low = std::min(low, r.last_seq);
  if (low == INT64_MAX) return;
  bool all_seen = m.nranks && static_cast<int64_t>(m.ranks.size()) >= *m.nranks;
  if (!all_seen) {
    while (m.first_entry.size() > kKeepUnmatched) m.first_entry.erase(m.first_entry.begin());
    while (m.op_of.size() > kKeepUnmatched) m.op_of.erase(m.op_of.begin());
    return;
  }
  m.first_entry.erase(m.first_entry.begin(), m.first_entry.lower_bound(low));
  m.op_of.erase(m.op_of.begin(), m.op_of.lower_bound(low));
}

std::vector<NcclStall> NcclWatch::check(int64_t now, std::span<const gpuobs_api_call> inflight) {
  std::vector<NcclStall> out;
  // Communicators whose ranks here are all gone, quiet for 10 thresholds.
  std::erase_if(comms_, [&](const auto& kv) {
    int64_t last = 0;
    for (auto& [rank, r] : kv.second.ranks) {
      if (!r.gone) return false;
      last = std::max(last, r.last_ts);
    }
    return now - last > 10 * threshold_ns_;
  });
  for (auto& [hash, m] : comms_) {
    if (!m.nranks || *m.nranks < 2) continue;
    // What each rank has entered: its last returned collective, or the one
    // it is inside now (an in-flight entry on this communicator).
    struct State {
      int64_t entered = 0;
      bool inside = false;
      int64_t inside_ts = 0;
    };
    std::map<int64_t, State> st;
    for (auto& [rank, r] : m.ranks) st[rank].entered = r.last_seq;
    for (const auto& e : inflight) {
      const ApiSpec* spec = api_by_id(e.api);
      if (!spec || spec->family != Family::collective || !nccl_is_collective(spec->nccl) || !spec->handle) continue;
      uint64_t comm = e.args[(spec->handle - 1) & 7];
      for (auto& [rank, r] : m.ranks)
        if (r.tgid == e.hdr.tgid && r.comm == comm) {
          State& s = st[rank];
          s.entered = r.last_seq + 1;
          s.inside = true;
          s.inside_ts = static_cast<int64_t>(e.hdr.ts_ns);
          auto [it, fresh] = m.first_entry.emplace(s.entered, s.inside_ts);
          if (!fresh) it->second = std::min(it->second, s.inside_ts);
          m.op_of.emplace(s.entered, std::string(to_string(spec->nccl)));
        }
    }
    // Over the ranks seen: a rank never seen on this host (another host's,
    // or one that made the communicator before gpuobs started) says nothing.
    int64_t low = INT64_MAX, high = 0;
    for (auto& [rank, x] : st) {
      low = std::min(low, x.entered);
      high = std::max(high, x.entered);
    }
    if (low == INT64_MAX) continue;
    NcclStall s;
    if (low < high) {
      // Some ranks entered low + 1, others not.
      s.seq = low + 1;
      s.kind = "missing";
    } else {
      // Every rank entered `high`: a stall only if one is still inside it.
      bool inside = false;
      for (auto& [rank, x] : st) inside = inside || (x.inside && x.entered == high);
      if (!inside || high == 0) continue;
      s.seq = high;
      s.kind = "not_returned";
    }
    auto first = m.first_entry.find(s.seq);
    if (first == m.first_entry.end() || now - first->second < threshold_ns_) continue;
    if (!reported_.emplace(hash, s.seq, s.kind).second) continue;
    s.detected_ns = now;
    s.comm_hash = hash;
    s.nranks = m.nranks;
    s.waited_ns = now - first->second;
    if (auto op = m.op_of.find(s.seq); op != m.op_of.end()) s.op = op->second;
    std::vector<int64_t> in, missing;
    for (int64_t rank = 0; rank < *m.nranks; ++rank) {
      NcclStallRank k;
      k.rank = rank;
      const State* x = st.count(rank) ? &st[rank] : nullptr;
      auto r = m.ranks.find(rank);
      if (r != m.ranks.end()) {
        k.tgid = r->second.tgid;
        if (r->second.last_seq) {
          k.last_seq = r->second.last_seq;
          k.last_api = r->second.last_api;
          k.last_call_ns = r->second.last_ts;
        }
      }
      bool entered = x && x->entered >= s.seq;
      if (entered) in.push_back(rank);
      else if (x) missing.push_back(rank);
      if (!x) k.state = "unseen";
      else if (x->inside && x->entered == s.seq) k.state = "inside";
      else if (entered) k.state = "in";
      else if (r != m.ranks.end() && r->second.exited) k.state = "exited";
      else if (x && x->inside) k.state = "inside";  // stuck in an earlier collective
      else k.state = "missing";
      s.ranks.push_back(std::move(k));
    }
    s.ranks_in = join(in);
    s.ranks_missing = join(missing);
    ++stalls_found_;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gpuobs
