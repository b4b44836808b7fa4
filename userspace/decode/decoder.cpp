#include "decode/decoder.h"

#include <algorithm>

#include <cstddef>
#include <cstring>
#include <optional>

namespace gpuobs {
namespace {

std::string bounded_string(const __u8* p, size_t cap) {
  size_t n = 0;
  while (n < cap && p[n]) ++n;
  return std::string(reinterpret_cast<const char*>(p), n);
}

// The stack at the end of an event record (bpf/events.h): trailer, frames
// and, with --unwind dwarf, the stack copy before them. Returns where the
// stack area starts (the end of the record's own fields), or nullopt if it
// does not fit after `body` bytes.
std::optional<size_t> read_stack(const char* rec, size_t size, size_t body, RawStack* out) {
  gpuobs_stack_trailer t;
  if (size < body + sizeof t) return std::nullopt;
  std::memcpy(&t, rec + size - sizeof t, sizeof t);
  // Python frames sit between ips and the trailer (bpf/events.h).
  gpuobs_py_trailer pt{};
  size_t py_bytes = 0;
  if (t.flags & GPUOBS_STACK_F_PYTHON) {
    if (size < body + sizeof t + sizeof pt) return std::nullopt;
    std::memcpy(&pt, rec + size - sizeof t - sizeof pt, sizeof pt);
    if (pt.n > GPUOBS_PY_FRAMES_MAX) return std::nullopt;
    py_bytes = sizeof pt + size_t{pt.n} * sizeof(gpuobs_py_frame);
  }
  if (t.cap > GPUOBS_STACK_MAX || t.nr > t.cap || size < body + sizeof t + py_bytes + size_t{t.cap} * 8)
    return std::nullopt;
  size_t ips = size - sizeof t - py_bytes - size_t{t.cap} * 8;
  size_t start = ips;
  gpuobs_stack_copy_hdr ch{};
  gpuobs_stack_regs regs{};
  if (t.flags & GPUOBS_STACK_F_COPY) {
    if (ips < body + sizeof ch) return std::nullopt;
    std::memcpy(&ch, rec + ips - sizeof ch, sizeof ch);
    if (ch.cap > GPUOBS_STACK_COPY_MAX || ch.len > ch.cap || ips - sizeof ch < body + ch.cap + sizeof regs)
      return std::nullopt;
    start = ips - sizeof ch - ch.cap - sizeof regs;
    std::memcpy(&regs, rec + start, sizeof regs);
  }
  if (out) {
    out->present = t.cap > 0 || (t.flags & (GPUOBS_STACK_F_COPY | GPUOBS_STACK_F_ASKED));
    out->flags = t.flags;
    out->sp_word = t.sp_word;
    out->ips.resize(t.nr);
    if (t.nr) std::memcpy(out->ips.data(), rec + ips, size_t{t.nr} * 8);
    out->has_copy = t.flags & GPUOBS_STACK_F_COPY;
    out->ip = regs.ip;
    out->sp = regs.sp;
    out->bp = regs.bp;
    out->copy.assign(rec + start + sizeof regs, ch.len);
    out->py.resize(pt.n);
    if (pt.n) std::memcpy(out->py.data(), rec + ips + size_t{t.cap} * 8, size_t{pt.n} * sizeof(gpuobs_py_frame));
    out->py_status = pt.status;
    out->py_thread = pt.thread;
  }
  return start;
}

}  // namespace

std::string blob_string(const ApiCallEvent& e) {
  size_t n = e.blob.find('\0');
  return e.blob.substr(0, n);
}

Event Decoder::decode(const void* data, size_t size, RawStack* stack) {
  const char* rec = static_cast<const char*>(data);
  if (stack) {  // reset in place: a reused RawStack keeps its buffers (no allocation per record)
    stack->ips.clear();
    stack->copy.clear();
    stack->py.clear();
    stack->py_status = 0;
    stack->py_thread = GPUOBS_PY_T_CALLING;
    stack->flags = 0;
    stack->sp_word = 0;
    stack->present = stack->has_copy = false;
    stack->ip = stack->sp = stack->bp = 0;
  }
  gpuobs_hdr hdr;
  if (size < sizeof hdr) {
    ++stats_.short_records;
    return {};
  }
  std::memcpy(&hdr, data, sizeof hdr);
  // The BPF ring rounds records up to 8 bytes; the header carries the exact size.
  if (hdr.size > size) {
    ++stats_.size_mismatch;
    return {};
  }

  auto need = [&](size_t want) {
    if (hdr.size < want) {
      ++stats_.short_records;
      return false;
    }
    return true;
  };
  switch (hdr.type) {
    case GPUOBS_EV_LAUNCH: {
      if (!need(sizeof(gpuobs_launch))) return {};
      if (!read_stack(rec, hdr.size, sizeof(gpuobs_launch), stack)) ++stats_.bad_stacks;
      gpuobs_launch e;
      std::memcpy(&e, data, sizeof e);
      ++stats_.decoded;
      return e;
    }
    case GPUOBS_EV_IOCTL: {
      if (!need(sizeof(gpuobs_ioctl))) return {};
      if (!read_stack(rec, hdr.size, sizeof(gpuobs_ioctl), stack)) ++stats_.bad_stacks;
      gpuobs_ioctl raw;
      std::memcpy(&raw, data, sizeof raw);
      IoctlEvent e{raw.hdr,       raw.latency_ns, raw.arg,    raw.ret,   raw.cmd, raw.dev_major,
                   raw.dev_minor, raw.fd,         raw.driver, raw.flags, {},      {}};
      e.head.assign(reinterpret_cast<const char*>(raw.head), std::min<size_t>(raw.head_len, sizeof raw.head));
      e.aux.assign(reinterpret_cast<const char*>(raw.aux), std::min<size_t>(raw.aux_len, sizeof raw.aux));
      ++stats_.decoded;
      return e;
    }
    case GPUOBS_EV_LIB_MAP: {
      if (!need(sizeof(gpuobs_lib_map))) return {};
      gpuobs_lib_map raw;
      std::memcpy(&raw, data, sizeof raw);
      ProcEvent e{hdr.type,
                  hdr,
                  raw.start_boottime_ns,
                  raw.ppid,
                  0,
                  bounded_string(raw.comm, sizeof raw.comm),
                  bounded_string(raw.filename, sizeof raw.filename)};
      e.hold = raw.hold;
      e.lib_kdev = raw.kdev;
      e.lib_ino = raw.ino;
      ++stats_.decoded;
      return e;
    }
    case GPUOBS_EV_PROC_FORK:
    case GPUOBS_EV_PROC_EXEC:
    case GPUOBS_EV_PROC_EXIT: {
      if (!need(sizeof(gpuobs_proc))) return {};
      gpuobs_proc raw;
      std::memcpy(&raw, data, sizeof raw);
      ProcEvent e{hdr.type,
                  hdr,
                  raw.start_boottime_ns,
                  raw.ppid,
                  raw.exit_code,
                  bounded_string(raw.comm, sizeof raw.comm),
                  bounded_string(raw.filename, sizeof raw.filename)};
      ++stats_.decoded;
      return e;
    }
    case GPUOBS_EV_GPU_JOB:
    case GPUOBS_EV_FENCE_SIGNAL: {
      if (!need(sizeof(gpuobs_gpu_trace))) return {};
      gpuobs_gpu_trace raw;
      std::memcpy(&raw, data, sizeof raw);
      // The type and the event must agree: a fence record is never a job's.
      if ((hdr.type == GPUOBS_EV_FENCE_SIGNAL) != (raw.event == GPUOBS_GPU_TP_FENCE)) {
        gpu_error_ = "record type " + std::to_string(hdr.type) + " with event " + std::to_string(raw.event);
        ++stats_.gpu_trace_rejected;
        return {};
      }
      auto e = decode_gpu_trace(gpu_formats_, raw);
      if (!e) {
        gpu_error_ = e.error().message;
        ++stats_.gpu_trace_rejected;
        return {};
      }
      if (e->strings_cut) ++stats_.gpu_trace_strings_cut;
      ++stats_.decoded;
      return std::move(*e);
    }
    case GPUOBS_EV_API_CALL: {
      // The fixed part: everything before the variable-length blob.
      constexpr size_t kFixed = offsetof(gpuobs_api_call, blob);
      if (!need(kFixed)) return {};
      gpuobs_api_call raw;
      std::memcpy(&raw, data, kFixed);
      size_t body = hdr.size;  // where the stack area starts
      if (auto b = read_stack(rec, hdr.size, kFixed, stack)) body = *b;
      else ++stats_.bad_stacks;
      if (raw.blob_len > body - kFixed || raw.blob_len > GPUOBS_BLOB_MAX) {
        ++stats_.size_mismatch;
        return {};
      }
      ApiCallEvent e{hdr, {}, raw.ret, raw.duration_ns, raw.out_value, raw.api, raw.flags, raw.blob_kind, {}};
      std::memcpy(e.args, raw.args, sizeof e.args);
      e.blob.assign(static_cast<const char*>(data) + kFixed, raw.blob_len);
      ++stats_.decoded;
      return e;
    }
  }
  ++stats_.unknown_types;
  return {};
}

}  // namespace gpuobs
