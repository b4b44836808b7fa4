// Driver ioctl decoding on argument images built byte by byte, with the
// offsets of docs/reference/abi-reference.md §1-§3.
#include "decode/driver_ioctl.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "events.h"

using namespace gpuobs;

namespace {

// An argument struct of a given size, written little-endian at offsets.
struct Image {
  std::string b;
  explicit Image(size_t size) : b(size, '\0') {}
  Image& put(size_t off, uint64_t v, size_t width) {
    for (size_t i = 0; i < width; ++i) b.at(off + i) = char((v >> (8 * i)) & 0xff);
    return *this;
  }
  Image& u8(size_t off, uint8_t v) { return put(off, v, 1); }
  Image& u32(size_t off, uint32_t v) { return put(off, v, 4); }
  Image& u64(size_t off, uint64_t v) { return put(off, v, 8); }
  Image& str(size_t off, std::string_view s) {
    b.replace(off, s.size(), s);
    return *this;
  }
};

constexpr uint32_t nv_cmd(uint32_t nr, uint32_t size) { return 0xC0000000u | size << 16 | 0x46u << 8 | nr; }
// dir: 1 write (_IOW), 2 read (_IOR), 3 both.
constexpr uint32_t kfd_cmd(uint32_t dir, uint32_t nr, uint32_t size) {
  return dir << 30 | size << 16 | 0x4Bu << 8 | nr;
}

const NvidiaVersion kV580{580, 159, 4};
const NvidiaVersion kV545{545, 29, 6};

DecodedIoctl decode(uint32_t driver, uint32_t cmd, const std::string& head, const std::string& aux = "",
                    NvidiaVersion v = kV580, int64_t ret = 0) {
  IoctlCapture c;
  c.driver = driver;
  c.cmd = cmd;
  c.ret = ret;
  c.head = head;
  c.aux = aux;
  c.nvidia = v;
  return decode_ioctl(c);
}

DecodedIoctl nv(uint32_t cmd, const std::string& head, const std::string& aux = "", NvidiaVersion v = kV580) {
  return decode(GPUOBS_DRV_NVIDIA, cmd, head, aux, v);
}
DecodedIoctl uvm(uint32_t cmd, const std::string& head, const std::string& aux = "", NvidiaVersion v = kV580) {
  return decode(GPUOBS_DRV_NVIDIA_UVM, cmd, head, aux, v);
}
DecodedIoctl kfd(uint32_t cmd, const std::string& head, int64_t ret = 0) {
  return decode(GPUOBS_DRV_KFD, cmd, head, "", {}, ret);
}

// NVOS64 r535+ (48 B) image.
Image rm_alloc48(uint32_t cls, uint32_t status) {
  Image a(48);
  a.u32(0, 0xc1d00040).u32(4, 0x5c000002).u32(8, 0x5c00001c).u32(12, cls).u64(16, 0x7ffc12340000);
  a.u64(24, 0).u32(32, 0).u32(36, 0).u32(40, status);
  return a;
}

const gpuobs_ioctl_rule* find_rule(const std::vector<IoctlRuleEntry>& rules, uint32_t driver, uint32_t key) {
  for (const auto& e : rules)
    if (e.key.driver == driver && e.key.cmd_key == key) return &e.rule;
  return nullptr;
}

}  // namespace

// ---- NVIDIA RM ----

TEST(NvidiaIoctl, RmAllocChannel48) {
  Image params(256);
  params.u32(0, 0x5c000010).u32(4, 0x5c000011).u64(8, 0x200000000).u32(16, 1024).u32(20, 0x3);
  params.u32(24, 0x5c000012).u32(28, 0x5c000009).u32(128, 0x14);
  auto d = nv(0xC030462B, rm_alloc48(0xC86F, 0).b, params.b);
  EXPECT_EQ(d.request, "NV_ESC_RM_ALLOC");
  EXPECT_EQ(d.status, 0);
  EXPECT_EQ(d.status_name, "NV_OK");
  EXPECT_FALSE(d.failed);
  EXPECT_EQ(d.object_class, 0xC86Fu);
  EXPECT_EQ(d.class_name, "HOPPER_CHANNEL_GPFIFO_A");
  EXPECT_EQ(d.fields["hRoot"], 0xc1d00040u);
  EXPECT_EQ(d.fields["hObjectNew"], 0x5c00001cu);
  EXPECT_EQ(d.fields["pAllocParms"], 0x7ffc12340000u);
  EXPECT_EQ(d.fields["gpFifoOffset"], 0x200000000u);
  EXPECT_EQ(d.fields["gpFifoEntries"], 1024u);
  EXPECT_EQ(d.fields["hContextShare"], 0x5c000012u);
  EXPECT_EQ(d.fields["hVASpace"], 0x5c000009u);
  EXPECT_EQ(d.fields["engineType"], 0x14u);
  ASSERT_TRUE(d.object);
  EXPECT_EQ(d.object->op, "alloc");
  EXPECT_EQ(d.object->kind, "channel");
  EXPECT_EQ(d.object->client, 0xc1d00040u);
  EXPECT_EQ(d.object->parent, 0x5c000002u);
  EXPECT_EQ(d.object->handle, 0x5c00001cu);
  EXPECT_EQ(d.object->object_class, 0xC86Fu);
  EXPECT_EQ(d.object->class_name, "HOPPER_CHANNEL_GPFIFO_A");
  EXPECT_FALSE(d.object->bytes);
}

