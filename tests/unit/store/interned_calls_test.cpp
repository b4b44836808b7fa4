// The interned call tables (schema 14, issue 17): the call rows hold their
// text as ids into `strings` and the documented views show it; a repeated
// kernel lookup adds a gpu_modules row but no kernel_names row; a rolled-back
// batch and a rotated segment write the name again; the bytes per copy and
// per kernel lookup stay under a bound; a schema-12 capture reads the same
// before and after `gpuobs upgrade`; a broken id is reported by `gpuobs check`.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "catalogue/api_spec.h"
#include "events.h"
#include "store/api_rows.h"
#include "store/schema.h"
#include "store/string_table.h"
#include "store/writer.h"
#include "test_util.h"
#include "writer_fixtures.h"

using namespace gpuobs;
using gpuobs::testing::fork_of;
using gpuobs::testing::gpuobs_cli;
using gpuobs::testing::kT0;
using gpuobs::testing::new_writer;
using gpuobs::testing::scalar;
using gpuobs::testing::TempDir;
using gpuobs::testing::text;

namespace {

// One CUDA call as the ring delivers it: returned, out-value read.
ApiCallEvent call(std::string_view symbol, uint32_t tgid, uint64_t ts, std::initializer_list<uint64_t> args,
                  uint64_t out = 0, std::string blob = {}) {
  ApiCallEvent e{};
  e.hdr = {GPUOBS_EV_API_CALL, 0, ts, tgid, tgid};
  for (const ApiSpec& s : cuda_api_table())
    if (s.symbol == symbol) e.api = s.id, e.blob_kind = s.blob_kind;
  EXPECT_NE(e.api, 0) << symbol;
  size_t i = 0;
  for (uint64_t a : args) e.args[i++] = a;
  e.out_value = out;
  e.duration_ns = 100;
  e.flags = GPUOBS_CALL_F_RETURNED | GPUOBS_CALL_F_OUT_READ;
  if (!blob.empty()) e.blob = blob + '\0';
  return e;
}

ApiCallEvent get_function(uint32_t tgid, uint64_t ts, uint64_t fn, const std::string& mangled) {
  return call("cuModuleGetFunction", tgid, ts, {0x7000, 0x3d, 0x7100}, fn, mangled);
}

gpuobs_launch launch(uint32_t tgid, uint64_t ts, uint64_t fn) {
  gpuobs_launch l{};
  l.hdr = {GPUOBS_EV_LAUNCH, sizeof l, ts, tgid, tgid};
  l.function = fn;
  l.grid_x = l.grid_y = l.grid_z = 1;
  l.block_x = l.block_y = l.block_z = 1;
  l.api = 1;
  return l;
}

// Every row of a table or view, every column, as text ("NULL" for NULL).
std::string dump(Db& db, const std::string& table, const std::string& order = "id") {
  Stmt st(db.get(), "SELECT * FROM " + table + " ORDER BY " + order);
  EXPECT_TRUE(st.valid()) << table << ": " << db.errmsg();
  std::string out;
  while (st.step() == SQLITE_ROW) {
    for (int c = 0; c < sqlite3_column_count(st.get()); ++c) {
      auto* t = sqlite3_column_text(st.get(), c);
      out += (c ? "," : "") + (t ? std::string(reinterpret_cast<const char*>(t)) : std::string("NULL"));
    }
    out += "\n";
  }
  return out;
}

int64_t file_bytes(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_size;
}

}  // namespace

