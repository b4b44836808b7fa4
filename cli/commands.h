// gpuobs subcommands. Each returns the process exit status.
#pragma once

#include <string>
#include <vector>

#include "capture/session.h"

namespace gpuobs::cli {

struct RecordArgs {
  SessionOptions session;
  std::vector<std::string> command;
};
int run_record(RecordArgs& args);

struct ReportArgs {
  std::string name;
  std::string file;
  std::string format = "table";
  bool list = false;
};
int run_report(const ReportArgs& args);

}  // namespace gpuobs::cli
