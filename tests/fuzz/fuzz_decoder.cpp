// The event decoder (userspace/decode/decoder.cpp) on any bytes a ring record
// could hold: every record type, the stack trailer, the --unwind dwarf stack
// copy and the API call's variable-size blob. Besides ASan/UBSan, checks the
// bounds a consumer relies on: nothing decoded is larger than the wire format
// allows, and every record is either decoded or counted as rejected.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "decode/decoder.h"
#include "events.h"

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuobs::Decoder d;
  gpuobs::RawStack stack;
  gpuobs::Event ev = d.decode(data, size, &stack);
  const gpuobs::DecodeStats& s = d.stats();
  uint64_t rejected = s.short_records + s.unknown_types + s.size_mismatch + s.gpu_trace_rejected;
  check(s.decoded + rejected == 1);
  check(std::holds_alternative<std::monostate>(ev) == (rejected == 1));
  check(stack.ips.size() <= GPUOBS_STACK_MAX);
  check(stack.copy.size() <= GPUOBS_STACK_COPY_MAX);
  if (auto* io = std::get_if<gpuobs::IoctlEvent>(&ev)) {
    check(io->head.size() <= GPUOBS_IOCTL_HEAD_MAX && io->aux.size() <= GPUOBS_IOCTL_AUX_MAX);
  } else if (auto* api = std::get_if<gpuobs::ApiCallEvent>(&ev)) {
    check(api->blob.size() <= GPUOBS_BLOB_MAX);
    check(gpuobs::blob_string(*api).size() <= api->blob.size());
  } else if (auto* p = std::get_if<gpuobs::ProcEvent>(&ev)) {
    check(p->comm.size() <= GPUOBS_COMM_LEN && p->filename.size() <= GPUOBS_PATH_LEN);
  } else if (auto* j = std::get_if<gpuobs::GpuJobEvent>(&ev)) {
    check(j->ring.size() <= GPUOBS_GPU_TRACE_RAW_MAX && j->device.size() <= GPUOBS_GPU_TRACE_RAW_MAX);
  }
  // The same record without a stack sink decodes the same way.
  gpuobs::Decoder d2;
  check(d2.decode(data, size).index() == ev.index());
  return 0;
}