TEST(InternedCalls, TextIsStoredOnceAndTheViewsShowIt) {
  TempDir dir;
  auto path = dir.file("t.gpuobs");
  auto w = new_writer(path);
  w->start();
  w->push(fork_of(100, kT0 + 1));
  for (uint64_t i = 0; i < 100; ++i) {
    w->push(call("cuMemcpyHtoDAsync_v2", 100, kT0 + 10 + 4 * i, {0xd000 + i, 0x5000, 64, 0x5a}));
    w->push(call("cuMemsetD32Async", 100, kT0 + 11 + 4 * i, {0xd000, 7, 16, 0x5a}));
    w->push(call("cuStreamSynchronize", 100, kT0 + 12 + 4 * i, {0x5a}));
    w->push(call("cuEventRecord", 100, kT0 + 13 + 4 * i, {0xe1, 0x5a}));
  }
  w->stop();
  ASSERT_TRUE(w->write_end(kT0 + 1'000'000, 0, {}).ok());
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM copies"), 200);
  EXPECT_EQ(text(*db,
                 "SELECT group_concat(DISTINCT api || ' ' || kind || ' ' || ifnull(direction, 'NULL') || ' ' ||"
                 " vendor) FROM copies"),
            "cuMemcpyHtoDAsync_v2 copy HtoD cuda,cuMemsetD32Async memset NULL cuda");
  EXPECT_EQ(text(*db, "SELECT DISTINCT api || ' ' || target FROM syncs"), "cuStreamSynchronize stream");
  EXPECT_EQ(text(*db, "SELECT DISTINCT api || ' ' || op FROM stream_ops"), "cuEventRecord event_record");
  // The rows hold integers; each text is in strings once.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM copy_shapes WHERE typeof(api_id) != 'integer'"), 0);
  // A copy row is its time, duration and shape: a shape per distinct call.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM copy_rows"), 200);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM copy_shapes"),
            scalar(*db,
                   "SELECT count(*) FROM (SELECT DISTINCT process_id, tgid, tid, api, result, per_thread_stream, kind,"
                   " direction, dst, src, bytes, value, stream, async, stack_id, vendor FROM copies)"));
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM strings"),
            10);  // 4 symbols, copy, memset, HtoD, stream, event_record, cuda
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM (SELECT text FROM strings GROUP BY text HAVING count(*) > 1)"), 0);
  EXPECT_EQ(text(*db,
                 "SELECT group_concat(family || ':' || n) FROM (SELECT family, count(*) AS n FROM api_calls"
                 " GROUP BY family ORDER BY family)"),
            "copy:100,event:100,memset:100,sync:100");
  EXPECT_EQ(gpuobs_cli("check " + path).first, 0);
}