TEST(NvidiaIoctl, RmAllocLocalMemoryTakesSizeFromParams) {
  Image params(128);
  params.u32(0, 0xc1d00040).u32(4, 0).u32(8, 0x1).u32(24, 0x11800000).u32(28, 0x2);
  params.u64(64, 2097152).u64(72, 0x200000).u64(96, 0).u32(108, 0x5c000009);
  auto d = nv(0xC030462B, rm_alloc48(0x40, 0).b, params.b);
  EXPECT_EQ(d.class_name, "NV01_MEMORY_LOCAL_USER");
  EXPECT_EQ(d.status_name, "NV_OK");
  EXPECT_FALSE(d.failed);
  ASSERT_TRUE(d.object);
  EXPECT_EQ(d.object->kind, "memory");
  EXPECT_EQ(d.object->bytes, 2097152u);
  EXPECT_EQ(d.object->flags, 0x11800000u);
  EXPECT_EQ(d.fields["size"], 2097152u);
  EXPECT_EQ(d.fields["alignment"], 0x200000u);
  EXPECT_EQ(d.fields["flags"], 0u) << "NVOS64 flags keep their name";
  EXPECT_EQ(d.fields["params_flags"], 0x1u) << "the memory flags are renamed";
  EXPECT_EQ(d.fields["owner"], 0xc1d00040u);
  EXPECT_EQ(d.fields["hVASpace"], 0x5c000009u);
}

TEST(NvidiaIoctl, RmAllocMemoryWithoutParamsHasNoSize) {
  auto d = nv(0xC030462B, rm_alloc48(0x3E, 0).b);
  ASSERT_TRUE(d.object);
  EXPECT_EQ(d.object->kind, "sysmem");
  EXPECT_EQ(d.object->class_name, "NV01_MEMORY_SYSTEM");
  EXPECT_FALSE(d.object->bytes);
  EXPECT_FALSE(d.fields.contains("size"));
  EXPECT_FALSE(d.fields.contains("params_flags"));
}

TEST(NvidiaIoctl, RmAllocNoMemoryFails) {
  auto d = nv(0xC030462B, rm_alloc48(0x40, 0x51).b);
  EXPECT_EQ(d.status, 0x51);
  EXPECT_EQ(d.status_name, "NV_ERR_NO_MEMORY");
  EXPECT_TRUE(d.failed);
  EXPECT_FALSE(d.object) << "a failed alloc created nothing";
  EXPECT_EQ(d.object_class, 0x40u);  // still says what was asked for
}

TEST(NvidiaIoctl, WarningIsNotFailureAndUnknownStatusIsHex) {
  auto warn = nv(0xC030462B, rm_alloc48(0x40, 0x10006).b);
  EXPECT_EQ(warn.status_name, "NV_WARN_NOTHING_TO_DO");
  EXPECT_FALSE(warn.failed);
  EXPECT_TRUE(warn.object);
  auto odd = nv(0xC030462B, rm_alloc48(0x40, 0x1234).b);
  EXPECT_EQ(odd.status_name, "0x1234");
  EXPECT_TRUE(odd.failed);
  // The syscall failing fails the call whatever the head says.
  auto d = decode(GPUOBS_DRV_NVIDIA, 0xC030462B, rm_alloc48(0x40, 0).b, "", kV580, -14);
  EXPECT_TRUE(d.failed);
}

TEST(NvidiaIoctl, RmAllocNvos21StatusMovedInR535) {
  // @24 is the status before r535, paramsSize from r535 on (status @28).
  Image a(32);
  a.u32(0, 0xc1d00001).u32(4, 0xc1d00001).u32(8, 0xbeef0001).u32(12, 0x80).u32(24, 0x1F).u32(28, 0x22);
  auto old = nv(0xC020462B, a.b, "", NvidiaVersion{530, 41, 3});
  EXPECT_EQ(old.status, 0x1F);
  EXPECT_EQ(old.status_name, "NV_ERR_INVALID_ARGUMENT");
  EXPECT_FALSE(old.fields.contains("paramsSize"));
  auto now = nv(0xC020462B, a.b, "", kV580);
  EXPECT_EQ(now.status, 0x22);
  EXPECT_EQ(now.status_name, "NV_ERR_INVALID_CLASS");
  EXPECT_EQ(now.fields["paramsSize"], 0x1Fu);
  EXPECT_EQ(nv(0xC020462B, a.b, "", NvidiaVersion{}).status, 0x22) << "unknown version: newest layout";
  EXPECT_EQ(now.class_name, "NV01_DEVICE_0");
  EXPECT_TRUE(now.failed);
}

TEST(NvidiaIoctl, RmAllocNvos64Of40BytesByVersion) {
  Image a(40);
  a.u32(12, 0x2080).u32(32, 0x56).u32(36, 0x3A);
  EXPECT_EQ(nv(0xC028462B, a.b, "", NvidiaVersion{520, 61, 5}).status, 0x56);
  auto r525 = nv(0xC028462B, a.b, "", NvidiaVersion{525, 60, 11});
  EXPECT_EQ(r525.status, 0x3A);
  EXPECT_EQ(r525.fields["flags"], 0x56u);
  EXPECT_EQ(r525.class_name, "NV20_SUBDEVICE_0");
}

