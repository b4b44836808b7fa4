// libbpf's messages reach the user at the level they deserve: a rejected
// program's verifier log (hundreds of lines) only with -v debug, which the
// load error's hint names; libbpf's other warnings stay warnings (issue 20).
#include <gtest/gtest.h>

#include "common/log.h"

using namespace gpuobs;

TEST(LibbpfLog, AVerifierLogIsDebugOtherWarningsStayWarnings) {
  EXPECT_EQ(libbpf_message_level(LIBBPF_WARN,
                                 "prog 'ioctl_exit': -- BEGIN PROG LOAD LOG --\n0: R1=ctx() R10=fp0\n"
                                 "invalid access to memory, mem_size=608 off=336 size=511\n"
                                 "-- END PROG LOAD LOG --"),
            spdlog::level::debug);
  EXPECT_EQ(libbpf_message_level(LIBBPF_WARN, "prog 'ioctl_exit': BPF program load failed: Permission denied"),
            spdlog::level::warn);
  EXPECT_EQ(libbpf_message_level(LIBBPF_WARN, "failed to find valid kernel BTF"), spdlog::level::warn);
  EXPECT_EQ(libbpf_message_level(LIBBPF_INFO, "loaded"), spdlog::level::debug);
  EXPECT_EQ(libbpf_message_level(LIBBPF_DEBUG, "sec 'uprobe'"), spdlog::level::trace);
}
