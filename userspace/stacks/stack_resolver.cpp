#include "stacks/stack_resolver.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "common/monotonic_clock.h"
#include "events.h"
#include "stacks/unwind_table.h"

namespace gpuobs {
namespace {

// A miss re-reads a process's mappings only when the snapshot is older than
// the record (the code may have been mapped in between). A re-read that
// found the address lets the next one come at once (a program loading its
// libraries); one that did not doubles the wait before the next, up to this:
// addresses that are simply not code (broken frame-pointer chains, data
// words at [sp]) must not cost a /proc read per record.
constexpr uint64_t kFirstRereadGapNs = 1'000'000;
constexpr uint64_t kMaxRereadGapNs = 50'000'000;

// Bounded memory for processes with endless distinct stacks.
constexpr size_t kMaxCachePerProcess = 1 << 16;

// Into k, a buffer reused from record to record: no allocation per lookup.
void cache_key(const RawStack& raw, std::string& k) {
  size_t native = sizeof(uint32_t) + sizeof(uint64_t) + raw.ips.size() * sizeof(uint64_t);
  size_t py = raw.py.size() * sizeof(gpuobs_py_frame);
  k.resize(native + py + sizeof raw.py_status + sizeof raw.py_thread);
  std::memcpy(k.data(), &raw.flags, sizeof raw.flags);
  std::memcpy(k.data() + sizeof raw.flags, &raw.sp_word, sizeof raw.sp_word);
  if (!raw.ips.empty())
    std::memcpy(k.data() + sizeof raw.flags + sizeof raw.sp_word, raw.ips.data(), raw.ips.size() * 8);
  if (py) std::memcpy(k.data() + native, raw.py.data(), py);
  std::memcpy(k.data() + native + py, &raw.py_status, sizeof raw.py_status);
  std::memcpy(k.data() + native + py + sizeof raw.py_status, &raw.py_thread, sizeof raw.py_thread);
}

// 32-bit FNV-1a: a Python frame's key within its file (FrameDef).
uint32_t name_hash(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

// The return addresses of a record, innermost first, from the kernel's
// frame-pointer walk and the word at [sp] (bpf/events.h).
//   return:  the walk as is
//   entry:   the walk without frame 0 (the probed function), the caller from
//            [sp] unless the kernel already added it as frame 1
//   syscall: frame 0 (in the libc wrapper), then the caller from [sp] when the
//            wrapper keeps its return address there (no stack frame)
// is_code says whether an address is in executable memory: [sp] is only a
// candidate.
template <typename IsCode>
std::vector<uint64_t> call_chain(const RawStack& raw, IsCode is_code, uint64_t& sp_dropped) {
  const auto& ips = raw.ips;
  std::vector<uint64_t> out;
  out.reserve(ips.size() + 1);
  auto add_sp_word = [&](uint64_t next) {
    if (raw.sp_word && raw.sp_word != next && is_code(raw.sp_word)) out.push_back(raw.sp_word);
    else if (raw.sp_word != next) ++sp_dropped;
  };
  if ((raw.flags & GPUOBS_STACK_F_AT_ENTRY) && !ips.empty()) {
    add_sp_word(ips.size() > 1 ? ips[1] : 0);
    out.insert(out.end(), ips.begin() + 1, ips.end());
  } else if ((raw.flags & GPUOBS_STACK_F_AT_SYSCALL) && !ips.empty()) {
    out.push_back(ips[0]);
    add_sp_word(ips.size() > 1 ? ips[1] : 0);
    out.insert(out.end(), ips.begin() + 1, ips.end());
  } else {
    out = ips;
  }
  return out;
}

}  // namespace

StackResolver::StackResolver(Sink sink, std::string proc_root, std::function<uint64_t()> now)
    : sink_(std::move(sink)),
      proc_root_(std::move(proc_root)),
      now_(now ? std::move(now) : [] { return static_cast<uint64_t>(monotonic_now_ns()); }) {}

const ModuleDef* StackResolver::pseudo(const std::string& name) {
  auto& slot = pseudo_[name];
  if (!slot) {
    slot = std::make_unique<ModuleDef>();
    slot->id = static_cast<int64_t>(modules_.size()) + 1;
    slot->path = name;
    modules_.push_back(slot.get());
    ++stats_.modules;
    sink_.module(*slot);
  }
  return slot.get();
}

const ModuleDef* StackResolver::module_for(uint32_t tgid, const Mapping& m) {
  if (!m.inode) return pseudo(m.path == "[vdso]" ? "[vdso]" : "[anon]");
  auto& slot = files_[{m.dev, m.inode}];
  if (slot) return slot.get();
  slot = std::make_unique<ModuleDef>();
  slot->id = static_cast<int64_t>(modules_.size()) + 1;
  slot->path = m.path;
  slot->dev = m.dev;
  slot->inode = m.inode;
  int fd = open_mapped_file(tgid, m, proc_root_);
  if (fd >= 0) slot->file = std::make_shared<FileHandle>(fd);
  else ++stats_.files_unopened;
  modules_.push_back(slot.get());
  ++stats_.modules;
  sink_.module(*slot);
  return slot.get();
}

bool StackResolver::load(Process& p, uint32_t tgid, bool count_unreadable) {
  uint64_t read_ns = now_();
  auto maps = read_proc_maps(tgid, proc_root_);
  if (!maps) {
    if (count_unreadable) {
      ++stats_.maps_unreadable;
      p.loaded = true;
    }
    if (p.loaded) p.read_ns = read_ns;  // no new try before the interval
    return false;
  }
  p.loaded = true;
  p.read_ns = read_ns;
  ++stats_.maps_reads;
  p.ranges.clear();
  for (const Mapping& m : *maps) {
    if (!m.exec) continue;  // frames are code addresses
    p.ranges.push_back(Range{m.start, m.end, m.offset, m.exec, module_for(tgid, m)});
  }
  p.cache.clear();
  if (publish_) publish_tables(p, tgid);
  return true;
}

void StackResolver::enable_bpf_unwind(uint64_t* rows, uint32_t capacity,
                                      std::function<void(uint32_t, const gpuobs_unwind_proc*)> publish) {
  builder_ = std::make_unique<TableBuilder>(rows, capacity);
  publish_ = std::move(publish);
}

// The process's executable mappings whose files have a table, for the BPF
// unwinder; files not yet asked for are queued for the builder.
void StackResolver::publish_tables(const Process& p, uint32_t tgid) {
  auto proc = std::make_unique<gpuobs_unwind_proc>();
  std::memset(proc.get(), 0, sizeof *proc);
  for (const Range& r : p.ranges) {
    if (proc->n >= GPUOBS_UNWIND_MAPS_MAX || !r.module->file) continue;
    FileTable& t = tables_[r.module->id];
    if (!t.requested) {
      t.requested = true;
      builder_->request(r.module->id, r.module->file);
    }
    if (!t.ok) continue;
    // The executable PT_LOAD this mapping shows: their file ranges overlap (a
    // mapping starts on a page; lld packs segments inside pages).
    const TableBuilder::Done::Load* seg = nullptr;
    for (const auto& l : t.loads) {
      bool overlap = r.offset < l.offset + l.filesz && l.offset < r.offset + (r.end - r.start);
      if (overlap && (!seg || (l.exec && !seg->exec))) seg = &l;
    }
    for (const auto* lp : {seg}) {
      if (!lp) continue;
      const auto& l = *lp;
      gpuobs_unwind_mapping& m = proc->m[proc->n++];
      m.start = r.start;
      m.end = r.end;
      m.bias = r.start - (r.offset - l.offset + l.vaddr);  // ip - bias = ELF address
      m.row_start = t.row_start;
      m.row_count = t.row_count;
      break;
    }
  }
  if (proc->n) publish_(tgid, proc.get());
}

void StackResolver::collect_tables() {
  auto done = builder_->take_done();
  if (done.empty()) return;
  std::set<int64_t> ready;
  for (auto& d : done) {
    FileTable& t = tables_[d.module_id];
    t.ok = d.ok;
    t.row_start = d.row_start;
    t.row_count = d.row_count;
    t.loads = std::move(d.loads);
    if (d.ok) {
      ++stats_.table_files;
      stats_.table_rows += d.row_count;
      ready.insert(d.module_id);
    } else {
      ++stats_.table_failed;
    }
  }
  for (auto& [tgid, p] : procs_)
    for (const Range& r : p.ranges)
      if (ready.count(r.module->id)) {
        publish_tables(p, tgid);
        break;
      }
}

const StackResolver::Range* StackResolver::find(const Process& p, uint64_t ip) const {
  auto it =
      std::upper_bound(p.ranges.begin(), p.ranges.end(), ip, [](uint64_t v, const Range& r) { return v < r.start; });
  if (it == p.ranges.begin()) return nullptr;
  --it;
  return ip < it->end ? &*it : nullptr;
}

int64_t StackResolver::frame_id(int64_t module_id, uint64_t offset) {
  auto [it, fresh] = frames_.try_emplace({module_id, offset}, 0);
  if (fresh) {
    it->second = static_cast<int64_t>(frame_defs_.size()) + 1;
    frame_defs_.push_back(FrameDef{it->second, module_id, offset});
    ++stats_.frames;
    sink_.frame(frame_defs_.back());
  }
  return it->second;
}

int64_t StackResolver::resolve(uint32_t tgid, const RawStack& raw, uint64_t ts_ns) {
  if (!raw.present) return 0;
  if (builder_) collect_tables();
  ++stats_.with_stack;
  if (raw.flags & GPUOBS_STACK_F_BPF_DWARF) ++stats_.bpf_unwound;
  Process& p = procs_[tgid];
  if (!p.loaded) load(p, tgid);
  // A stack copy differs on every call (data words): no cache for those.
  if (!raw.has_copy) {
    cache_key(raw, key_);
    if (auto it = p.cache.find(key_); it != p.cache.end() && (!it->second.retry_ns || now_() < it->second.retry_ns)) {
      stats_.sp_frames_dropped += it->second.sp_dropped;
      stats_.py_stacks += it->second.python;
      return it->second.stack_id;
    }
  }

  // An address outside every known mapping, with a snapshot older than the
  // record: maybe a library mapped since, so read the mappings again
  // (rate-limited when re-reads find nothing). A stack resolved while the
  // answer was unsure is cached only until a re-read may run again (issue
  // 17's flaky depth-1 test cached an empty stack from a stale snapshot for
  // good).
  bool unsure = false;
  auto lookup = [&](uint64_t ip) {
    const Range* r = find(p, ip);
    if (!r && p.read_ns < ts_ns) {
      if (now_() - p.read_ns >= p.reread_gap_ns) {
        // Gone since the last snapshot: that snapshot stays, and is no loss.
        load(p, tgid, p.ranges.empty());
        r = find(p, ip);
        p.reread_gap_ns = r ? 0 : std::clamp(p.reread_gap_ns * 2, kFirstRereadGapNs, kMaxRereadGapNs);
      } else {
        unsure = true;
      }
    }
    return r;
  };
  uint64_t sp_dropped = 0;
  bool copy_end = false, dwarf_deeper = false;
  std::vector<uint64_t> chain;
  if (raw.flags & GPUOBS_STACK_F_BPF_DWARF) {
    chain = raw.ips;  // callers only: at an entry BPF leaves the probed function out
  } else if (raw.has_copy) {
    chain = unwinder_.unwind(
        raw,
        [&](uint64_t ip) -> std::optional<CfiUnwinder::Location> {
          if (const Range* r = lookup(ip)) return CfiUnwinder::Location{r->module, ip - r->start + r->offset};
          return std::nullopt;
        },
        max_frames_ + 2, copy_end);
    // At a function's first instruction frame 0 is the probed function itself.
    if ((raw.flags & GPUOBS_STACK_F_AT_ENTRY) && !chain.empty()) chain.erase(chain.begin());
    // --stack-depth applies as to the walks in BPF (issue 20: depth 1 kept 4).
    dwarf_deeper = chain.size() > max_frames_;
    if (dwarf_deeper) chain.resize(max_frames_);
  } else {
    chain = call_chain(
        raw, [&](uint64_t ip) { return lookup(ip) != nullptr; }, sp_dropped);
  }
  stats_.sp_frames_dropped += sp_dropped;
  std::vector<int64_t> frames;
  std::vector<uint64_t> frame_ips;  // the address of each native frame
  frames.reserve(chain.size());
  for (uint64_t ip : chain) {
    const Range* r = lookup(ip);
    if (!r) {
      // Not code: the frame-pointer chain broke (a frame without a frame
      // pointer); what the kernel read past it is noise. The stack ends here.
      ++stats_.walks_broken;
      break;
    }
    // Anonymous code (JIT) has no file: its frames are its addresses.
    bool anon = r->module->inode == 0 && r->module->path != "[vdso]";
    frames.push_back(frame_id(r->module->id, anon ? ip : ip - r->start + r->offset));
    frame_ips.push_back(ip);
  }
  // Python frames: each interpreter call's frames replace the native frame
  // of _PyEval_EvalFrameDefault that ran them; calls the native walk did not
  // reach (it broke in a library without frame pointers, or stopped at its
  // depth) follow the native frames, in order. The main thread's frames
  // (GPUOBS_PY_T_MAIN: this thread runs no Python) all follow them: no
  // native frame of this thread ran them.
  int py_status = -1;
  bool python = false;
  const size_t native_n = frames.size();  // the walk's limits below are about the native frames
  if (!raw.py.empty() || (raw.flags & GPUOBS_STACK_F_PYTHON)) {
    std::vector<std::vector<int64_t>> groups;
    python_groups(p, raw, groups, py_status);
    if (!groups.empty()) {
      ++stats_.py_stacks;
      python = true;
      std::vector<int64_t> merged;
      merged.reserve(frames.size() + raw.py.size());
      size_t g = 0;
      for (size_t i = 0; i < frames.size(); ++i) {
        if (g < groups.size() && raw.py_thread == GPUOBS_PY_T_CALLING && p.py && p.py->in_eval(frame_ips[i])) {
          merged.insert(merged.end(), groups[g].begin(), groups[g].end());
          ++g;
        } else {
          merged.push_back(frames[i]);
        }
      }
      if (g < groups.size() && raw.py_thread == GPUOBS_PY_T_CALLING) ++stats_.py_placed_outer;
      for (; g < groups.size(); ++g) merged.insert(merged.end(), groups[g].begin(), groups[g].end());
      frames = std::move(merged);
    }
  }
  if (frames.empty()) ++stats_.empty;
  uint32_t flags = raw.flags & (GPUOBS_STACK_F_FULL | GPUOBS_STACK_F_FAULT);
  if (native_n < chain.size()) flags &= ~GPUOBS_STACK_F_FULL;  // cut, not full
  if (raw.flags & GPUOBS_STACK_F_BPF_DWARF) flags &= ~GPUOBS_STACK_F_FAULT;
  if (raw.has_copy) {  // the frame-pointer walk's limits do not apply
    flags &= ~(GPUOBS_STACK_F_FULL | GPUOBS_STACK_F_FAULT);
    if (copy_end) flags |= kStackCopyEnd;
    else if (native_n == chain.size() && dwarf_deeper) flags |= GPUOBS_STACK_F_FULL;
  }
  uint32_t py_thread = py_status == -1 ? GPUOBS_PY_T_CALLING : raw.py_thread;
  auto [it, fresh] = stacks_.try_emplace({flags, py_status, py_thread, frames}, 0);
  if (fresh) {
    it->second = static_cast<int64_t>(stack_defs_.size()) + 1;
    stack_defs_.push_back(StackDef{it->second, flags, std::move(frames), py_status, py_thread});
    ++stats_.stacks;
    sink_.stack(stack_defs_.back());
  }
  if (!raw.has_copy) {
    if (p.cache.size() >= kMaxCachePerProcess) p.cache.clear();
    // An unsure stack is cached until the next re-read may run: resolving
    // every record of it again until then cost half the records a full walk
    // when a few call sites had broken chains (review of issue 17).
    uint64_t retry = unsure ? std::max<uint64_t>(p.read_ns + p.reread_gap_ns, 1) : 0;
    p.cache.insert_or_assign(key_, Process::Cached{it->second, sp_dropped != 0, python, retry});
  }
  return it->second;
}

int64_t StackResolver::python_frame_id(const PyCode& code, int line) {
  auto& mod = py_files_[code.file];
  if (!mod) {
    mod = std::make_unique<ModuleDef>();
    mod->id = static_cast<int64_t>(modules_.size()) + 1;
    mod->path = code.file;
    mod->python = true;
    modules_.push_back(mod.get());
    ++stats_.modules;
    sink_.module(*mod);
  }
  uint64_t key = (uint64_t(uint32_t(line)) << 32) | name_hash(code.name);
  auto [it, fresh] = frames_.try_emplace({mod->id, key}, 0);
  if (fresh) {
    it->second = static_cast<int64_t>(frame_defs_.size()) + 1;
    frame_defs_.push_back(FrameDef{it->second, mod->id, key, true, code.name, line});
    ++stats_.frames;
    ++stats_.py_frames;
    sink_.frame(frame_defs_.back());
  }
  return it->second;
}

void StackResolver::python_groups(Process& p, const RawStack& raw, std::vector<std::vector<int64_t>>& groups,
                                  int& py_status) {
  py_status = raw.py_status;
  if (!p.py) {  // described to BPF, then gone from here (exec): nothing names them, no walk stored
    py_status = -1;
    return;
  }
  std::vector<int64_t> group;
  for (const gpuobs_py_frame& f : raw.py) {
    const PyCode* code = p.py->code(f.code);
    if (!code) {
      // Not a code object (a frame torn, a stale pointer), or the process
      // exited before it could be read: what came before stands, nothing
      // after it is trusted.
      if (p.py->gone()) {
        py_status = kPyStatusGone;
        ++stats_.py_gone;
      } else {
        py_status = kPyStatusTorn;
        ++stats_.py_torn;
      }
      break;
    }
    if (!code->shim) group.push_back(python_frame_id(*code, p.py->line(*code, f.instr)));
    if (f.flags & GPUOBS_PY_F_ENTRY) {
      groups.push_back(std::move(group));
      group.clear();
    }
  }
  if (!group.empty()) groups.push_back(std::move(group));
}

void StackResolver::set_python(uint32_t tgid, std::shared_ptr<PythonProcess> py) {
  Process& p = procs_[tgid];
  p.py = std::move(py);
  p.cache.clear();
}

const PythonProcess* StackResolver::python(uint32_t tgid) const {
  auto it = procs_.find(tgid);
  return it == procs_.end() ? nullptr : it->second.py.get();
}

// A process gone already is not counted here: only when one of its stacks
// could not be named (it may never have had one).
void StackResolver::on_mapped(uint32_t tgid) {
  auto [it, fresh] = procs_.try_emplace(tgid);
  if (!load(it->second, tgid, false) && fresh) procs_.erase(it);
}

void StackResolver::on_fork(uint32_t parent, uint32_t child) {
  Process& c = procs_[child];
  c = Process{};
  auto it = procs_.find(parent);
  if (it != procs_.end() && it->second.py) {  // the same interpreter, at the same addresses
    const PythonProcess& pp = *it->second.py;
    auto py = std::make_shared<PythonProcess>(child, pp.layout(), pp.path());
    py->runtime = pp.runtime;
    py->code_type = pp.code_type;
    py->eval_start_ = pp.eval_start_;
    py->eval_end_ = pp.eval_end_;
    c.py = std::move(py);
  }
  if (it != procs_.end() && it->second.loaded) {
    c.ranges = it->second.ranges;  // fork copies the address space
    c.loaded = true;
    c.read_ns = it->second.read_ns;
    if (publish_) publish_tables(c, child);
  }
}

void StackResolver::on_exec(uint32_t tgid) {
  procs_.erase(tgid);
  if (publish_) publish_(tgid, nullptr);
}

void StackResolver::on_exit(uint32_t tgid) {
  procs_.erase(tgid);
  if (publish_) publish_(tgid, nullptr);
}

void StackResolver::redefine_all() {
  for (const ModuleDef* m : modules_) sink_.module(*m);
  for (const FrameDef& f : frame_defs_) sink_.frame(f);
  for (const StackDef& s : stack_defs_) sink_.stack(s);
}

}  // namespace gpuobs
