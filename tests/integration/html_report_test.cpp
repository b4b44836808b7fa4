// gpuobs export html, loaded as a user would: headless Chromium (Debian's
// chromium, no network) opens the page, which must run without a console
// message or error, draw the flame graph of a workload whose stack is known
// (main -> level_one -> level_two -> level_three -> the launch), and leave a
// screenshot in the build tree; a traced name holding markup stays text
// (issue 20). Root and real BPF for the recorded workload.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "run_util.h"
#include "store/writer.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

struct Loaded {
  int rc = -1;
  std::string dom, log;
};

// The page after its scripts ran (--dump-dom), and Chromium's log with the
// page's console messages (":CONSOLE"); a screenshot of `tab` when asked.
Loaded load(const TempDir& dir, const std::string& html, const std::string& screenshot = "",
            const std::string& tab = "") {
  std::string flags =
      "chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking "
      "--disable-component-update --disable-sync --hide-scrollbars --user-data-dir=" +
      dir.file("profile") + " --virtual-time-budget=3000 ";
  Loaded out;
  out.rc = run("timeout 120 " + flags + "--enable-logging=stderr --v=0 --dump-dom file://" + html + " > " +
               dir.file("dom") + " 2> " + dir.file("log"));
  out.dom = read_file(dir.file("dom"));
  out.log = read_file(dir.file("log"));
  if (!screenshot.empty())
    (void)run("timeout 120 " + flags + "--window-size=1400,700 --screenshot=" + screenshot + " 'file://" + html + "#" +
              tab + "' >/dev/null 2>&1");
  return out;
}

void expect_clean(const Loaded& page) {
  EXPECT_EQ(page.rc, 0) << page.log;
  EXPECT_NE(page.dom.find("data-ready=\"1\""), std::string::npos) << "the page's script did not finish";
  EXPECT_EQ(page.dom.find("data-errors"), std::string::npos) << page.dom.substr(0, 2000);
  EXPECT_EQ(page.log.find(":CONSOLE"), std::string::npos) << page.log;
}

}  // namespace

TEST(HtmlReport, LoadsWithoutErrorsAndDrawsTheKnownStack) {
  TempDir dir;
  std::string cap = dir.file("chain.gpuobs"), html = dir.file("chain.html");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " record -o " + cap + " --libcuda " + FAKE_LIBCUDA +
                " --no-gpu-devices --watch-dev /dev/null -- " + STACK_WORKLOAD + " " + FAKE_LIBCUDA +
                " chain 20 2>/dev/null"),
            0);
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " export html " + cap + " -o " + html), 0);
  // Self-contained: nothing the page could fetch.
  std::string page = read_file(html);
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg"));  // the SVG namespace only
  EXPECT_EQ(page.find("https://"), std::string::npos);
  std::string png = std::string(SCREENSHOT_DIR) + "/html-report-flame.png";
  std::filesystem::remove(png);
  Loaded loaded = load(dir, html, png, "flame");
  expect_clean(loaded);
  // The flame graph of launches: the process, then the chain root to leaf.
  for (const char* frame : {"stack_workload (pid ", "main\"", "level_one\"", "level_two\"", "level_three\""})
    EXPECT_NE(loaded.dom.find(std::string("data-frame=\"") + frame), std::string::npos) << frame;
  EXPECT_NE(loaded.dom.find("launches (20 launches)"), std::string::npos);
  // The tables: the kernel and the sync the workload made.
  EXPECT_NE(loaded.dom.find("cuStreamSynchronize"), std::string::npos);
  std::string shot = read_file(png);
  ASSERT_GT(shot.size(), 5000u) << "no screenshot at " << png;
  EXPECT_EQ(shot.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::printf("screenshot: %s (%zu bytes)\n", png.c_str(), shot.size());
}

// A process named like markup: the page still runs, shows the name as text,
// and no element of it reaches the DOM.
TEST(HtmlReport, AHostileNameStaysText) {
  TempDir dir;
  std::string cap = dir.file("hostile.gpuobs"), html = dir.file("hostile.html");
  const std::string comm = "</script><img src=x id=pwn>";
  {
    auto w = CaptureWriter::create(cap, false, nullptr);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", 1000, 0, 4096}).ok());
    (*w)->start();
    gpuobs_hdr fork{GPUOBS_EV_PROC_FORK, 0, 1000, 77, 77};
    (*w)->push(ProcEvent{GPUOBS_EV_PROC_FORK, fork, 1, 1, 0, comm, ""}, 0);
    gpuobs_launch l{};
    l.hdr = gpuobs_hdr{GPUOBS_EV_LAUNCH, 0, 2000, 77, 77};
    l.function = 0xF1;
    l.grid_x = l.grid_y = l.grid_z = l.block_x = l.block_y = l.block_z = 1;
    l.api = GPUOBS_API_CU_LAUNCH_KERNEL;
    (*w)->push(l, 0);
    (*w)->stop();
    ASSERT_TRUE((*w)->write_end(3000, 0, {}).ok());
  }
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " export html " + cap + " -o " + html), 0);
  EXPECT_EQ(read_file(html).find(comm), std::string::npos) << "the name went into the page raw";
  Loaded loaded = load(dir, html);
  expect_clean(loaded);
  EXPECT_EQ(loaded.dom.find("id=\"pwn\""), std::string::npos) << "markup from a traced name became an element";
  EXPECT_NE(loaded.dom.find("&lt;/script&gt;&lt;img src=x id=pwn&gt;"), std::string::npos);
}

// After gpuobs replay --execute (the fake libcuda: the calls, not the
// timings), the Tables tab shows the original and the re-execution side by
// side: one row per stream of the bundled example and the end-to-end row.
TEST(HtmlReport, ShowsTheReExecutionBesideTheOriginal) {
  TempDir dir;
  std::string cap = dir.file("ex.gpuobs"), html = dir.file("ex.html");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " record -o " + cap + " --libcuda " + FAKE_LIBCUDA + " -- " +
                CUDA_STREAMS_EXAMPLE + " --lib " + FAKE_LIBCUDA + " --no-verify --launches 40 2>/dev/null"),
            0);
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " replay " + cap + " --execute --runs 3 --cuda-lib " + FAKE_LIBCUDA +
                " >/dev/null 2>&1"),
            0);
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " export html " + cap + " -o " + html), 0);
  Loaded loaded = load(dir, html);
  expect_clean(loaded);
  EXPECT_NE(loaded.dom.find("Re-executed on a GPU (replay_exec_sum), median of 3 runs"), std::string::npos);
  EXPECT_NE(loaded.dom.find("id=\"replay-exec\""), std::string::npos);
  for (const char* stream : {"stream#1", "stream#2", "stream#3", "stream#4", "end to end"})
    EXPECT_NE(loaded.dom.find(std::string("data-stream=\"") + stream + "\""), std::string::npos) << stream;
  EXPECT_NE(loaded.dom.find("40 / 40"), std::string::npos) << "the end-to-end row's launches, each side";
}