TEST(InternedCalls, RepeatedLookupsAddOneKernelNameRowAndAModuleRowEach) {
  TempDir dir;
  auto first = dir.file("s1.gpuobs"), second = dir.file("s2.gpuobs");
  auto w = new_writer(first);
  w->start();
  w->push(fork_of(200, kT0 + 1));
  for (int i = 0; i < 5; ++i) w->push(get_function(200, kT0 + 10 + i, 0xf1, "_Z3fooi"));
  w->push(launch(200, kT0 + 20, 0xf1));
  // The same handle handed out for another kernel (a module unloaded and another loaded).
  w->push(get_function(200, kT0 + 30, 0xf1, "_Z3barv"));
  w->push(get_function(200, kT0 + 31, 0xf1, "_Z3barv"));
  w->push(launch(200, kT0 + 40, 0xf1));
  // CUDA 13's lazy lookups: a CUkernel by name, then its CUfunction, again and again.
  for (int i = 0; i < 3; ++i) {
    w->push(call("cuLibraryGetKernel", 200, kT0 + 50 + 2 * i, {0x7000, 0x1b, 0x7100}, 0xa1, "_Z3bazv"));
    w->push(call("cuKernelGetFunction", 200, kT0 + 51 + 2 * i, {0x7000, 0xa1}, 0xf2));
  }
  w->push(launch(200, kT0 + 60, 0xf2));
  w->stop();
  auto w2 = new_writer(second);
  ASSERT_TRUE(w2->continue_from(*w).ok());
  ASSERT_TRUE(w->write_end(kT0 + 1000, 0, {}).ok());
  w2->start();
  w2->push(get_function(200, kT0 + 2000, 0xf1, "_Z3barv"));
  w2->push(get_function(200, kT0 + 2001, 0xf1, "_Z3barv"));
  w2->push(launch(200, kT0 + 2010, 0xf1));
  w2->stop();
  ASSERT_TRUE(w2->write_end(kT0 + 3000, 0, {}).ok());

  auto db = open_capture_readonly(first);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_modules"), 13);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_modules WHERE name = '_Z3fooi' AND handle = 241"), 5);
  EXPECT_EQ(text(*db,
                 "SELECT group_concat((ts_mono_ns - 5000000000) || ' ' || handle || ' ' || kind || ' ' || name ||"
                 " ' ' || demangled || ' ' || api || ' ' || source, ';') FROM kernel_names"),
            "10 241 function _Z3fooi foo(int) cuModuleGetFunction 61;"
            "30 241 function _Z3barv bar() cuModuleGetFunction 61;"
            "50 161 kernel _Z3bazv baz() cuLibraryGetKernel 27;"
            "51 242 function _Z3bazv baz() cuKernelGetFunction 161");
  EXPECT_EQ(text(*db,
                 "SELECT group_concat(kernel_name, ',') FROM (SELECT kernel_name FROM kernel_launches"
                 " ORDER BY id)"),
            "foo(int),bar(),baz()");
  // The next segment has no rows of the first: its first lookup writes one.
  auto d2 = open_capture_readonly(second);
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(scalar(*d2, "SELECT count(*) FROM gpu_modules"), 2);
  EXPECT_EQ(text(*d2, "SELECT group_concat((ts_mono_ns - 5000000000) || ' ' || demangled) FROM kernel_names"),
            "2000 bar()");
  EXPECT_EQ(text(*d2, "SELECT kernel_name FROM kernel_launches"), "bar()");
}

// A batch rolled back takes its strings and kernel_names rows with it: the
// string ids cached are void, and the name's next lookup writes its row.
TEST(InternedCalls, ARolledBackBatchForgetsItsIdsAndWritesTheNameAgain) {
  auto d = Db::open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(d);
  Db db = std::move(*d);
  ASSERT_TRUE(migrate(db));
  ASSERT_TRUE(db.exec("INSERT INTO processes (id, tgid, start_boottime_ns, comm, source) VALUES (1, 9, 1, 'a', 'x')"));
  StringTable strings;
  ASSERT_TRUE(strings.prepare(db.get()));
  ApiRowWriter rows;
  ASSERT_TRUE(rows.prepare(db.get(), &strings));
  ASSERT_TRUE(db.exec("BEGIN"));
  ASSERT_EQ(rows.write_call(get_function(9, 10, 0xf1, "_Z3fooi"), 1), SQLITE_DONE);
  ASSERT_TRUE(db.exec("ROLLBACK"));
  ASSERT_TRUE(strings.reload());
  rows.forget_batch_rows();
  // Another text takes the ids the rolled-back batch had used.
  EXPECT_EQ(strings.intern("something else"), 1);
  ASSERT_EQ(rows.write_call(get_function(9, 20, 0xf1, "_Z3fooi"), 1), SQLITE_DONE);
  EXPECT_EQ(rows.learned_name(), false);  // the name itself was known all along
  ASSERT_EQ(rows.write_call(get_function(9, 30, 0xf1, "_Z3fooi"), 1), SQLITE_DONE);
  EXPECT_EQ(text(db,
                 "SELECT group_concat(ts_mono_ns || ' ' || api || ' ' || op || ' ' || kind || ' ' || name || ' ' ||"
                 " vendor, ';') FROM gpu_modules"),
            "20 cuModuleGetFunction get_function function _Z3fooi cuda;"
            "30 cuModuleGetFunction get_function function _Z3fooi cuda");
  EXPECT_EQ(text(db,
                 "SELECT group_concat(ts_mono_ns || ' ' || kind || ' ' || name || ' ' || demangled || ' ' || api,"
                 " ';') FROM kernel_names"),
            "20 function _Z3fooi foo(int) cuModuleGetFunction");
}