TEST(NvidiaIoctl, RmAllocRootClientParams) {
  Image params(120);
  params.u32(0, 0).u32(4, 4242).str(8, "python3");
  auto d = nv(0xC030462B, rm_alloc48(0x41, 0).b, params.b);
  EXPECT_EQ(d.class_name, "NV01_ROOT_CLIENT");
  ASSERT_TRUE(d.object);
  EXPECT_EQ(d.object->kind, "client");
  EXPECT_EQ(d.fields["processID"], 4242u);
  EXPECT_EQ(d.fields["processName"], "python3");
}

TEST(NvidiaIoctl, ClassKinds) {
  auto kind = [](uint32_t cls) {
    auto d = nv(0xC030462B, rm_alloc48(cls, 0).b);
    return d.object ? d.object->kind : std::string("none");
  };
  EXPECT_EQ(kind(0xCBC0), "engine");
  EXPECT_EQ(kind(0xC8B5), "engine");
  EXPECT_EQ(kind(0xCB97), "engine");
  EXPECT_EQ(kind(0xA06C), "channel_group");
  EXPECT_EQ(kind(0x9067), "context_share");
  EXPECT_EQ(kind(0x90F1), "vaspace");
  EXPECT_EQ(kind(0x80), "device");
  EXPECT_EQ(kind(0x2080), "subdevice");
  EXPECT_EQ(kind(0x0), "client");
  EXPECT_EQ(kind(0x79), "event");
  EXPECT_EQ(kind(0xC661), "usermode");
  EXPECT_EQ(kind(0x50A0), "virtual") << "an address range holds no memory";
  EXPECT_EQ(kind(0x40), "memory");
  EXPECT_EQ(kind(0x3E), "sysmem");
  EXPECT_EQ(kind(0x71), "sysmem");
  EXPECT_EQ(kind(0xC2), "memory");
  EXPECT_EQ(kind(0x503C), "other");
  EXPECT_EQ(kind(0x1234), "other");
}

TEST(NvidiaIoctl, ClassNames) {
  EXPECT_EQ(nv_class_name(0x0), "NV01_ROOT");
  EXPECT_EQ(nv_class_name(0x41), "NV01_ROOT_CLIENT");
  EXPECT_EQ(nv_class_name(0xCB33), "NV_CONFIDENTIAL_COMPUTE");
  EXPECT_EQ(nv_class_name(0xCAB5), "BLACKWELL_DMA_COPY_B");
  EXPECT_EQ(nv_class_name(0xC9B0), "NVC9B0_VIDEO_DECODER");
  EXPECT_EQ(nv_class_name(0xC9FA), "NVC9FA_VIDEO_OFA");
  EXPECT_EQ(nv_class_name(0x1234), "");
  EXPECT_EQ(nv_status_name(0x65), "NV_ERR_TIMEOUT");
  EXPECT_EQ(nv_status_name(0x10001), "0x10001");
}

TEST(NvidiaIoctl, RmAllocMemoryEscape) {
  Image a(56);
  a.u32(0, 0xc1d00040).u32(4, 0x5c000003).u32(8, 0x5c000040).u32(12, 0x3E).u32(16, 0x4000);
  a.u64(24, 0x7f0000000000).u64(32, 0xFFFFF).u32(40, 0).u32(48, 12);
  auto d = nv(0xC0384627, a.b);
  EXPECT_EQ(d.request, "NV_ESC_RM_ALLOC_MEMORY");
  EXPECT_EQ(d.status_name, "NV_OK");
  EXPECT_EQ(d.fields["fd"], 12);
  ASSERT_TRUE(d.object);
  EXPECT_EQ(d.object->kind, "sysmem");
  EXPECT_EQ(d.object->bytes, 0x100000u);
  EXPECT_EQ(d.object->handle, 0x5c000040u);
  EXPECT_EQ(d.object->class_name, "NV01_MEMORY_SYSTEM");
}

TEST(NvidiaIoctl, RmFree) {
  Image a(16);
  a.u32(0, 0xc1d00040).u32(4, 0x5c000002).u32(8, 0x5c00001c).u32(12, 0);
  auto d = nv(0xC0104629, a.b);
  EXPECT_EQ(d.request, "NV_ESC_RM_FREE");
  EXPECT_EQ(d.status_name, "NV_OK");
  ASSERT_TRUE(d.object);
  EXPECT_EQ(d.object->op, "free");
  EXPECT_EQ(d.object->client, 0xc1d00040u);
  EXPECT_EQ(d.object->parent, 0x5c000002u);
  EXPECT_EQ(d.object->handle, 0x5c00001cu);
  EXPECT_FALSE(d.object->object_class);
}

Image rm_control(uint32_t cmd, uint32_t status) {
  Image a(32);
  a.u32(0, 0xc1d00040).u32(4, 0x5c000030).u32(8, cmd).u32(12, 0).u64(16, 0x7ffd00001000).u32(24, 64).u32(28, status);
  return a;
}

TEST(NvidiaIoctl, RmControlNamed) {
  auto d = nv(0xC020462A, rm_control(0x503C0104, 0).b);
  EXPECT_EQ(d.request, "NV_ESC_RM_CONTROL");
  EXPECT_EQ(d.control, 0x503C0104u);
  EXPECT_EQ(d.control_name, "NV503C_CTRL_CMD_REGISTER_VIDMEM");
  EXPECT_EQ(d.object_class, 0x503Cu);
  EXPECT_EQ(d.class_name, "NV50_THIRD_PARTY_P2P");
  EXPECT_EQ(d.fields["hObject"], 0x5c000030u);
  EXPECT_EQ(d.fields["paramsSize"], 64u);
  EXPECT_FALSE(d.fields.contains("category"));
  EXPECT_EQ(d.status_name, "NV_OK");
  EXPECT_FALSE(d.object);
  EXPECT_EQ(nv(0xC020462A, rm_control(0xD01, 0).b).control_name, "NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE");
  EXPECT_EQ(nv(0xC020462A, rm_control(0xD01, 0).b).class_name, "NV01_ROOT");
}

