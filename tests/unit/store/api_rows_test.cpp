// store/api_rows.cpp binding decoded calls into a real (in-memory) capture,
// store/db.h's named parameters and optional binds, and common/demangle.
#include "store/api_rows.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "common/demangle.h"
#include "events.h"
#include "store/db.h"
#include "store/schema.h"

using namespace gpuobs;

namespace {

struct Capture : ::testing::Test {
  Db db;
  ApiRowWriter rows;
  void SetUp() override {
    auto d = Db::open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(d);
    db = std::move(*d);
    ASSERT_TRUE(migrate(db));
    ASSERT_TRUE(
        db.exec("INSERT INTO processes (id, tgid, start_boottime_ns, comm, source)"
                " VALUES (1, 4242, 1, 'app', 'root')"));
    auto st = rows.prepare(db.get());
    ASSERT_TRUE(st) << st.error().message;
  }
  int write(std::string_view symbol, std::initializer_list<uint64_t> args, int64_t ret = 0, uint64_t out = 0,
            std::string blob = {}) {
    ApiCallEvent e{};
    e.hdr.ts_ns = ++ts;
    e.hdr.tgid = 4242;
    e.hdr.tid = 4242;
    size_t i = 0;
    for (uint64_t a : args) e.args[i++] = a;
    e.ret = ret;
    e.duration_ns = 10;
    e.out_value = out;
    e.flags = GPUOBS_CALL_F_RETURNED | GPUOBS_CALL_F_OUT_READ;
    for (auto table : {cuda_api_table(), hip_api_table()})
      for (const ApiSpec& s : table)
        if (s.symbol == symbol) e.api = s.id, e.blob_kind = s.blob_kind;
    e.blob = std::move(blob);
    return rows.write_call(e, 1);
  }
  std::string text(const std::string& sql) {
    Stmt st(db.get(), sql);
    if (st.step() != SQLITE_ROW) return "(no row)";
    auto* t = sqlite3_column_text(st.get(), 0);
    return t ? reinterpret_cast<const char*>(t) : "NULL";
  }
  uint64_t ts = 0;
};

}  // namespace

TEST_F(Capture, AFreeTakesKindBytesAndIdOfItsAllocation) {
  ASSERT_EQ(write("cuMemAllocManaged", {0x7000, 4096, 0xffffffff00000001ull}, 0, 0x10000), SQLITE_DONE);
  ASSERT_EQ(write("cuMemFree_v2", {0x10000}), SQLITE_DONE);
  ASSERT_EQ(write("cuMemFree_v2", {0x10000}), SQLITE_DONE);  // a double free names no allocation
  EXPECT_EQ(text("SELECT group_concat(op || ' ' || kind || ' ' || address || ' ' || ifnull(bytes, 'NULL') || ' ' ||"
                 " ifnull(flags, 'NULL') || ' ' || ifnull(alloc_id, 'NULL') || ' ' || result || ' ' ||"
                 " ifnull(stream, 'NULL') || ' ' || vendor, ';') FROM (SELECT * FROM memory_ops ORDER BY id)"),
            "alloc managed 65536 4096 1 NULL 0 NULL cuda;free managed 65536 4096 NULL 1 0 NULL cuda;"
            "free device 65536 NULL NULL NULL 0 NULL cuda");
}

TEST_F(Capture, PhysicalMemoryPairsOnItsHandle) {
  ASSERT_EQ(write("cuMemCreate", {0x7000, 2 << 20, 0x7100, 0}, 0, 0xabc), SQLITE_DONE);
  ASSERT_EQ(write("cuMemRelease", {0xabc}), SQLITE_DONE);
  EXPECT_EQ(text("SELECT group_concat(op || ' ' || ifnull(address, 'NULL') || ' ' || handle || ' ' || bytes || ' ' ||"
                 " ifnull(alloc_id, 'NULL'), ';') FROM (SELECT * FROM memory_ops ORDER BY id)"),
            "create NULL 2748 2097152 NULL;release 0 2748 2097152 1");
}

