// NVIDIA resource-manager escapes (ioctls on /dev/nvidiactl and /dev/nvidiaN):
// the numbers the copy rules (catalogue/ioctl_rules.cpp) and the decoder
// (decode/nvidia_ioctl.cpp) share. Numbers: docs/reference/abi-reference.md §1.
#pragma once

#include <cstdint>

namespace gpuobs::nv {

constexpr uint32_t kNvIoctlMagic = 'F';  // 0x46

// Escapes by _IOC_NR (§1.3): the driver validates the number, and checks the
// size against one or several structs, so the size never names the request.
enum EscapeNr : uint32_t {
  kRmAllocMemory = 0x27,
  kRmFree = 0x29,
  kRmControl = 0x2A,
  kRmAlloc = 0x2B,
  kRmDupObject = 0x34,
  kRmShare = 0x35,
  kRmVidHeapControl = 0x4A,
  kRmMapMemory = 0x4E,
  kRmUnmapMemory = 0x4F,
  kRmMapMemoryDma = 0x57,
  kRmUnmapMemoryDma = 0x58,
  kRmUpdateDeviceMappingInfo = 0x5E,
  kCardInfo = 0xC8,
  kRegisterFd = 0xC9,
  kAllocOsEvent = 0xCE,
  kFreeOsEvent = 0xCF,
  kCheckVersionStr = 0xD2,
  kIoctlXferCmd = 0xD3,
  kAttachGpusToFd = 0xD4,
  kSysParams = 0xD6,
  kWaitOpenComplete = 0xDA,
};

}  // namespace gpuobs::nv
