// gpuobs export perfetto|chrome FILE -o OUT: the capture's host calls, the
// replayed GPU queues (gpuobs replay's model, computed here, not read from
// the replay tables: the capture stays untouched), flows and counters as a
// timeline. gpuobs export pprof FILE -o OUT: the stacks of `gpuobs stacks`
// as a pprof profile. (export folded is in stacks.cpp, next to the stacks
// command it shares its loading with.)
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "common/gzip.h"
#include "common/log.h"
#include "common/progress.h"
#include "export/chrome_writer.h"
#include "export/html_writer.h"
#include "export/perfetto_writer.h"
#include "export/pprof_writer.h"
#include "export/timeline_source.h"
#include "export/trace_layout.h"
#include "replay/replay.h"
#include "store/schema.h"

namespace gpuobs::cli {
namespace {

Result<exporter::TraceLayout> timeline_layout(const std::string& file) {
  auto db = open_capture_readonly(file.empty() ? std::string(kDaemonCapture) : file);
  if (!db) return db.error();
  auto timeline = exporter::load_timeline(*db);
  if (!timeline) return timeline.error();
  auto replayed = replay::run(*db);
  if (!replayed) return replayed.error();
  return exporter::build_layout(std::move(*timeline), *replayed);
}

int fail(const char* program, const Error& e) {
  print_error(program, e);
  return e.exit_code;
}

// Every export writes through cli/output_file.h.
int write_file(const char* program, const std::string& path, bool force,
               const std::function<Status(std::ostream&)>& write) {
  if (Status s = write_output(path, force, write); !s) return fail(program, s.error());
  return 0;
}

}  // namespace

int run_export_timeline(const TimelineExportArgs& a) {
  const char* program = a.chrome ? "gpuobs export chrome" : "gpuobs export perfetto";
  if (Status st = check_output(a.output, a.force); !st) return fail(program, st.error());
  std::optional<Progress> progress(std::in_place, program);
  auto layout = timeline_layout(a.file);
  Status written = layout ? write_output(a.output, a.force,
                                         [&](std::ostream& out) {
                                           return a.chrome ? exporter::write_chrome_json(*layout, out)
                                                           : exporter::write_perfetto(*layout, out);
                                         })
                          : Status(layout.error());
  progress.reset();  // erased before an error is printed
  return written ? 0 : fail(program, written.error());
}

int run_export_html(const HtmlExportArgs& a) {
  const char* program = "gpuobs export html";
  if (Status st = check_output(a.output, a.force); !st) return fail(program, st.error());
  auto db = open_capture_readonly(a.file.empty() ? std::string(kDaemonCapture) : a.file);
  if (!db) return fail(program, db.error());
  std::optional<Progress> progress(std::in_place, program);
  auto replayed = replay::run(*db);
  exporter::HtmlOptions o;
  if (a.since_s >= 0) o.since_s = a.since_s;
  if (a.until_s >= 0) o.until_s = a.until_s;
  Status written = replayed
                       ? write_output(a.output, a.force,
                                      [&](std::ostream& out) { return exporter::write_html(*db, *replayed, o, out); })
                       : Status(replayed.error());
  progress.reset();
  return written ? 0 : fail(program, written.error());
}

int run_export_pprof(const StackArgs& a) {
  const char* program = "gpuobs export pprof";
  auto m = parse_measure(a.by);
  if (!m) return fail(program, m.error());
  if (Status st = check_output(a.output, a.force); !st) return fail(program, st.error());
  auto db = open_capture_readonly(a.file.empty() ? std::string(kDaemonCapture) : a.file);
  if (!db) return fail(program, db.error());
  StackFilter f{a.pid ? std::optional<int64_t>(a.pid) : std::nullopt, a.kernel, a.api, a.by_process};
  auto profile = [&] {
    Progress progress(program);  // erased before anything else is printed
    return exporter::pprof_profile(*db, *m, f);
  }();
  if (!profile) return fail(program, profile.error());
  auto gz = gzip(*profile);  // pprof wants the file gzipped
  if (!gz) return fail(program, gz.error());
  return write_file(program, a.output, a.force, [&](std::ostream& out) -> Status {
    out.write(gz->data(), static_cast<std::streamsize>(gz->size()));
    if (!out) return make_error("cannot write " + a.output + " (disk full?)");
    return {};
  });
}

}  // namespace gpuobs::cli
