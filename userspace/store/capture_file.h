// Making the file a capture is written to, without ever destroying what is
// not ours. `-o` may name anything: a device node, a directory, a symbolic
// link planted in /tmp, a user's own database. gpuobs only creates a new
// regular file (never through a link) or, with --force, replaces a regular
// file that is empty or a gpuobs capture.
#pragma once

#include <string>

#include "common/result.h"

namespace gpuobs {

// What is at a path, as far as replacing it goes.
enum class PathKind { absent, capture, empty_file, sqlite_other, other_file, symlink, directory, special };
PathKind classify_capture_path(const std::string& path);

// Creates `path` as a new, empty regular file with the capture mode (0640,
// group gpuobs), never following a link. With `force`, an existing empty file
// or gpuobs capture (and its -wal/-shm/-journal files) is removed first;
// anything else is refused with a message saying what it is.
Status create_capture_file(const std::string& path, bool force);

// SQLite's files beside a database: its write-ahead log, shared-memory index
// and rollback journal, and record's reserve. The one list of them.
inline constexpr const char* kCaptureCompanions[] = {"-wal", "-shm", "-journal", "-reserve"};
// `gpuobs record`'s room for a capture's end on a full disk (CaptureWriter::stop_storing_when_full).
inline constexpr const char* kCaptureReserveSuffix = "-reserve";

// Removes a capture and its SQLite companions, never following links: one
// this process created and could not finish, or an old segment. Returns
// false (and leaves the companions) when the file itself is there and cannot
// be removed.
bool remove_capture_files(const std::string& path);

}  // namespace gpuobs