TEST(NvidiaIoctl, RmControlUnnamedIsDecodedGenerically) {
  auto d = nv(0xC020462A, rm_control(0x20809001, 0x56).b);
  EXPECT_EQ(d.control, 0x20809001u);
  EXPECT_EQ(d.control_name, "");
  EXPECT_EQ(d.object_class, 0x2080u);
  EXPECT_EQ(d.class_name, "NV20_SUBDEVICE_0");
  EXPECT_EQ(d.fields["category"], 0x90u);
  EXPECT_EQ(d.fields["index"], 1u);
  EXPECT_EQ(d.status_name, "NV_ERR_NOT_SUPPORTED");
  EXPECT_TRUE(d.failed);
}

TEST(NvidiaIoctl, XferCmdUnwrapsTheInnerEscape) {
  Image x(16);
  x.u32(0, 0x2A).u32(4, 32).u64(8, 0x7ffd00002000);
  auto d = nv(0xC01046D3, x.b, rm_control(0xC36F0108, 0).b);
  EXPECT_EQ(d.request, "NV_ESC_RM_CONTROL");
  EXPECT_EQ(d.fields["xfer"], true);
  EXPECT_EQ(d.control_name, "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN");
  EXPECT_EQ(d.fields["hClient"], 0xc1d00040u);
  EXPECT_EQ(d.status_name, "NV_OK");
  // Without the inner image: the inner name, nothing else.
  auto bare = nv(0xC01046D3, x.b);
  EXPECT_EQ(bare.request, "NV_ESC_RM_CONTROL");
  EXPECT_FALSE(bare.status);
  EXPECT_FALSE(bare.control);
}

TEST(NvidiaIoctl, MapMemoryDmaLayoutBySize) {
  Image n(64);
  n.u32(0, 1).u32(4, 2).u32(8, 3).u32(12, 4).u64(16, 0x1000).u64(24, 0x200000).u32(32, 0x5).u32(36, 0x7);
  n.u32(40, 0x9).u64(48, 0x7f0000200000).u32(56, 0x1F);
  auto d = nv(0xC0404657, n.b);
  EXPECT_EQ(d.request, "NV_ESC_RM_MAP_MEMORY_DMA");
  EXPECT_EQ(d.fields["flags2"], 0x7u);
  EXPECT_EQ(d.fields["dmaOffset"], 0x7f0000200000u);
  EXPECT_EQ(d.status_name, "NV_ERR_INVALID_ARGUMENT");

  Image o(56);
  o.u32(0, 1).u32(4, 2).u32(8, 3).u32(12, 4).u64(16, 0x1000).u64(24, 0x200000).u32(32, 0x5).u32(36, 0x9);
  o.u64(40, 0x7f0000400000).u32(48, 0);
  auto old = nv(0xC0384657, o.b, "", NvidiaVersion{575, 64, 5});
  EXPECT_EQ(old.status_name, "NV_OK");
  EXPECT_FALSE(old.fields.contains("flags2"));
  EXPECT_EQ(old.fields["dmaOffset"], 0x7f0000400000u);
  EXPECT_EQ(old.fields["length"], 0x200000u);
}

TEST(NvidiaIoctl, UnmapMemoryDmaLayoutBySize) {
  Image n(48);
  n.u64(32, 0x200000).u32(40, 0x33);
  EXPECT_EQ(nv(0xC0304658, n.b).status_name, "NV_ERR_INVALID_OBJECT_HANDLE");
  EXPECT_EQ(nv(0xC0304658, n.b).fields["size"], 0x200000u);
  Image o(40);
  o.u32(32, 0x57);
  EXPECT_EQ(nv(0xC0284658, o.b).status_name, "NV_ERR_OBJECT_NOT_FOUND");
}

TEST(NvidiaIoctl, ShortHeadGivesNoStatus) {
  // An RM_ALLOC of 48 bytes of which only 20 were copied (a fault mid-struct).
  std::string head = rm_alloc48(0x40, 0x51).b.substr(0, 20);
  auto d = nv(0xC030462B, head);
  EXPECT_EQ(d.request, "NV_ESC_RM_ALLOC");
  EXPECT_FALSE(d.status);
  EXPECT_EQ(d.status_name, "");
  EXPECT_FALSE(d.failed);
  EXPECT_EQ(d.fields["hClass"], 0x40u);
  EXPECT_FALSE(d.fields.contains("pAllocParms"));
  auto empty = nv(0xC020462A, "");
  EXPECT_EQ(empty.request, "NV_ESC_RM_CONTROL");
  EXPECT_FALSE(empty.control);
  EXPECT_TRUE(empty.fields.empty());
  // Short parameter block: only what it holds.
  Image params(40);
  auto m = nv(0xC030462B, rm_alloc48(0x40, 0).b, params.b);
  ASSERT_TRUE(m.object);
  EXPECT_FALSE(m.object->bytes);
  EXPECT_TRUE(m.fields.contains("attr"));
  EXPECT_FALSE(m.fields.contains("size"));
}