// Size, not time. A PyTorch-like mix: async copies of device pointers on a
// few streams, and lazy kernel lookups of 200 kernels with long mangled
// names, each looked up 100 times, ten minutes into the capture. Measured
// (docs/performance.md, "The compact capture"): a copy row with its index
// took 109 bytes with its text in the row, 78 as ids, 19.9 as a time and a
// shape; a lookup (its gpu_modules row, and a kernel_names row with both
// names on every lookup) 837, 52 as ids, 21.5 as a time and a shape. The
// bounds leave about 10% for page fill.
TEST(InternedCalls, ACopyAndAKernelLookupStayUnderTheirBytesOnDisk) {
  TempDir dir;
  auto empty = dir.file("e.gpuobs"), copies = dir.file("c.gpuobs"), lookups = dir.file("l.gpuobs");
  constexpr uint64_t kAt = kT0 + 600'000'000'000;
  constexpr int kRows = 20000;
  auto write = [&](const std::string& path, auto each) {
    auto w = new_writer(path);
    w->set_max_backlog(std::chrono::hours(1), SIZE_MAX);
    w->start();
    w->push(fork_of(300, kT0 + 1));
    for (int i = 0; i < kRows; ++i) each(*w, i);
    w->stop();
    ASSERT_TRUE(w->write_end(kAt + 1'000'000'000, 0, {}).ok());
    EXPECT_EQ(w->stats().failed_rows, 0u);
  };
  write(empty, [](CaptureWriter&, int) {});
  write(copies, [](CaptureWriter& w, int i) {
    uint64_t dev = 0x7f2a00000000ull + uint64_t(i % 64) * 0x100000, host = 0x55d400000000ull + uint64_t(i % 8) * 4096;
    auto c = i % 2 ? call("cuMemcpyHtoDAsync_v2", 300, kAt + i * 9000ull, {dev, host, 4096u + i % 16, 0x5a5a5a5a0000})
                   : call("cuMemcpyDtoHAsync_v2", 300, kAt + i * 9000ull, {host, dev, 512u, 0x5a5a5a5a0100});
    c.duration_ns = 2000 + i % 1000;
    w.push(c, 1 + i % 3);
  });
  write(lookups, [](CaptureWriter& w, int i) {
    int k = i % 200;
    std::string name =
        "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_23gpu_kernel_impl_nocastINS0_"
        "13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseE"
        "RKT_EUliE_St5arrayIPcLm3EEEEviT0_T1_" +
        std::to_string(k);
    uint64_t kernel = 0x55d4a0000000ull + uint64_t(k) * 64;
    w.push(call("cuLibraryGetKernel", 300, kAt + i * 9000ull, {0x7000, 0x55d490000000ull, 0x7100}, kernel, name), 1);
  });
  int64_t base = file_bytes(empty);
  double per_copy = double(file_bytes(copies) - base) / kRows;
  double per_lookup = double(file_bytes(lookups) - base) / kRows;
  std::printf("bytes per copy row: %.1f, per kernel lookup: %.1f (%d rows each)\n", per_copy, per_lookup, kRows);
  EXPECT_LE(per_copy, 22.0);
  EXPECT_LE(per_lookup, 24.0);
  auto db = open_capture_readonly(lookups);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_names"), 200);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_modules"), kRows);
}

