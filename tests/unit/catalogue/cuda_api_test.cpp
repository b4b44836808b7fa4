// Invariants of the API table that the BPF programs and the decoder rely on.
#include "catalogue/api_spec.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "events.h"

using namespace gpuobs;

TEST(CudaApiTable, IdsAreDenseOrderedAndSymbolsUnique) {
  std::set<std::string_view> symbols;
  uint32_t expect = 1;
  for (const ApiSpec& s : cuda_api_table()) {
    EXPECT_EQ(s.id, expect++) << s.symbol;  // api_by_id indexes directly
    EXPECT_TRUE(symbols.insert(s.symbol).second) << "duplicate " << s.symbol;
    EXPECT_EQ(api_by_id(s.id), &s);
    EXPECT_LT(s.id, 1u << 16) << "the cookie holds 16 bits of API number";
  }
  EXPECT_EQ(api_by_id(9999), nullptr);
  EXPECT_EQ(api_name(9999), "unknown");
}

TEST(CudaApiTable, ProbeShapesFitThePrograms) {
  for (const ApiSpec& s : cuda_api_table()) {
    // cu_call records carry no blob; out-values need a return probe.
    if (s.probe == ProbeKind::entry) {
      EXPECT_EQ(s.blob_kind, GPUOBS_BLOB_NONE) << s.symbol;
      EXPECT_EQ(s.out_arg, 0) << s.symbol;
    }
    EXPECT_LE(s.blob_len, GPUOBS_BLOB_MAX) << s.symbol;
    EXPECT_LE(s.out_arg, 8) << s.symbol;
    EXPECT_LE(s.blob_arg, 8) << s.symbol;
    if (s.blob_kind == GPUOBS_BLOB_STRUCT) { EXPECT_GT(s.blob_len, 0) << s.symbol; }
    std::string_view sym = s.symbol;
    bool suffixed = sym.ends_with("_ptsz") || sym.ends_with("_ptds");
    EXPECT_EQ(s.per_thread, suffixed) << s.symbol;
  }
}

// The Level Zero table: ids dense from 3001, found by id and by its library;
// each probe kind has the fields its program reads.
TEST(LevelZeroApiTable, IdsShapesAndLibrary) {
  std::set<std::string_view> symbols;
  uint32_t expect = 3001;
  for (const ApiSpec& s : level_zero_api_table()) {
    EXPECT_EQ(s.id, expect++) << s.symbol;
    EXPECT_TRUE(symbols.insert(s.symbol).second) << "duplicate " << s.symbol;
    EXPECT_EQ(api_by_id(s.id), &s);
    EXPECT_EQ(s.vendor, Vendor::level_zero) << s.symbol;
    EXPECT_TRUE(s.symbol.starts_with("ze")) << s.symbol;
    EXPECT_LE(s.out_arg, 8) << s.symbol;
    if (s.probe == ProbeKind::launch_group_count) {
      // The group count is read only when it is host memory (the cookie's STRUCT blob of 12 bytes).
      bool indirect = s.symbol.ends_with("Indirect");
      EXPECT_EQ(s.blob_kind, indirect ? GPUOBS_BLOB_NONE : GPUOBS_BLOB_STRUCT) << s.symbol;
      EXPECT_EQ(s.blob_len, indirect ? 0 : 12) << s.symbol;
      EXPECT_EQ(s.blob_arg, indirect ? 0 : 3) << s.symbol;
    }
    if (s.blob_kind == GPUOBS_BLOB_STRING_AT) {
      EXPECT_EQ(s.blob_len % 8, 0) << s.symbol << ": a pointer field is 8-byte aligned";
    }
  }
  EXPECT_EQ(api_table_for_library("/usr/lib/x86_64-linux-gnu/libze_loader.so.1").data(), level_zero_api_table().data());
  EXPECT_EQ(api_table_for_library("libze_loader.so.1.8.0").data(), level_zero_api_table().data());
  EXPECT_EQ(api_by_symbol("zeKernelCreate")->id, 3028);
  EXPECT_EQ(api_by_id(3000 + level_zero_api_table().size() + 1), nullptr);
}