TEST(NvidiaIoctl, OsEscapes) {
  Image ev(16);
  ev.u32(0, 0xc1d00040).u32(4, 0x5c000001).u32(8, 17).u32(12, 0);
  auto d = nv(0xC01046CE, ev.b);
  EXPECT_EQ(d.request, "NV_ESC_ALLOC_OS_EVENT");
  EXPECT_EQ(d.fields["fd"], 17);
  EXPECT_EQ(d.status_name, "NV_OK");

  Image gpus(8);
  gpus.u32(0, 0x100).u32(4, 0x200);
  auto g = nv(0xC00846D4, gpus.b);
  EXPECT_EQ(g.request, "NV_ESC_ATTACH_GPUS_TO_FD");
  EXPECT_EQ(g.fields["gpu_ids"], nlohmann::json::array({0x100, 0x200}));

  auto cards = nv(0xC90046C8, std::string(256, '\0'));
  EXPECT_EQ(cards.request, "NV_ESC_CARD_INFO");
  EXPECT_EQ(cards.fields["count"], 32u);

  Image ver(72);
  ver.u32(0, 0x32).u32(4, 1).str(8, "580.159.04");
  auto v = nv(0xC04846D2, ver.b);
  EXPECT_EQ(v.request, "NV_ESC_CHECK_VERSION_STR");
  EXPECT_EQ(v.fields["versionString"], "580.159.04");

  EXPECT_EQ(nv(0xC23046D7, std::string(256, '\0')).request, "NV_ESC_NUMA_INFO");
  EXPECT_EQ(nv(0xC00846DA, std::string(8, '\0')).request, "NV_ESC_WAIT_OPEN_COMPLETE");
  EXPECT_EQ(nv(0xFC34465F, "").request, "NV_ESC_RM_LOCKLESS_DIAGNOSTIC");
  EXPECT_EQ(nv(0xC00446C9, Image(4).u32(0, 9).b).fields["ctl_fd"], 9);
}

TEST(NvidiaIoctl, UnknownEscapeAndForeignType) {
  EXPECT_EQ(nv(nv_cmd(0x99, 8), std::string(8, '\0')).request, "");
  EXPECT_EQ(nv(0xC0206D2A, rm_control(0x503C0104, 0).b).request, "") << "type 'm' is not an RM escape";
}

// ---- UVM ----