TEST_F(Capture, CopiesStreamsSyncsAndModulesBindEveryColumn) {
  ASSERT_EQ(write("hipMemsetD16Async", {0xd000, 0x12345678, 10, 0x5a}), SQLITE_DONE);
  ASSERT_EQ(write("cuMemcpyDtoHAsync_v2_ptsz", {0x1000, 0xd000, 64, 0x5a}), SQLITE_DONE);
  EXPECT_EQ(text("SELECT group_concat(kind || ' ' || ifnull(direction, 'NULL') || ' ' || dst || ' ' ||"
                 " ifnull(src, 'NULL') || ' ' || bytes || ' ' || ifnull(value, 'NULL') || ' ' || stream || ' ' ||"
                 " async || ' ' || per_thread_stream || ' ' || vendor, ';') FROM (SELECT * FROM copies ORDER BY id)"),
            "memset NULL 53248 NULL 20 22136 90 1 0 hip;copy DtoH 4096 53248 64 NULL 90 1 1 cuda");

  ASSERT_EQ(write("cuStreamCreateWithPriority", {0x7000, 1, 0xffffffff}, 0, 0x5a), SQLITE_DONE);
  ASSERT_EQ(write("cuEventRecord", {0xe1, 0x5a}), SQLITE_DONE);
  EXPECT_EQ(text("SELECT group_concat(op || ' ' || ifnull(stream, 'NULL') || ' ' || ifnull(event, 'NULL') || ' ' ||"
                 " ifnull(handle, 'NULL') || ' ' || ifnull(flags, 'NULL') || ' ' || ifnull(priority, 'NULL'), ';')"
                 " FROM (SELECT * FROM stream_ops ORDER BY id)"),
            "stream_create 90 NULL NULL 1 -1;event_record 90 225 NULL NULL NULL");

  ASSERT_EQ(write("cuStreamSynchronize", {0x5a}), SQLITE_DONE);
  EXPECT_EQ(text("SELECT target || ' ' || stream || ' ' || ifnull(event, 'NULL') || ' ' || ifnull(context, 'NULL') ||"
                 " ' ' || blocked_ns || ' ' || duration_ns FROM syncs"),
            "stream 90 NULL NULL 10 10");

  ASSERT_EQ(write("cuModuleLoad", {0x7000, 0x7100}, 0, 0x3d, std::string("/k.cubin") + '\0'), SQLITE_DONE);
  ASSERT_EQ(write("cuModuleGetFunction", {0x7000, 0x3d, 0x7100}, 0, 0xf1, std::string("_Z3addPf") + '\0'), SQLITE_DONE);
  EXPECT_EQ(text("SELECT group_concat(op || ' ' || kind || ' ' || handle || ' ' || ifnull(source, 'NULL') || ' ' ||"
                 " ifnull(path, 'NULL') || ' ' || ifnull(name, 'NULL'), ';')"
                 " FROM (SELECT * FROM gpu_modules ORDER BY id)"),
            "load module 61 NULL /k.cubin NULL;get_function function 241 61 NULL _Z3addPf");
  EXPECT_EQ(text("SELECT handle || ' ' || kind || ' ' || name || ' ' || demangled || ' ' || api || ' ' || source ||"
                 " ' ' || vendor FROM kernel_names"),
            "241 function _Z3addPf add(float*) cuModuleGetFunction 61 cuda");
}

// The old writer demangled without checking for "_Z": a C kernel named "i"
// was stored as "int".
TEST_F(Capture, AKernelNamedLikeATypeCodeKeepsItsName) {
  ASSERT_EQ(write("cuModuleGetFunction", {0x7000, 0x3d, 0x7100}, 0, 0xf1, std::string("i") + '\0'), SQLITE_DONE);
  EXPECT_EQ(text("SELECT name || ' ' || demangled FROM kernel_names"), "i i");
}

TEST_F(Capture, AnUnreadableNameIsCountedAndNamesNothing) {
  ASSERT_EQ(write("cuLibraryGetKernel", {0x7000, 0x1b, 0x7100}, 0, 0xa1), SQLITE_DONE);
  ASSERT_EQ(write("cuKernelGetFunction", {0x7000, 0xa1}, 0, 0xf2), SQLITE_DONE);
  EXPECT_EQ(rows.unreadable_names(), 1u);
  EXPECT_EQ(text("SELECT count(*) FROM kernel_names"), "0");
  EXPECT_EQ(text("SELECT count(*) FROM gpu_modules"), "2");
}

TEST(Stmt, NamedParametersAndOptionalValues) {
  auto d = Db::open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(d);
  ASSERT_TRUE(d->exec("CREATE TABLE t (a INTEGER, b TEXT, c INTEGER)"));
  Stmt st(d->get(), "INSERT INTO t (a, b, c) VALUES (:a, :b, :c)");
  Stmt::Param a = st.param(":a"), b = st.param(":b"), c = st.param(":c");
  EXPECT_EQ(a.index, 1);
  EXPECT_EQ(c.index, 3);
  EXPECT_TRUE(st.unresolved().empty());
  EXPECT_EQ(st.param(":nope").index, 0);
  EXPECT_EQ(st.unresolved(), ":nope");
  st.bind(c, std::optional<int64_t>(7)).bind(b, std::optional<std::string_view>()).bind(a, uint64_t{1});
  ASSERT_EQ(st.exec(), SQLITE_DONE);
  ASSERT_EQ(st.bind(a, std::optional<uint64_t>()).bind(b, "x").bind(c, int64_t{-2}).exec(), SQLITE_DONE);
  Stmt q(d->get(), "SELECT group_concat(ifnull(a, 'N') || ifnull(b, 'N') || ifnull(c, 'N'), ',') FROM t");
  ASSERT_EQ(q.step(), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0)), "1N7,Nx-2");
}

TEST(Demangle, OnlyItaniumNames) {
  EXPECT_EQ(demangle("_Z3addPfS_i"), "add(float*, float*, int)");
  EXPECT_EQ(demangle("_ZN2ns6kernelEv"), "ns::kernel()");
  EXPECT_EQ(demangle("i"), "i") << "a bare type code is a name, not a type";
  EXPECT_EQ(demangle("f"), "f");
  EXPECT_EQ(demangle("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(demangle("_Z"), "_Z") << "refused by the demangler: unchanged";
  EXPECT_EQ(demangle(""), "");
}
