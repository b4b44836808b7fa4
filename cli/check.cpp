// gpuobs check FILE...: PRAGMA integrity_check over whole captures (the
// read commands only quick_check small files), and how each capture ended.
// Exit status 0: every file intact; 1: damage found; 2: not a readable capture.
#include <cstdio>

#include "cli/commands.h"
#include "common/log.h"
#include "common/terminal_text.h"
#include "store/schema.h"

namespace gpuobs::cli {
namespace {

constexpr const char* kProgram = "gpuobs check";
constexpr int kMaxProblems = 100;

int check_one(const std::string& file) {
  auto db = open_capture_readonly(file, OpenCheck::none);
  if (!db && db.error().corrupt) {
    // Damaged past opening (its schema or header): that is this command's
    // finding, not a failure to run it, and its hint would name this command.
    std::printf("%s: corrupt\n  %s\n", terminal_safe(file).c_str(), terminal_safe(db.error().message).c_str());
    print_error(kProgram, make_error("capture is corrupt: " + file + ": it cannot be opened",
                                     "its numbers cannot be trusted; record it again"));
    return 1;
  }
  if (!db) {
    print_error(kProgram, db.error());
    return db.error().exit_code;
  }
  auto problems = integrity_problems(*db, false, kMaxProblems);
  if (!problems) {
    Error e = problems.error();
    if (e.corrupt) e.hint = "its numbers cannot be trusted; record it again";  // not "run gpuobs check"
    print_error(kProgram, e);
    return 1;
  }
  if (!problems->empty()) {
    std::printf("%s: corrupt\n", terminal_safe(file).c_str());
    for (const auto& p : *problems) std::printf("  %s\n", terminal_safe(p).c_str());
    print_error(kProgram, make_error("capture is corrupt: " + file + ": " + std::to_string(problems->size()) +
                                         (problems->size() >= static_cast<size_t>(kMaxProblems) ? " or more" : "") +
                                         " problem(s) found by PRAGMA integrity_check and the reference checks",
                                     "its numbers cannot be trusted; record it again"));
    return 1;
  }
  // Intact; how it ended (version 11; NULL in older captures).
  std::string state = "unknown (written before schema version 11)";
  if (Stmt st(db->get(), "SELECT state FROM capture WHERE id = 1"); st.valid() && st.step() == SQLITE_ROW)
    if (const unsigned char* t = sqlite3_column_text(st.get(), 0)) state = reinterpret_cast<const char*>(t);
  // The state is the file's text: a capture from elsewhere could hold ESC or CR.
  std::printf("%s: ok (integrity_check), capture %s\n", terminal_safe(file).c_str(), terminal_safe(state).c_str());
  return 0;
}

}  // namespace

int run_check(const CheckArgs& a) {
  int rc = 0;
  for (const auto& f : a.files) {
    int r = check_one(f);
    if (r > rc) rc = r;
  }
  return rc;
}

}  // namespace gpuobs::cli