TEST(UvmIoctl, RegisterGpu) {
  Image a(40);
  for (int i = 0; i < 16; ++i) a.u8(i, uint8_t(0xa0 + i));
  a.u8(16, 1).u32(20, 0).u32(24, 9).u32(28, 0xc1d00040).u32(32, 0).u32(36, 0);
  auto d = uvm(37, a.b);
  EXPECT_EQ(d.request, "UVM_REGISTER_GPU");
  EXPECT_EQ(d.fields["gpu_uuid"], "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  EXPECT_EQ(d.fields["numaEnabled"], true);
  EXPECT_EQ(d.fields["rmCtrlFd"], 9);
  EXPECT_EQ(d.fields["hClient"], 0xc1d00040u);
  EXPECT_EQ(d.status_name, "NV_OK");
  EXPECT_FALSE(d.failed);
  EXPECT_FALSE(d.object);
}

TEST(UvmIoctl, MapExternalAllocationStatusFromAux) {
  Image head(24);
  head.u64(0, 0x7f4000000000).u64(8, 0x200000).u64(16, 0);
  Image tail(24);  // from gpuAttributesCount: count, rmCtrlFd, hClient, hMemory, rmStatus
  tail.u64(0, 1).u32(8, 9).u32(12, 0xc1d00040).u32(16, 0x5c000050).u32(20, 0x51);
  for (NvidiaVersion v : {kV580, kV545}) {
    auto d = uvm(33, head.b, tail.b, v);
    EXPECT_EQ(d.request, "UVM_MAP_EXTERNAL_ALLOCATION");
    EXPECT_EQ(d.fields["base"], 0x7f4000000000u);
    EXPECT_EQ(d.fields["length"], 0x200000u);
    EXPECT_EQ(d.fields["hMemory"], 0x5c000050u);
    EXPECT_EQ(d.fields["hClient"], 0xc1d00040u);
    EXPECT_EQ(d.fields["rmCtrlFd"], 9);
    EXPECT_EQ(d.fields["gpuAttributesCount"], 1u);
    EXPECT_EQ(d.status_name, "NV_ERR_NO_MEMORY");
    EXPECT_TRUE(d.failed);
  }
  auto no_aux = uvm(33, head.b);
  EXPECT_FALSE(no_aux.status);
  EXPECT_FALSE(no_aux.fields.contains("hMemory"));
}

TEST(UvmIoctl, FreeLostItsLengthIn590) {
  Image now(16);
  now.u64(0, 0x7f4000000000).u32(8, 0x1F);
  auto d = uvm(34, now.b, "", NvidiaVersion{590, 44, 1});
  EXPECT_EQ(d.request, "UVM_FREE");
  EXPECT_EQ(d.fields["base"], 0x7f4000000000u);
  EXPECT_FALSE(d.fields.contains("length"));
  EXPECT_EQ(d.status_name, "NV_ERR_INVALID_ARGUMENT");

  Image old(24);
  old.u64(0, 0x7f4000000000).u64(8, 0x200000).u32(16, 0);
  auto o = uvm(34, old.b, "", kV580);
  EXPECT_EQ(o.fields["length"], 0x200000u);
  EXPECT_EQ(o.status_name, "NV_OK");
  EXPECT_FALSE(o.failed);
}

TEST(UvmIoctl, InitializeAndOthers) {
  auto init = uvm(0x30000001, Image(16).u64(0, 0x4).u32(8, 0).b);
  EXPECT_EQ(init.request, "UVM_INITIALIZE");
  EXPECT_EQ(init.fields["flags"], 4u);
  EXPECT_EQ(init.status_name, "NV_OK");
  EXPECT_EQ(uvm(0x30000002, "").request, "UVM_DEINITIALIZE");
  EXPECT_EQ(uvm(75, Image(8).u32(0, 5).b).fields["uvmFd"], 5);
  EXPECT_EQ(uvm(0x1234, "").request, "");
  // A 20-byte struct has no 8-byte member: rmStatus is its last u32.
  EXPECT_EQ(uvm(38, Image(20).u32(16, 0x26).b).status_name, "NV_ERR_INVALID_DEVICE");
  auto range = uvm(73, Image(24).u64(0, 0x7f0000000000).u64(8, 0x400000).u32(16, 0).b);
  EXPECT_EQ(range.request, "UVM_CREATE_EXTERNAL_RANGE");
  EXPECT_EQ(range.fields["length"], 0x400000u);
  EXPECT_EQ(range.status, 0);
}

TEST(UvmIoctl, SetPreferredLocationStatusMovedIn550) {
  Image a(40);
  a.u64(0, 0x1000).u64(8, 0x2000).u32(32, 0x1F).u32(36, 0x22);
  EXPECT_EQ(uvm(42, a.b, "", NvidiaVersion{545, 29, 6}).status, 0x1F);
  auto now = uvm(42, a.b);
  EXPECT_EQ(now.status, 0x22);
  EXPECT_EQ(now.fields["preferredCpuNumaNode"], 0x1F);
}

// ---- KFD ----

TEST(KfdIoctl, GetVersion) {
  auto d = kfd(0x80084B01, Image(8).u32(0, 1).u32(4, 17).b);
  EXPECT_EQ(d.request, "AMDKFD_IOC_GET_VERSION");
  EXPECT_EQ(d.fields["major_version"], 1u);
  EXPECT_EQ(d.fields["minor_version"], 17u);
  EXPECT_FALSE(d.status);
  EXPECT_FALSE(d.failed);
}

Image create_queue(size_t size) {
  Image a(size);
  a.u64(0, 0x7f1000000000).u64(24, 0x1800).u32(32, 0x10000).u32(36, 0xa1b2).u32(40, 2).u32(44, 100);
  a.u32(48, 7).u32(52, 3).u64(64, 0x1000).u32(80, 0x5000);
  if (size >= 96) a.u32(88, 2);
  return a;
}

TEST(KfdIoctl, CreateQueue96And88) {
  auto d = kfd(0xC0604B02, create_queue(96).b);
  EXPECT_EQ(d.request, "AMDKFD_IOC_CREATE_QUEUE");
  EXPECT_EQ(d.fields["queue_type"], 2u);
  EXPECT_EQ(d.fields["queue_type_name"], "COMPUTE_AQL");
  EXPECT_EQ(d.fields["ring_size"], 0x10000u);
  EXPECT_EQ(d.fields["doorbell_offset"], 0x1800u);
  EXPECT_EQ(d.fields["queue_priority"], 7u);
  EXPECT_EQ(d.fields["ctx_save_restore_size"], 0x5000u);
  EXPECT_EQ(d.fields["sdma_engine_id"], 2u);
  ASSERT_TRUE(d.object);
  EXPECT_EQ(d.object->op, "alloc");
  EXPECT_EQ(d.object->kind, "queue");
  EXPECT_EQ(d.object->handle, 3u);
  EXPECT_EQ(d.object->parent, 0xa1b2u);
  EXPECT_EQ(d.object->flags, 2u);

  // The 88-byte struct (before KFD 1.17), even when more bytes follow in the copy.
  std::string longer = create_queue(88).b + std::string(8, '\x55');
  auto old = kfd(0xC0584B02, longer);
  EXPECT_EQ(old.request, "AMDKFD_IOC_CREATE_QUEUE");
  EXPECT_FALSE(old.fields.contains("sdma_engine_id"));
  EXPECT_EQ(old.fields["queue_id"], 3u);
  ASSERT_TRUE(old.object);
  EXPECT_EQ(old.object->handle, 3u);
}

TEST(KfdIoctl, AllocAndFreeMemory) {
  Image a(40);
  a.u64(0, 0x7f2000000000).u64(8, 0x400000).u64(16, 0xd00000001).u64(24, 0xabc000).u32(32, 0xa1b2);
  a.u32(36, 0x80000001u);
  auto d = kfd(0xC0284B16, a.b);
  EXPECT_EQ(d.request, "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU");
  EXPECT_EQ(d.fields["flag_names"], nlohmann::json::array({"VRAM", "WRITABLE"}));
  ASSERT_TRUE(d.object);
  EXPECT_EQ(d.object->kind, "memory");
  EXPECT_EQ(d.object->handle, 0xd00000001u);
  EXPECT_EQ(d.object->bytes, 0x400000u);
  EXPECT_EQ(d.object->flags, 0x80000001u);
  EXPECT_EQ(d.object->address, 0x7f2000000000u);
  EXPECT_EQ(d.object->parent, 0xa1b2u);

  auto failed = kfd(0xC0284B16, a.b, -12);
  EXPECT_TRUE(failed.failed);
  EXPECT_FALSE(failed.object);

  auto f = kfd(0x40084B17, Image(8).u64(0, 0xd00000001).b);
  EXPECT_EQ(f.request, "AMDKFD_IOC_FREE_MEMORY_OF_GPU");
  ASSERT_TRUE(f.object);
  EXPECT_EQ(f.object->op, "free");
  EXPECT_EQ(f.object->kind, "") << "a free names a handle; its kind is the allocation's";
  EXPECT_EQ(f.object->handle, 0xd00000001u);

  auto q = kfd(0xC0084B03, Image(8).u32(0, 3).b);
  ASSERT_TRUE(q.object);
  EXPECT_EQ(q.object->op, "free");
  EXPECT_EQ(q.object->kind, "queue");
  EXPECT_EQ(q.object->handle, 3u);
}

TEST(KfdIoctl, WaitEventsTimeoutIsNotFailure) {
  Image a(24);
  a.u64(0, 0x7ffe0000).u32(8, 2).u32(12, 1).u32(16, 1000).u32(20, 1);
  auto t = kfd(0xC0184B0C, a.b);
  EXPECT_EQ(t.request, "AMDKFD_IOC_WAIT_EVENTS");
  EXPECT_EQ(t.status, 1);
  EXPECT_EQ(t.status_name, "KFD_IOC_WAIT_RESULT_TIMEOUT");
  EXPECT_EQ(t.fields["timeout"], 1000u);
  EXPECT_FALSE(t.failed);
  a.u32(20, 2);
  auto f = kfd(0xC0184B0C, a.b);
  EXPECT_EQ(f.status_name, "KFD_IOC_WAIT_RESULT_FAIL");
  EXPECT_TRUE(f.failed);
}

TEST(KfdIoctl, NamesByNumberWhateverTheSize) {
  EXPECT_EQ(kfd(0x00004B27, "").request, "AMDKFD_IOC_CREATE_PROCESS");
  EXPECT_EQ(kfd(0xC0204B85, std::string(32, '\0')).request, "AMDKFD_IOC_PC_SAMPLE");
  EXPECT_EQ(kfd(kfd_cmd(3, 0x25, 16), std::string(16, '\0')).request, "AMDKFD_IOC_RUNTIME_ENABLE");
  EXPECT_EQ(kfd(0x81904B06, std::string(256, '\0')).request, "AMDKFD_IOC_GET_PROCESS_APERTURES");
  EXPECT_EQ(kfd(0xC0184B20, Image(24).u64(8, 0x1000).u32(20, 2).b).fields["nattr"], 2u);
  EXPECT_EQ(kfd(kfd_cmd(1, 0x15, 8), Image(8).u32(0, 7).u32(4, 0xa1b2).b).fields["drm_fd"], 7);
  EXPECT_EQ(kfd(0xC0FF4B7F, "").request, "");
  EXPECT_TRUE(kfd(0x80084B01, "", -25).failed);
}

// ---- Other drivers, rules, versions, names ----

TEST(DriverIoctl, OtherDriverOnlyReturnValue) {
  auto d = decode(GPUOBS_DRV_OTHER, 0xC030462B, rm_alloc48(0x40, 0x51).b, "", kV580, -22);
  EXPECT_EQ(d.request, "");
  EXPECT_TRUE(d.fields.is_object());
  EXPECT_TRUE(d.fields.empty());
  EXPECT_TRUE(d.failed);
  EXPECT_FALSE(decode(GPUOBS_DRV_OTHER, 1, "", "", kV580, 0).failed);
}

TEST(DriverIoctl, RulesAt580) {
  auto rules = ioctl_rules(kV580);
  std::set<std::pair<uint32_t, uint32_t>> keys;
  for (const auto& e : rules) EXPECT_TRUE(keys.insert({e.key.driver, e.key.cmd_key}).second) << e.key.cmd_key;

  const auto* alloc = find_rule(rules, GPUOBS_DRV_NVIDIA, 0x462B);
  ASSERT_TRUE(alloc);
  EXPECT_EQ(alloc->head_len, 0);
  EXPECT_EQ(alloc->aux_mode, GPUOBS_IOCTL_AUX_PTR);
  EXPECT_EQ(alloc->aux_off, 16);
  EXPECT_EQ(alloc->aux_len, 256);
  EXPECT_EQ(alloc->aux_len_field, 0);

  const auto* xfer = find_rule(rules, GPUOBS_DRV_NVIDIA, 0x46D3);
  ASSERT_TRUE(xfer);
  EXPECT_EQ(xfer->head_len, 16);
  EXPECT_EQ(xfer->aux_mode, GPUOBS_IOCTL_AUX_PTR);
  EXPECT_EQ(xfer->aux_off, 8);
  EXPECT_EQ(xfer->aux_len, 256);
  EXPECT_EQ(xfer->aux_len_field, 5);

  const auto* map = find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 33);
  ASSERT_TRUE(map);
  EXPECT_EQ(map->head_len, 24);
  EXPECT_EQ(map->aux_mode, GPUOBS_IOCTL_AUX_ARG);
  EXPECT_EQ(map->aux_off, 9240);
  EXPECT_EQ(map->aux_len, 24);

  const auto* sema = find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 68);
  ASSERT_TRUE(sema);
  EXPECT_EQ(sema->aux_off, 9232);
  EXPECT_EQ(sema->aux_len, 16);

  ASSERT_TRUE(find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 34));
  EXPECT_EQ(find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 34)->head_len, 24) << "580 still has UVM_FREE.length";
  ASSERT_TRUE(find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 0x30000001));
  EXPECT_EQ(find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 0x30000001)->head_len, 16);
  EXPECT_EQ(find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 37)->head_len, 40);
  EXPECT_EQ(find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 37)->aux_mode, GPUOBS_IOCTL_AUX_NONE);
  EXPECT_FALSE(find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 0x30000002)) << "no params";
  EXPECT_FALSE(find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 1)) << "not routed";
  EXPECT_FALSE(find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 40)) << "272 bytes: past the head";
  EXPECT_FALSE(find_rule(rules, GPUOBS_DRV_NVIDIA, 0x462A)) << "the default copy is enough";
  for (const auto& e : rules) {
    EXPECT_LE(e.rule.head_len, GPUOBS_IOCTL_HEAD_MAX);
    EXPECT_LE(e.rule.aux_len, GPUOBS_IOCTL_AUX_MAX);
    EXPECT_NE(e.key.driver, uint32_t(GPUOBS_DRV_KFD));
  }
}

