// Traced names reach root's terminal through every table: a process or
// kernel named with ESC, CR or LF must not clear, rewrite or forge it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

#include "common/terminal_text.h"
#include "report/query.h"

using namespace gpuobs;

TEST(TerminalSafe, OrdinaryTextIsUnchanged) {
  for (std::string s : {"", "cuLaunchKernel", "void gemm<float, 128>(float*, int)",
                        "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "café", "名前", "a\\b"})
    EXPECT_EQ(terminal_safe(s), s);
}

TEST(TerminalSafe, ControlCharactersBecomeVisibleEscapes) {
  EXPECT_EQ(terminal_safe("a\x1b[2Jb"), "a\\e[2Jb");
  EXPECT_EQ(terminal_safe("line\r\nforged"), "line\\r\\nforged");
  EXPECT_EQ(terminal_safe("t\tx"), "t\\tx");
  EXPECT_EQ(terminal_safe(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(terminal_safe("bell\x07"
                          "del\x7f"),
            "bell\\x07del\\x7f");
  // OSC 52 (write the clipboard), ended by BEL.
  EXPECT_EQ(terminal_safe("\x1b]52;c;cm0gLXJm\x07"), "\\e]52;c;cm0gLXJm\\x07");
}

TEST(TerminalSafe, C1ControlsAndBrokenUtf8AreEscapedPerByte) {
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "2J"),
            "\\xc2\\x9b2J");  // U+009B, CSI
  EXPECT_EQ(terminal_safe("\x9b"
                          "2J"),
            "\\x9b2J");  // a raw 8-bit CSI
  EXPECT_EQ(terminal_safe("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(terminal_safe("\xe5\x90"), "\\xe5\\x90");           // cut sequence
  EXPECT_EQ(terminal_safe("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
}

TEST(TerminalSafe, BidiOverridesAreShownNotObeyed) {
  EXPECT_EQ(terminal_safe("ab\xe2\x80\xae"
                          "cd"),
            "ab\\u{202e}cd");
  EXPECT_EQ(terminal_safe("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u{2066}x\\u{2069}");
}

TEST(TerminalSafe, TablesAndCsvEscapeWhileJsonKeepsEveryByte) {
  const std::string evil = "evil\x1b]0;owned\x07\r\n#1  forged row";
  QueryResult r{{"kernel", "launches"}, {{Cell{evil}, Cell{int64_t{3}}}, {Cell{std::string("ok")}, Cell{int64_t{1}}}}};
  std::ostringstream table;
  print_result(r, OutputFormat::table, table);
  const std::string t = table.str();
  EXPECT_EQ(t.find('\x1b'), std::string::npos) << t;
  EXPECT_EQ(t.find('\r'), std::string::npos) << t;
  EXPECT_EQ(t.find('\x07'), std::string::npos) << t;
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 4) << "header, rule and two rows, no forged line:\n" << t;
  EXPECT_NE(t.find("evil\\e]0;owned\\x07\\r\\n#1  forged row"), std::string::npos) << t;

  std::ostringstream js;
  print_result(r, OutputFormat::json, js);
  EXPECT_EQ(nlohmann::json::parse(js.str())[0]["kernel"], evil);
  // CSV is escaped as tables are (issue 38: `--format csv` reached the terminal as it was).
  std::ostringstream csv;
  print_result(r, OutputFormat::csv, csv);
  EXPECT_EQ(csv.str().find('\x1b'), std::string::npos) << csv.str();
  EXPECT_EQ(csv.str().find('\r'), std::string::npos) << csv.str();
  EXPECT_NE(csv.str().find("evil\\e]0;owned\\x07\\r\\n#1  forged row"), std::string::npos) << csv.str();
}

TEST(TerminalSafe, LongCellsAreCutOnACharacterBoundary) {
  // 91 ASCII bytes, then 3-byte characters: the 93-byte cut falls inside one.
  std::string name = std::string(91, 'k') + "名前名前名前";
  QueryResult r{{"kernel"}, {{Cell{name}}}};
  std::ostringstream table;
  print_result(r, OutputFormat::table, table);
  std::string t = table.str();
  std::string last = t.substr(t.rfind('\n', t.size() - 2) + 1);
  last.pop_back();
  EXPECT_EQ(last, std::string(91, 'k') + "...");
  EXPECT_EQ(terminal_safe(last), last) << "a cut UTF-8 sequence would print as \\x escapes";
}