namespace {

// A capture as gpuobs wrote it at schema 12: every call table as a table,
// with text, and a replay row pointing at a copy.
void write_schema12_capture(const std::string& path) {
  auto db = Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(migrate(*db, 12).ok());
  ASSERT_EQ(scalar(*db, "PRAGMA user_version"), 12);
  ASSERT_TRUE(
      db->exec(
            "INSERT INTO capture (id, gpuobs_version, abi_version, mode, host, kernel, start_mono_ns, end_mono_ns,"
            " clock_offset_ns, ring_buffer_bytes) VALUES (1, 'old', 5, 'record', 'h', 'k', 1000, 3000000000, 0, 4096);"
            "INSERT INTO processes (id, tgid, comm, source) VALUES (1, 42, 'old', 'proc');"
            "INSERT INTO strings (id, text) VALUES (1, 'cuLaunchKernel'), (2, 'cuda'), (3, 'old_kernel');"
            "INSERT INTO memory_ops (id, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result,"
            " per_thread_stream, op, kind, address, bytes, stream, handle, flags, alloc_id, stack_id, vendor) VALUES"
            " (5, 2000, 10, 1, 42, 42, 'cuMemAlloc_v2', 0, 0, 'alloc', 'device', 65536, 4096, NULL, NULL, NULL,"
            " NULL, NULL, 'cuda'),"
            " (6, 3000, 11, 1, 42, 43, 'cuMemFree_v2', 0, 0, 'free', 'device', 65536, 4096, NULL, NULL, NULL, 5, 2,"
            " 'cuda'),"
            " (7, 3500, 12, 1, 42, 43, 'cuMemAllocAsync', 2, 1, 'alloc', 'async', 0, 64, 90, NULL, NULL, NULL, NULL,"
            " 'cuda');"
            "INSERT INTO copies (id, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, per_thread_stream,"
            " kind, direction, dst, src, bytes, value, stream, async, stack_id, vendor) VALUES"
            " (1, 4000, 20, 1, 42, 42, 'cuMemcpyHtoDAsync_v2', 0, 0, 'copy', 'HtoD', 65536, 4096, 64, NULL, 90, 1,"
            " 2, 'cuda'),"
            " (2, 5000, 21, 1, 42, 42, 'hipMemsetD32Async', 0, 0, 'memset', NULL, 65536, NULL, 64, 7, 90, 1, NULL,"
            " 'hip');"
            "INSERT INTO stream_ops (id, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result,"
            " per_thread_stream, op, stream, event, handle, flags, priority, stack_id, vendor) VALUES"
            " (1, 6000, 5, 1, 42, 42, 'cuStreamCreateWithPriority', 0, 0, 'stream_create', 90, NULL, NULL, 1, -1,"
            " NULL, 'cuda');"
            "INSERT INTO syncs (id, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, per_thread_stream,"
            " target, stream, event, context, blocked_ns, stack_id, vendor) VALUES"
            " (1, 7000, 500, 1, 42, 42, 'cuStreamSynchronize', 0, 0, 'stream', 90, NULL, NULL, 500, NULL, 'cuda');"
            "INSERT INTO gpu_modules (id, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, op, kind,"
            " handle, source, path, name, stack_id, vendor) VALUES"
            " (1, 8000, 30, 1, 42, 42, 'cuModuleLoad', 0, 'load', 'module', 61, NULL, '/k.cubin', NULL, NULL,"
            " 'cuda'),"
            " (2, 8100, 3, 1, 42, 42, 'cuModuleGetFunction', 0, 'get_function', 'function', 241, 61, NULL,"
            " 'old_kernel', NULL, 'cuda');"
            "INSERT INTO kernel_names (id, ts_mono_ns, process_id, handle, kind, name, demangled, api, source,"
            " stack_id, vendor) VALUES (1, 8100, 1, 241, 'function', 'old_kernel', 'old_kernel',"
            " 'cuModuleGetFunction', 61, NULL, 'cuda');")
          .ok())
      << db->errmsg();
}

constexpr const char* kCallViews[] = {"memory_ops",  "copies",       "stream_ops",      "syncs",
                                      "gpu_modules", "kernel_names", "memory_timeline", "leaks"};

}  // namespace

