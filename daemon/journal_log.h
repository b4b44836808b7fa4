// gpuobsd's log: on the journal (stderr connected to it, JOURNAL_STREAM set)
// each line starts with its syslog priority, "<3>" .. "<7>" (sd-daemon(3)),
// and carries no timestamp (the journal adds one); elsewhere, the usual
// "level: message" lines with a timestamp.
#pragma once

#include <string_view>

namespace gpuobs::daemon {

// True when stderr is the stream JOURNAL_STREAM names (device:inode).
bool stderr_is_journal();
void log_init(std::string_view level);

}  // namespace gpuobs::daemon
