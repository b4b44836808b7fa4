#include "loader/uprobe_multi.h"

#include <bpf/bpf.h>
#include <dlfcn.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "loader/elf_symbols.h"

namespace gpuobs {
namespace {

// The link_create part of union bpf_attr for uprobe_multi (kernel 6.6+
// layout; Debian 12's uapi headers predate it).
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;  // BPF_F_UPROBE_MULTI_RETURN = 1
  uint32_t pid;
  uint32_t pad;
};
static_assert(sizeof(LinkCreateUprobeMulti) == 64);
constexpr uint32_t kLinkCreate = 28;  // BPF_LINK_CREATE
constexpr uint32_t kMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

}  // namespace

int uprobe_multi_link(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                      const std::vector<uint64_t>& cookies, bool return_probe) {
  if (offsets.empty() || offsets.size() != cookies.size()) return -EINVAL;
  union {
    LinkCreateUprobeMulti lc;
    char attr[160];  // >= sizeof(union bpf_attr) on the kernels we know; the tail must be zero
  } u;
  std::memset(&u, 0, sizeof u);
  u.lc.prog_fd = static_cast<uint32_t>(prog_fd);
  u.lc.attach_type = kAttachUprobeMulti;
  u.lc.path = reinterpret_cast<uint64_t>(path.c_str());
  u.lc.offsets = reinterpret_cast<uint64_t>(offsets.data());
  u.lc.cookies = reinterpret_cast<uint64_t>(cookies.data());
  u.lc.cnt = static_cast<uint32_t>(offsets.size());
  u.lc.multi_flags = return_probe ? kMultiReturn : 0;
  // Pass only the link_create part: the kernel checks that bytes past the
  // fields it knows are zero, and older kernels' union is smaller than ours.
  long fd = ::syscall(__NR_bpf, kLinkCreate, &u, sizeof(LinkCreateUprobeMulti));
  return fd < 0 ? -errno : static_cast<int>(fd);
}

bool uprobe_multi_supported() {
  // r0 = 0; exit
  struct bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = static_cast<bpf_attach_type>(kAttachUprobeMulti));
  int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "gpuobs_probe", "GPL", insns, 2, &opts);
  if (prog < 0) return false;
  bool ok = false;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&::getpid), &info) && info.dli_fname) {
    auto syms = read_function_symbols(info.dli_fname);
    if (syms && syms->count("getpid")) {
      int link = uprobe_multi_link(prog, info.dli_fname, {syms->at("getpid").file_offset}, {0}, false);
      if (link >= 0) {
        ok = true;
        ::close(link);
      }
    }
  }
  ::close(prog);
  return ok;
}

}  // namespace gpuobs