TEST(InternedCalls, ASchema12CaptureReadsTheSameBeforeAndAfterUpgrade) {
  TempDir dir;
  auto path = dir.file("v12.gpuobs");
  write_schema12_capture(path);
  std::vector<std::string> before;
  {
    auto db = open_capture_readonly(path);
    ASSERT_TRUE(db.ok());
    for (const char* v : kCallViews)
      before.push_back(dump(*db, v, std::string(v) == "memory_timeline" ? "ts_mono_ns" : "id"));
    before.push_back(text(*db, "SELECT group_concat(family || ' ' || api, ';') FROM api_calls"));
  }
  EXPECT_NE(before[1].find("HtoD"), std::string::npos) << before[1];
  auto [crc, cout_] = gpuobs_cli("report copy_sum --format csv " + path);  // read as it is
  EXPECT_EQ(crc, 0) << cout_;
  EXPECT_NE(cout_.find("HtoD"), std::string::npos) << cout_;
  auto [urc, uout] = gpuobs_cli("upgrade " + path);
  ASSERT_EQ(urc, 0) << uout;
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "PRAGMA user_version"), schema_version());
  std::vector<std::string> after;
  for (const char* v : kCallViews)
    after.push_back(dump(*db, v, std::string(v) == "memory_timeline" ? "ts_mono_ns" : "id"));
  after.push_back(text(*db, "SELECT group_concat(family || ' ' || api, ';') FROM api_calls"));
  EXPECT_EQ(after, before);
  // Interned: each text once, the launches' strings kept with their ids.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM (SELECT text FROM strings GROUP BY text HAVING count(*) > 1)"), 0);
  EXPECT_EQ(text(*db, "SELECT text FROM strings WHERE id = 3"), "old_kernel");
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM copy_rows"), 2);
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM copy_rows r WHERE NOT EXISTS (SELECT 1 FROM copy_shapes s"
                   " WHERE s.id = r.shape_id)"),
            0);
  auto [krc, kout] = gpuobs_cli("check " + path);
  EXPECT_EQ(krc, 0) << kout;
  auto [rrc, rout] = gpuobs_cli("report copy_sum --format csv " + path);
  EXPECT_EQ(rrc, 0) << rout;
  EXPECT_EQ(rout, cout_);
}

TEST(InternedCalls, ABrokenTextIdIsReportedNotCrashedOn) {
  TempDir dir;
  auto path = dir.file("x.gpuobs");
  {
    auto w = new_writer(path);
    w->start();
    w->push(fork_of(500, kT0 + 1));
    for (uint64_t i = 0; i < 3; ++i) w->push(call("cuMemcpyHtoDAsync_v2", 500, kT0 + 10 + i, {0xd000, 0x5000, 64, 0}));
    w->stop();
    ASSERT_TRUE(w->write_end(kT0 + 1000, 0, {}).ok());
  }
  {
    auto db = Db::open(path, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    // The three identical copies share one shape: break it, and one row's shape id.
    ASSERT_EQ(scalar(*db, "SELECT count(*) FROM copy_shapes"), 1);
    ASSERT_TRUE(db->exec("UPDATE copy_shapes SET direction_id = 999").ok());
    ASSERT_TRUE(db->exec("UPDATE copy_rows SET shape_id = 999 WHERE id = (SELECT max(id) FROM copy_rows)").ok());
  }
  auto [rc, out] = gpuobs_cli("check " + path);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("1 copy_shapes rows whose api_id, kind_id, direction_id, vendor_id is not in strings"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("1 copy_rows whose shape_id is not in copy_shapes"), std::string::npos) << out;
  auto [qrc, qout] = gpuobs_cli(
      "sql 'SELECT count(*) AS n, count(direction) AS known, count(bytes) AS shaped FROM copies' --format csv " + path);
  EXPECT_EQ(qrc, 0) << qout;
  EXPECT_EQ(qout, "n,known,shaped\n3,0,2\n");
}
