// uprobe-multi links (kernel >= 6.6): one BPF link attaches a program at many
// offsets of one file, each with its own cookie, and releases them all with
// one RCU wait. Per-offset perf-event uprobes cost ~80 ms each to release on
// the dev VM (118 symbols, about 230 uprobes: 18 s at exit). libbpf 1.1 has no API for these
// links, so they are created with the raw bpf(2) command.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuobs {

// BPF_TRACE_UPROBE_MULTI in enum bpf_attach_type (include/uapi/linux/bpf.h, 6.6+).
constexpr uint32_t kAttachUprobeMulti = 48;

// Returns a link fd, or -errno.
int uprobe_multi_link(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                      const std::vector<uint64_t>& cookies, bool return_probe);
// Feature probe: loads a trivial program and links it to libc's getpid.
bool uprobe_multi_supported();

}  // namespace gpuobs
