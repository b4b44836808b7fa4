// The CUDA, HIP and NCCL argument decoders: the API tables (userspace/catalogue/
// cuda_api.cpp, hip_api.cpp, nccl_api.cpp; NCCL calls through decode/
// nccl_record.cpp and store/nccl_rows.cpp), the decoder that turns each call's raw
// registers, out-value and blob into typed records (userspace/decode/
// api_record.cpp) and the writer that binds them (userspace/store/api_rows.cpp:
// CUlaunchConfig, CUDA_MEMCPY2D/3D, dim3 pairs, kernel names and their
// demangling, allocation tracking) and the compact launch rows (decode/
// launch_record.cpp, store/launch_rows.cpp: shapes, names, time keys), into an in-memory capture with the real
// schema. Input: a sequence of records (tests/fuzz/README.md), each
//   u8 op (0 API call, 1 launch record, 2 process exit), u16 api, u8 process,
//   u32 flags, u64 args[8], s64 ret, u64 duration_ns, u64 out_value,
//   u16 blob_len, then blob_len bytes (at most GPUOBS_BLOB_MAX).
// Besides ASan/UBSan, checks that every call of a known API is stored: an
// insert that fails (a constraint, a bad bind) would lose the row.
#include <sqlite3.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "catalogue/api_spec.h"
#include "decode/decoder.h"
#include "decode/launch_record.h"
#include "events.h"
#include "store/api_rows.h"
#include "store/db.h"
#include "store/launch_rows.h"
#include "store/nccl_rows.h"
#include "store/schema.h"
#include "store/string_table.h"

namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  bool take(void* out, size_t len) {
    if (n < len) return false;
    std::memcpy(out, p, len);
    p += len;
    n -= len;
    return true;
  }
};

void check(bool ok) {
  if (!ok) std::abort();
}

struct Capture {
  gpuobs::Db db;
  gpuobs::ApiRowWriter rows;
  gpuobs::StringTable strings;
  gpuobs::LaunchRowWriter launches;
  gpuobs::NcclRowWriter nccl;
  Capture() {
    auto d = gpuobs::Db::open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    check(bool(d));
    db = std::move(*d);
    check(bool(gpuobs::migrate(db)));
    check(bool(rows.prepare(db.get())));
    check(bool(strings.prepare(db.get())));
    check(bool(nccl.prepare(db.get(), &strings)));
    check(
        bool(launches.prepare(db.get(), &strings, [this](int64_t pid, uint64_t fn) { return rows.name_of(pid, fn); })));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Capture cap;  // the schema once; each input runs in a transaction rolled back at the end
  check(bool(cap.db.exec("BEGIN")));
  Reader in{data, size};
  for (;;) {
    uint8_t op, process;
    uint16_t api, blob_len;
    uint32_t flags;
    uint64_t args[8], duration, out_value;
    int64_t ret;
    if (!in.take(&op, 1) || !in.take(&api, 2) || !in.take(&process, 1) || !in.take(&flags, 4) ||
        !in.take(args, sizeof args) || !in.take(&ret, 8) || !in.take(&duration, 8) || !in.take(&out_value, 8) ||
        !in.take(&blob_len, 2))
      break;
    int64_t pid = process % 4 + 1;
    gpuobs_hdr hdr{};
    hdr.ts_ns = duration ^ out_value;
    hdr.tgid = hdr.tid = static_cast<uint32_t>(pid) + 100;
    bool known = gpuobs::api_by_id(api) != nullptr;
    switch (op % 3) {
      case 0: {
        gpuobs::ApiCallEvent e{};
        e.hdr = hdr;
        e.hdr.type = GPUOBS_EV_API_CALL;
        std::memcpy(e.args, args, sizeof args);
        e.ret = ret;
        e.duration_ns = duration;
        e.out_value = out_value;
        e.api = api;
        e.flags = flags;
        size_t n = std::min<size_t>({blob_len, in.n, GPUOBS_BLOB_MAX});
        e.blob.assign(reinterpret_cast<const char*>(in.p), n);
        in.p += n;
        in.n -= n;
        const gpuobs::ApiSpec* s = gpuobs::api_by_id(api);
        e.blob_kind = s ? s->blob_kind : 0;
        if (s && s->family == gpuobs::Family::launch) {
          check(cap.launches.add(gpuobs::decode_launch(e, *s), e.hdr.ts_ns, pid, e.hdr.tgid, e.hdr.tid, 0) ==
                SQLITE_DONE);
          break;
        }
        if (s && s->family == gpuobs::Family::collective) {
          check(cap.nccl.write_call(e, *s, pid, 0) == SQLITE_DONE);
          break;
        }
        int rc = cap.rows.write_call(e, pid);
        check(known ? rc == SQLITE_DONE : rc == SQLITE_MISMATCH);
        if (s && s->family == gpuobs::Family::module) cap.launches.forget_names(pid);
        break;
      }
      case 1: {
        gpuobs_launch l{};
        l.hdr = hdr;
        l.hdr.type = GPUOBS_EV_LAUNCH;
        l.function = args[0];
        l.stream = args[1];
        l.kernel_params = args[2];
        l.extra = args[3];
        uint32_t dims[8];
        std::memcpy(dims, &args[4], sizeof dims);
        l.grid_x = dims[0], l.grid_y = dims[1], l.grid_z = dims[2];
        l.block_x = dims[3], l.block_y = dims[4], l.block_z = dims[5];
        l.shared_mem_bytes = dims[6];
        l.api = api;
        l.flags = flags;
        check(cap.launches.add(gpuobs::decode_launch(l), l.hdr.ts_ns, pid, l.hdr.tgid, l.hdr.tid, 0) == SQLITE_DONE);
        break;
      }
      case 2: cap.rows.forget_process(pid); break;
    }
  }
  uint64_t failed = 0;  // a ninth launch of one nanosecond is counted, not an error
  check(cap.launches.flush(&failed) == SQLITE_DONE);
  check(bool(cap.db.exec("ROLLBACK")));
  check(bool(cap.strings.reload()));  // what the rolled-back input interned is gone
  check(bool(cap.launches.rolled_back()));
  for (int64_t pid = 1; pid <= 4; ++pid) cap.rows.forget_process(pid);
  cap.rows.forget_allocations();
  return 0;
}
