#include "store/stack_rows.h"

#include <array>
#include <string_view>
#include <vector>

#include "events.h"
#include "stacks/stack_resolver.h"

namespace gpuobs {
namespace {

// Where a complete walk ends: the functions that start threads and call main.
bool is_thread_root(std::string_view name) {
  static constexpr std::array<std::string_view, 9> kRoots = {"_start",
                                                             "__libc_start_main",
                                                             "__libc_start_call_main",
                                                             "__libc_start_main_impl",
                                                             "start_thread",
                                                             "clone",
                                                             "__clone",
                                                             "clone3",
                                                             "__clone3"};
  for (auto r : kRoots)
    if (name == r) return true;
  return false;
}

}  // namespace

Status StackRowWriter::prepare(sqlite3* db) {
  module_ = Stmt(db,
                 "INSERT OR IGNORE INTO modules (id, path, build_id, dev, inode, symbols, debug_info)"
                 " VALUES (?,?,?,?,?,?,?)");
  symbol_ = Stmt(db, "INSERT OR IGNORE INTO symbols (module_id, name, mangled) VALUES (?,?,?)");
  symbol_id_ = Stmt(db, "SELECT id FROM symbols WHERE module_id = ? AND mangled = ?");
  frame_ = Stmt(db,
                "INSERT OR IGNORE INTO frames (id, module_id, offset, symbol_id, symbol_offset, file, line)"
                " VALUES (?,?,?,?,?,?,?)");
  // A Python frame: its file is its module's path.
  py_frame_ = Stmt(db,
                   "INSERT OR IGNORE INTO frames (id, module_id, offset, symbol_id, file, line, kind)"
                   " SELECT ?1, ?2, ?3, nullif(?4, 0), path, ?5, 'python' FROM modules WHERE id = ?2");
  stack_ =
      Stmt(db, "INSERT OR IGNORE INTO stacks (id, depth, end_reason, python_end, python_thread) VALUES (?,?,?,?,?)");
  stack_frame_ = Stmt(db, "INSERT OR IGNORE INTO stack_frames (stack_id, position, frame_id) VALUES (?,?,?)");
  for (auto* s : {&module_, &symbol_, &symbol_id_, &frame_, &py_frame_, &stack_, &stack_frame_})
    if (!s->valid()) return make_error(std::string("cannot prepare stack statements: ") + sqlite3_errmsg(db));
  return {};
}

namespace {

// How a stack's Python walk ended (migration 018's stacks.python_end).
const char* python_end(int status) {
  switch (status) {
    case GPUOBS_PY_S_DONE: return "root";
    case GPUOBS_PY_S_FULL: return "depth";
    case GPUOBS_PY_S_FAULT: return "fault";
    case GPUOBS_PY_S_NO_THREAD: return "no_thread";
    case kPyStatusTorn: return "torn";
    case kPyStatusGone: return "gone";
    default: return nullptr;
  }
}

}  // namespace

int StackRowWriter::write_module(const ModuleDef& m) {
  if (m.python) {  // a Python source file: its frames come named
    pseudo_modules_.insert(m.id);
    module_.bind(1, m.id).bind(2, m.path).bind_null(3).bind_null(4).bind_null(5);
    module_.bind(6, std::string_view("python")).bind(7, int64_t{1});
    return module_.exec();
  }
  bool file = m.inode != 0;
  if (!file) pseudo_modules_.insert(m.id);
  ModuleInfo info = symbolizer_.add(m);
  bool first = module_has_symbols_.emplace(m.id, info.symbols != "none").second;
  if (first && file && info.symbols == "none") ++stats_.modules_no_symbols;
  module_.bind(1, m.id).bind(2, m.path);
  if (info.build_id.empty()) module_.bind_null(3);
  else module_.bind(3, info.build_id);
  if (file) module_.bind(4, m.dev).bind(5, m.inode);
  else module_.bind_null(4).bind_null(5);
  module_.bind(6, info.symbols).bind(7, int64_t{info.debug_info});
  return module_.exec();
}

int StackRowWriter::write_frame(const FrameDef& f) {
  if (f.python) {
    python_frames_.insert(f.id);
    int rc = symbol_.bind(1, f.module_id).bind(2, f.py_name).bind(3, f.py_name).exec();
    if (rc != SQLITE_DONE) return rc;
    int64_t symbol_id = 0;
    symbol_id_.bind(1, f.module_id).bind(2, f.py_name);
    if (symbol_id_.step() == SQLITE_ROW) symbol_id = sqlite3_column_int64(symbol_id_.get(), 0);
    symbol_id_.reset();
    py_frame_.bind(1, f.id).bind(2, f.module_id).bind(3, static_cast<int64_t>(f.offset)).bind(4, symbol_id);
    if (f.py_line >= 0) py_frame_.bind(5, int64_t{f.py_line});
    else py_frame_.bind_null(5);
    return py_frame_.exec();
  }
  ++stats_.frames;
  std::optional<FrameSymbol> sym;
  if (!pseudo_modules_.count(f.module_id)) sym = symbolizer_.symbolize(f.module_id, f.offset);
  if (!sym || sym->name.empty()) ++stats_.unsymbolized;
  int64_t symbol_id = 0;
  if (sym && !sym->mangled.empty()) {
    int rc = symbol_.bind(1, f.module_id).bind(2, sym->name).bind(3, sym->mangled).exec();
    if (rc != SQLITE_DONE) return rc;
    symbol_id_.bind(1, f.module_id).bind(2, sym->mangled);
    if (symbol_id_.step() == SQLITE_ROW) symbol_id = sqlite3_column_int64(symbol_id_.get(), 0);
    symbol_id_.reset();
    if (is_thread_root(sym->mangled)) root_frames_.insert(f.id);
  }
  frame_.bind(1, f.id).bind(2, f.module_id).bind(3, f.offset);
  if (symbol_id) frame_.bind(4, symbol_id).bind(5, sym->symbol_offset);
  else frame_.bind_null(4).bind_null(5);
  if (sym && !sym->file.empty()) frame_.bind(6, sym->file).bind(7, sym->line);
  else frame_.bind_null(6).bind_null(7);
  return frame_.exec();
}

int StackRowWriter::write_stack(const StackDef& s) {
  // A thread's entry function is the end: what a frame-pointer walk finds
  // past it (libc is built without frame pointers) is not a caller.
  size_t depth = s.frames.size();
  const char* end = "cut";
  std::vector<int64_t> frames = s.frames;
  for (size_t i = 0; i < frames.size(); ++i)
    if (root_frames_.count(frames[i])) {
      // Python frames the resolver placed after the native walk (it did not
      // recognize the interpreter's frames on the way) belong above the
      // thread's entry, not past it: moved there, not dropped. The main
      // thread's frames (this thread ran none) follow the thread's entry:
      // they are another thread's, not this one's callers.
      std::vector<int64_t> py_after;
      for (size_t j = i + 1; j < frames.size(); ++j)
        if (python_frames_.count(frames[j])) py_after.push_back(frames[j]);
      frames.resize(i + 1);
      const size_t at = s.py_thread == GPUOBS_PY_T_MAIN ? frames.size() : i;
      frames.insert(frames.begin() + static_cast<std::ptrdiff_t>(at), py_after.begin(), py_after.end());
      depth = frames.size();
      end = "root";
      break;
    }
  if (s.flags & GPUOBS_STACK_F_FAULT) end = "fault";
  else if (s.frames.empty()) end = "empty";
  else if (std::string_view(end) != "root" && (s.flags & kStackCopyEnd)) end = "copy";
  else if (depth == s.frames.size() && std::string_view(end) != "root" && (s.flags & GPUOBS_STACK_F_FULL))
    end = "depth";
  stack_.bind(1, s.id).bind(2, static_cast<int64_t>(depth)).bind(3, std::string_view(end));
  if (const char* py = python_end(s.py_status)) {
    stack_.bind(4, std::string_view(py));
    stack_.bind(5, std::string_view(s.py_thread == GPUOBS_PY_T_MAIN ? "main" : "calling"));
  } else {
    stack_.bind_null(4).bind_null(5);
  }
  int rc = stack_.exec();
  if (rc != SQLITE_DONE) return rc;
  for (size_t i = 0; i < depth; ++i) {
    rc = stack_frame_.bind(1, s.id).bind(2, static_cast<int64_t>(i)).bind(3, frames[i]).exec();
    if (rc != SQLITE_DONE) return rc;
  }
  return SQLITE_DONE;
}

}  // namespace gpuobs
