// Captures hold every traced user's process names, command lines and stacks:
// they and the directories gpuobs makes for them are private to root and the
// `gpuobs` group (0640 / 0750), whoever's umask is in force and whether or
// not systemd made the directory (docs/operations.md, "Who can read what").
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "common/result.h"

namespace gpuobs {

inline constexpr mode_t kCaptureFileMode = 0640;
inline constexpr mode_t kPrivateDirMode = 0750;

// The gid of group `gpuobs` where it exists.
std::optional<gid_t> gpuobs_group();
// Gives an open file or directory its private mode and, where group gpuobs
// exists (and we may), that group. Failing to change the group is not an
// error: the mode alone keeps other users out.
void make_private(int fd, mode_t mode);
// Creates `dir` and missing parents; the directories it creates get
// kPrivateDirMode and group gpuobs. An existing directory is left as it is
// (its owner chose its mode).
Status create_private_dirs(const std::string& dir);

}  // namespace gpuobs
