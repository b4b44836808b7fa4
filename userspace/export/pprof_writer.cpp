#include "export/pprof_writer.h"

#include <array>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "pprof_profile.pb.h"

namespace gpuobs::exporter {
namespace {

namespace pb = gpuobs::pprof;

constexpr StackMeasure kMeasures[] = {StackMeasure::launches,  StackMeasure::calls,   StackMeasure::copied,
                                      StackMeasure::allocated, StackMeasure::blocked, StackMeasure::ioctls};
constexpr const char* kNames[] = {"launches", "calls", "copied", "allocated", "blocked", "ioctls"};
constexpr const char* kUnits[] = {"count", "count", "bytes", "bytes", "nanoseconds", "count"};

class ProfileBuilder {
 public:
  ProfileBuilder() { str(""); }  // string_table[0] must be ""

  int64_t str(const std::string& s) {
    auto [it, fresh] = strings_.emplace(s, static_cast<int64_t>(strings_.size()));
    if (fresh) p.add_string_table(s);
    return it->second;
  }

  uint64_t function(const std::string& name, const std::string& file) {
    auto key = std::make_pair(name, file);
    auto it = functions_.find(key);
    if (it != functions_.end()) return it->second;
    auto* f = p.add_function();
    f->set_id(static_cast<uint64_t>(p.function_size()));
    f->set_name(str(name));
    f->set_system_name(str(name));
    if (!file.empty()) f->set_filename(str(file));
    functions_.emplace(key, f->id());
    return f->id();
  }

  uint64_t mapping(const std::string& module) {
    auto it = mappings_.find(module);
    if (it != mappings_.end()) return it->second;
    auto* m = p.add_mapping();
    m->set_id(static_cast<uint64_t>(p.mapping_size()));
    m->set_filename(str(module));
    m->set_has_functions(true);
    mappings_.emplace(module, m->id());
    return m->id();
  }

  uint64_t frame(const StackFrame& f) {
    auto key = std::make_tuple(f.module, f.offset, f.symbol, f.file, f.line);
    auto it = frames_.find(key);
    if (it != frames_.end()) return it->second;
    auto* l = p.add_location();
    l->set_id(static_cast<uint64_t>(p.location_size()));
    l->set_mapping_id(mapping(f.module));
    l->set_address(static_cast<uint64_t>(f.offset));
    auto* line = l->add_line();
    line->set_function_id(function(frame_label(f), f.file));
    line->set_line(f.line);
    frames_.emplace(key, l->id());
    return l->id();
  }

  // The leaf: no mapping, a function named after what happened.
  uint64_t leaf(const std::string& name) {
    auto it = leaves_.find(name);
    if (it != leaves_.end()) return it->second;
    auto* l = p.add_location();
    l->set_id(static_cast<uint64_t>(p.location_size()));
    l->add_line()->set_function_id(function(name, ""));
    leaves_.emplace(name, l->id());
    return l->id();
  }

  pb::Profile p;

 private:
  std::unordered_map<std::string, int64_t> strings_;
  std::map<std::pair<std::string, std::string>, uint64_t> functions_;
  std::unordered_map<std::string, uint64_t> mappings_;
  std::map<std::tuple<std::string, int64_t, std::string, std::string, int64_t>, uint64_t> frames_;
  std::unordered_map<std::string, uint64_t> leaves_;
};

}  // namespace

Result<std::string> pprof_profile(Db& db, StackMeasure by, const StackFilter& filter) {
  constexpr size_t n = std::size(kMeasures);
  // (stack, leaf, pid, comm) -> values; pid 0 and comm "" unless filter.by_process.
  std::map<std::tuple<int64_t, std::string, int64_t, std::string>, std::array<int64_t, n>> samples;
  std::set<int64_t> ids;
  for (size_t i = 0; i < n; ++i) {
    StackFilter f = filter;
    if (kMeasures[i] != StackMeasure::launches && !f.kernel.empty()) {
      if (by == kMeasures[i]) return make_error("--kernel filters launches only", "use --by launches with --kernel", 2);
      continue;  // the kernel filter does not fit this measure: no samples of it
    }
    auto leaves = weigh_stacks(db, kMeasures[i], f);
    if (!leaves) return leaves.error();
    for (const StackLeaf& l : *leaves) {
      samples[{l.stack_id, l.leaf, l.pid, l.comm}][i] += l.weight;
      ids.insert(l.stack_id);
    }
  }
  auto stacks = load_stacks(db, ids);
  if (!stacks) return stacks.error();

  ProfileBuilder b;
  for (size_t i = 0; i < n; ++i) {
    auto* t = b.p.add_sample_type();
    t->set_type(b.str(kNames[i]));
    t->set_unit(b.str(kUnits[i]));
    if (kMeasures[i] == by) b.p.set_default_sample_type(t->type());
  }
  for (auto& [key, values] : samples) {
    const auto& [stack_id, leaf, pid, comm] = key;
    auto* s = b.p.add_sample();
    s->add_location_id(b.leaf(leaf));  // leaf first
    auto st = stacks->find(stack_id);
    if (st != stacks->end()) {
      // The main thread's Python frames (this thread ran none) follow an
      // "[other thread]" location, as in folded output.
      const size_t borrowed = main_thread_python_start(st->second);
      for (size_t k = 0; k < st->second.frames.size(); ++k) {  // innermost first
        if (k == borrowed) s->add_location_id(b.leaf("[other thread]"));
        s->add_location_id(b.frame(st->second.frames[k]));
      }
    }
    if (filter.by_process) {  // the process as the two outermost frames: pid, then its command at the root
      s->add_location_id(b.leaf("pid " + std::to_string(pid)));
      s->add_location_id(b.leaf(comm));
    }
    for (int64_t v : values) s->add_value(v);
    auto* label = s->add_label();
    label->set_key(b.str("stack_id"));
    label->set_num(stack_id);
    if (filter.by_process) {
      auto* pl = s->add_label();
      pl->set_key(b.str("pid"));
      pl->set_num(pid);
      auto* cl = s->add_label();
      cl->set_key(b.str("comm"));
      cl->set_str(b.str(comm));
    }
  }
  {
    Stmt st(db.get(), "SELECT start_mono_ns + clock_offset_ns, coalesce(end_mono_ns - start_mono_ns, 0) FROM capture");
    if (st.valid() && st.step() == SQLITE_ROW) {
      b.p.set_time_nanos(sqlite3_column_int64(st.get(), 0));
      b.p.set_duration_nanos(sqlite3_column_int64(st.get(), 1));
    }
  }
  b.p.add_comment(
      b.str("gpuobs: host call stacks of GPU API calls and ioctls; the innermost frame is what the call did"));
  std::string bytes;
  if (!b.p.SerializeToString(&bytes)) return make_error("cannot encode the pprof profile");
  return bytes;
}

}  // namespace gpuobs::exporter
