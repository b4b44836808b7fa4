// The part of NVML's C API gpuobs calls, declared from its documented
// prototypes and layouts (nvml.h of the r580 driver, NVML API version 13;
// docs/gpu_metrics.md lists each). gpuobs never links NVML: nvml_library
// resolves these names with dlsym, so the types here are all it needs.
#pragma once

#include <cstdint>

namespace gpuobs::gpumetrics::nvml {

using Return = int;  // nvmlReturn_t
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorTimeout = 10;
inline constexpr Return kErrorFunctionNotFound = 13;  // also what gpuobs reports for a symbol it could not find

using Device = struct DeviceOpaque*;      // nvmlDevice_t
using EventSet = struct EventSetOpaque*;  // nvmlEventSet_t
using GpmSample = struct GpmSampleOpaque*;

struct PciInfo {  // nvmlPciInfo_t
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
static_assert(sizeof(PciInfo) == 68);

struct Utilization {  // nvmlUtilization_t
  unsigned int gpu, memory;
};

struct Memory {  // nvmlMemory_t (v1)
  unsigned long long total, free, used;
};

struct MemoryV2 {        // nvmlMemory_v2_t: `used` without the memory the driver reserves (nvidia-smi's "used")
  unsigned int version;  // kMemoryV2Version
  unsigned long long total, reserved, free, used;
};
static_assert(sizeof(MemoryV2) == 40);
// NVML_STRUCT_VERSION(Memory, 2): the struct's size with the version in the top byte.
inline constexpr unsigned int kMemoryV2Version = sizeof(MemoryV2) | (2u << 24);

struct ProcessUtilizationSample {  // nvmlProcessUtilizationSample_t
  unsigned int pid;
  unsigned long long timestamp_us;
  unsigned int sm_util, mem_util, enc_util, dec_util;
};
static_assert(sizeof(ProcessUtilizationSample) == 32);

struct ProcessInfo {  // nvmlProcessInfo_t (the _v2/_v3 layout)
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
static_assert(sizeof(ProcessInfo) == 24);

struct EventData {  // nvmlEventData_t
  Device device;
  unsigned long long event_type, event_data;
  unsigned int gpu_instance_id, compute_instance_id;
};
static_assert(sizeof(EventData) == 32);

inline constexpr unsigned long long kEventSingleBitEcc = 0x1, kEventDoubleBitEcc = 0x2, kEventXid = 0x8;
inline constexpr unsigned long long kValueNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE

struct GpmSupport {      // nvmlGpmSupport_t
  unsigned int version;  // kGpmSupportVersion
  unsigned int is_supported;
};
inline constexpr unsigned int kGpmSupportVersion = 1;

struct GpmMetric {  // nvmlGpmMetric_t
  unsigned int metric_id;
  Return result;
  double value;
  struct {
    char *short_name, *long_name, *unit;
  } info;
};
static_assert(sizeof(GpmMetric) == 40);

// nvmlGpmMetricsGet_t with room for the metrics gpuobs asks for: NVML reads
// num_metrics entries, so the array may be shorter than the header's
// NVML_GPM_METRIC_MAX (which grows with each release).
inline constexpr unsigned int kGpmMetricsGetVersion = 1;
inline constexpr unsigned int kGpmMaxAsked = 32;
struct GpmMetricsGet {
  unsigned int version;
  unsigned int num_metrics;
  GpmSample sample1, sample2;
  GpmMetric metrics[kGpmMaxAsked];
};

// nvmlClockType_t, nvmlTemperatureSensors_t, nvmlMemoryErrorType_t, nvmlEccCounterType_t
inline constexpr int kClockSm = 1, kClockMem = 2;
inline constexpr int kTemperatureGpu = 0;
inline constexpr int kEccCorrected = 0, kEccUncorrected = 1, kEccVolatile = 0;

// nvmlGpmMetricId_t values gpuobs asks for.
inline constexpr unsigned int kGpmGraphicsUtil = 1, kGpmSmUtil = 2, kGpmSmOccupancy = 3, kGpmIntegerUtil = 4,
                              kGpmAnyTensorUtil = 5, kGpmDfmaTensorUtil = 6, kGpmHmmaTensorUtil = 7,
                              kGpmImmaTensorUtil = 9, kGpmDramBwUtil = 10, kGpmFp64Util = 11, kGpmFp32Util = 12,
                              kGpmFp16Util = 13, kGpmPcieTxPerSec = 20, kGpmPcieRxPerSec = 21,
                              kGpmNvlinkTotalRxPerSec = 60, kGpmNvlinkTotalTxPerSec = 61;

}  // namespace gpuobs::gpumetrics::nvml