TEST(DriverIoctl, RulesAt545AndNewest) {
  auto rules = ioctl_rules(kV545);
  const auto* map = find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 33);
  ASSERT_TRUE(map);
  EXPECT_EQ(map->head_len, 24);
  EXPECT_EQ(map->aux_off, 1176);
  EXPECT_EQ(map->aux_len, 24);
  EXPECT_EQ(find_rule(rules, GPUOBS_DRV_NVIDIA_UVM, 68)->aux_off, 1168);
  EXPECT_EQ(find_rule(rules, GPUOBS_DRV_NVIDIA, 0x462B)->aux_off, 16);
  EXPECT_EQ(find_rule(ioctl_rules(NvidiaVersion{}), GPUOBS_DRV_NVIDIA_UVM, 34)->head_len, 16);
}

TEST(DriverIoctl, ParseNvidiaVersion) {
  auto v = parse_nvidia_version(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
      "(dvs-builder@U22-I3-AF03-09-1)  Fri Oct 10 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
  EXPECT_EQ(v.major, 580);
  EXPECT_EQ(v.minor, 159);
  EXPECT_EQ(v.patch, 4);
  EXPECT_TRUE(v.known());
  auto bare = parse_nvidia_version("550.40.07");
  EXPECT_EQ(bare.major, 550);
  EXPECT_EQ(bare.minor, 40);
  EXPECT_EQ(bare.patch, 7);
  auto two = parse_nvidia_version("390.157");
  EXPECT_EQ(two.major, 390);
  EXPECT_EQ(two.minor, 157);
  EXPECT_EQ(two.patch, 0);
  auto garbage = parse_nvidia_version("no driver here, x86_64 only, v1 build-2.x");
  EXPECT_FALSE(garbage.known());
  EXPECT_EQ(garbage.minor, 0);
  EXPECT_FALSE(parse_nvidia_version("").known());
}

TEST(DriverIoctl, VersionAtLeast) {
  EXPECT_TRUE(NvidiaVersion{}.at_least(999, 0, 0));
  EXPECT_TRUE(kV580.at_least(580, 65, 6));
  EXPECT_FALSE(kV580.at_least(590, 44, 1));
  EXPECT_TRUE((NvidiaVersion{550, 40, 53}).at_least(550, 40, 53));
  EXPECT_FALSE((NvidiaVersion{550, 40, 7}).at_least(550, 40, 53));
}

TEST(DriverIoctl, DriverNamesAndKeys) {
  EXPECT_EQ(driver_from_name("nvidia"), uint32_t(GPUOBS_DRV_NVIDIA));
  EXPECT_EQ(driver_from_name("nvidiactl"), uint32_t(GPUOBS_DRV_NVIDIA));
  EXPECT_EQ(driver_from_name("nvidia-modeset"), uint32_t(GPUOBS_DRV_NVIDIA));
  EXPECT_EQ(driver_from_name("nvidia-uvm"), uint32_t(GPUOBS_DRV_NVIDIA_UVM));
  EXPECT_EQ(driver_from_name("nvidia-uvm-tools"), uint32_t(GPUOBS_DRV_NVIDIA_UVM));
  EXPECT_EQ(driver_from_name("kfd"), uint32_t(GPUOBS_DRV_KFD));
  EXPECT_EQ(driver_from_name("nvidia-caps"), uint32_t(GPUOBS_DRV_OTHER));
  EXPECT_EQ(driver_from_name(""), uint32_t(GPUOBS_DRV_OTHER));
  EXPECT_EQ(driver_name(GPUOBS_DRV_NVIDIA), "nvidia");
  EXPECT_EQ(driver_name(GPUOBS_DRV_NVIDIA_UVM), "nvidia-uvm");
  EXPECT_EQ(driver_name(GPUOBS_DRV_KFD), "kfd");
  EXPECT_EQ(driver_name(GPUOBS_DRV_OTHER), "other");
  EXPECT_EQ(driver_name(77), "other");
  EXPECT_EQ(ioctl_cmd_key(GPUOBS_DRV_NVIDIA, 0xC030462B), 0x462Bu);
  EXPECT_EQ(ioctl_cmd_key(GPUOBS_DRV_KFD, 0xC0604B02), 0x4B02u);
  EXPECT_EQ(ioctl_cmd_key(GPUOBS_DRV_NVIDIA_UVM, 0x30000001), 0x30000001u);
  EXPECT_EQ(ioctl_cmd_key(GPUOBS_DRV_OTHER, 0xC0104601), 0xC0104601u);
}
