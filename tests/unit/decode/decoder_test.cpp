#include "decode/decoder.h"

#include "catalogue/api_spec.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

using namespace gpuobs;

// ABI 8: a library mapping carries the inode BPF saw and what it did.
TEST(Decoder, LibraryMapCarriesTheInodeAndTheHold) {
  Decoder d;
  gpuobs_lib_map m{};
  m.hdr = {GPUOBS_EV_LIB_MAP, sizeof m, 5, 42, 43};
  m.ppid = 7;
  m.hold = GPUOBS_LIB_HELD;
  m.kdev = (8u << 20) | 3u;
  m.ino = 123456789;
  std::memcpy(m.comm, "short_app", 10);
  std::memset(m.filename, 'x', sizeof m.filename);  // no NUL: bounded
  std::memcpy(m.filename, "libcuda.so.1", 13);
  Event ev = d.decode(&m, sizeof m);
  auto* got = std::get_if<ProcEvent>(&ev);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->type, static_cast<uint32_t>(GPUOBS_EV_LIB_MAP));
  EXPECT_EQ(got->filename, "libcuda.so.1");
  EXPECT_EQ(got->comm, "short_app");
  EXPECT_EQ(got->hold, static_cast<uint32_t>(GPUOBS_LIB_HELD));
  EXPECT_EQ(got->lib_kdev, (8u << 20) | 3u);
  EXPECT_EQ(got->lib_ino, 123456789u);
  EXPECT_EQ(got->ppid, 7u);
  // A record of the old size (struct gpuobs_proc's head only) is short.
  gpuobs_lib_map cut = m;
  cut.hdr.size = 60;
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&cut, 60)));
}

namespace {

gpuobs_launch sample_launch() {
  gpuobs_launch l{};
  l.hdr = {GPUOBS_EV_LAUNCH, sizeof(gpuobs_launch), 123456789, 42, 43};
  l.function = 0xdeadbeef;
  l.grid_x = 7;
  l.block_z = 0x80000000u;
  l.stream = 2;
  l.api = GPUOBS_API_CU_LAUNCH_KERNEL_PTSZ;
  return l;
}

}  // namespace

TEST(Decoder, DecodesALaunchFieldForField) {
  Decoder d;
  auto l = sample_launch();
  Event ev = d.decode(&l, sizeof l);
  auto* got = std::get_if<gpuobs_launch>(&ev);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->hdr.tgid, 42u);
  EXPECT_EQ(got->hdr.tid, 43u);
  EXPECT_EQ(got->hdr.ts_ns, 123456789u);
  EXPECT_EQ(got->function, 0xdeadbeefu);
  EXPECT_EQ(got->grid_x, 7u);
  EXPECT_EQ(got->block_z, 0x80000000u);
  EXPECT_EQ(got->stream, 2u);
  EXPECT_EQ(api_name(got->api), "cuLaunchKernel_ptsz");
  EXPECT_EQ(d.stats().decoded, 1u);
}

TEST(Decoder, AcceptsRingPaddingAfterTheRecord) {
  Decoder d;
  std::vector<unsigned char> buf(sizeof(gpuobs_launch) + 8, 0xff);
  auto l = sample_launch();
  std::memcpy(buf.data(), &l, sizeof l);
  EXPECT_TRUE(std::holds_alternative<gpuobs_launch>(d.decode(buf.data(), buf.size())));
}

TEST(Decoder, RejectsAndCountsShortRecords) {
  Decoder d;
  auto l = sample_launch();
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&l, 10)));  // shorter than a header
  l.hdr.size = 40;                                                        // header claims a short launch
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&l, 40)));
  EXPECT_EQ(d.stats().short_records, 2u);
  EXPECT_EQ(d.stats().decoded, 0u);
}

TEST(Decoder, RejectsAndCountsUnknownTypesAndSizeMismatch) {
  Decoder d;
  auto l = sample_launch();
  l.hdr.type = 999;
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&l, sizeof l)));
  EXPECT_EQ(d.stats().unknown_types, 1u);
  l = sample_launch();
  l.hdr.size = sizeof l + 64;  // claims more than the ring delivered
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&l, sizeof l)));
  EXPECT_EQ(d.stats().size_mismatch, 1u);
}

TEST(Decoder, ProcStringsAreBoundedEvenWithoutTerminator) {
  Decoder d;
  gpuobs_proc p{};
  p.hdr = {GPUOBS_EV_PROC_EXEC, sizeof p, 1, 10, 10};
  std::memset(p.comm, 'a', sizeof p.comm);  // no NUL at all
  std::memcpy(p.filename, "/usr/bin/python3", 17);
  p.ppid = 9;
  Event ev = d.decode(&p, sizeof p);
  auto* got = std::get_if<ProcEvent>(&ev);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->comm, std::string(16, 'a'));
  EXPECT_EQ(got->filename, "/usr/bin/python3");
  EXPECT_EQ(got->ppid, 9u);
  EXPECT_EQ(got->type, static_cast<uint32_t>(GPUOBS_EV_PROC_EXEC));
}

namespace {

// An API-call record as bpf/api.bpf.h builds it: the fixed part, `body`
// bytes of blob space (the whole blob array for calls with a return probe),
// then `ips` frames and the stack trailer.
std::vector<unsigned char> api_call_record(const gpuobs_api_call& fixed, const void* blob, size_t blob_bytes,
                                           size_t body, std::vector<uint64_t> ips) {
  const size_t off = offsetof(gpuobs_api_call, blob);
  std::vector<unsigned char> rec(off + body + ips.size() * 8 + sizeof(gpuobs_stack_trailer), 0);
  std::memcpy(rec.data(), &fixed, off);
  if (blob_bytes) std::memcpy(rec.data() + off, blob, blob_bytes);
  if (!ips.empty()) std::memcpy(rec.data() + off + body, ips.data(), ips.size() * 8);
  gpuobs_stack_trailer t{0x5a5a, static_cast<__u16>(ips.size()), static_cast<__u16>(ips.size()),
                         GPUOBS_STACK_F_AT_RETURN};
  std::memcpy(rec.data() + rec.size() - sizeof t, &t, sizeof t);
  gpuobs_hdr hdr = fixed.hdr;
  hdr.size = static_cast<__u32>(rec.size());
  std::memcpy(rec.data(), &hdr, sizeof hdr);
  return rec;
}

gpuobs_api_call returned_call(uint32_t api, uint32_t blob_kind, uint32_t blob_len) {
  gpuobs_api_call c{};
  c.hdr = {GPUOBS_EV_API_CALL, 0, 5000, 77, 78};
  for (int i = 0; i < 8; ++i) c.args[i] = 0x1000 + i;
  c.ret = 2;  // CUDA_ERROR_OUT_OF_MEMORY
  c.duration_ns = 321;
  c.out_value = 0x7f0000001000;
  c.api = api;
  c.flags = GPUOBS_CALL_F_RETURNED | GPUOBS_CALL_F_OUT_READ;
  c.blob_len = blob_len;
  c.blob_kind = blob_kind;
  return c;
}

void expect_fixed_fields(const ApiCallEvent& e, uint32_t api, uint32_t blob_kind) {
  EXPECT_EQ(e.hdr.type, static_cast<uint32_t>(GPUOBS_EV_API_CALL));
  EXPECT_EQ(e.hdr.ts_ns, 5000u);
  EXPECT_EQ(e.hdr.tgid, 77u);
  EXPECT_EQ(e.hdr.tid, 78u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(e.args[i], 0x1000u + i) << "arg " << i + 1;
  EXPECT_EQ(e.ret, 2);
  EXPECT_EQ(e.duration_ns, 321u);
  EXPECT_EQ(e.out_value, 0x7f0000001000u);
  EXPECT_EQ(e.api, api);
  EXPECT_EQ(e.flags, GPUOBS_CALL_F_RETURNED | GPUOBS_CALL_F_OUT_READ);
  EXPECT_EQ(e.blob_kind, blob_kind);
}

}  // namespace

TEST(DecoderApiCall, StringBlobFieldForFieldWithItsStack) {
  Decoder d;
  const char name[] = "_Z6kernelPf";  // bpf_probe_read_user_str's length counts the NUL
  auto c = returned_call(1234, GPUOBS_BLOB_STRING, sizeof name);
  auto rec = api_call_record(c, name, sizeof name, GPUOBS_BLOB_MAX, {0x401000, 0x402000});
  RawStack stack;
  Event ev = d.decode(rec.data(), rec.size(), &stack);
  auto* e = std::get_if<ApiCallEvent>(&ev);
  ASSERT_NE(e, nullptr);
  expect_fixed_fields(*e, 1234, GPUOBS_BLOB_STRING);
  EXPECT_EQ(e->hdr.size, rec.size());
  EXPECT_EQ(e->blob, std::string(name, sizeof name));
  EXPECT_EQ(blob_string(*e), "_Z6kernelPf");
  EXPECT_EQ(stack.ips, (std::vector<uint64_t>{0x401000, 0x402000}));
  EXPECT_EQ(stack.sp_word, 0x5a5au);
  EXPECT_EQ(stack.flags, GPUOBS_STACK_F_AT_RETURN);
  EXPECT_EQ(d.stats().decoded, 1u);
  EXPECT_EQ(d.stats().bad_stacks, 0u);
}

TEST(DecoderApiCall, StructBlobKeepsEveryByteIncludingZeros) {
  Decoder d;
  unsigned char blob[24];
  for (size_t i = 0; i < sizeof blob; ++i) blob[i] = static_cast<unsigned char>(i % 3 == 0 ? 0 : 0xa0 + i);
  auto c = returned_call(77, GPUOBS_BLOB_STRUCT, sizeof blob);
  auto rec = api_call_record(c, blob, sizeof blob, GPUOBS_BLOB_MAX, {});
  Event ev = d.decode(rec.data(), rec.size());
  auto* e = std::get_if<ApiCallEvent>(&ev);
  ASSERT_NE(e, nullptr);
  expect_fixed_fields(*e, 77, GPUOBS_BLOB_STRUCT);
  EXPECT_EQ(e->blob, std::string(reinterpret_cast<const char*>(blob), sizeof blob));
}

TEST(DecoderApiCall, EntryOnlyRecordIsTheFixedPartAndTheStack) {
  // cu_call reserves offsetof(blob) + the stack, no blob space at all.
  Decoder d;
  auto c = returned_call(5, GPUOBS_BLOB_NONE, 0);
  c.flags = 0;
  auto rec = api_call_record(c, nullptr, 0, 0, {0x1});
  RawStack stack;
  Event ev = d.decode(rec.data(), rec.size(), &stack);
  auto* e = std::get_if<ApiCallEvent>(&ev);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(rec.size(), offsetof(gpuobs_api_call, blob) + 8 + sizeof(gpuobs_stack_trailer));
  EXPECT_TRUE(e->blob.empty());
  EXPECT_EQ(e->flags, 0u);
  EXPECT_EQ(stack.ips, (std::vector<uint64_t>{0x1}));
  EXPECT_EQ(d.stats().bad_stacks, 0u);
}

TEST(DecoderApiCall, ShortAndOversizedRecordsAreRejectedAndCounted) {
  Decoder d;
  // Shorter than the fixed part.
  auto c = returned_call(1, GPUOBS_BLOB_NONE, 0);
  auto rec = api_call_record(c, nullptr, 0, 0, {});
  gpuobs_hdr h{GPUOBS_EV_API_CALL, static_cast<__u32>(offsetof(gpuobs_api_call, blob) - 8), 1, 2, 3};
  std::memcpy(rec.data(), &h, sizeof h);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(rec.data(), rec.size())));
  EXPECT_EQ(d.stats().short_records, 1u);

  // blob_len past the blob space the record has (the stack follows 16 bytes of blob).
  const char text[16] = "abcdefghijklmno";
  auto over = returned_call(1, GPUOBS_BLOB_STRING, 17);
  rec = api_call_record(over, text, sizeof text, sizeof text, {0x1});
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(rec.data(), rec.size())));
  EXPECT_EQ(d.stats().size_mismatch, 1u);
  // Exactly the space it has is fine.
  auto fits = returned_call(1, GPUOBS_BLOB_STRING, 16);
  rec = api_call_record(fits, text, sizeof text, sizeof text, {0x1});
  EXPECT_TRUE(std::holds_alternative<ApiCallEvent>(d.decode(rec.data(), rec.size())));

  // blob_len above GPUOBS_BLOB_MAX, in a record large enough to hold it.
  std::vector<char> big(GPUOBS_BLOB_MAX + 8, 'x');
  auto huge = returned_call(1, GPUOBS_BLOB_STRUCT, GPUOBS_BLOB_MAX + 8);
  rec = api_call_record(huge, big.data(), big.size(), big.size(), {});
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(rec.data(), rec.size())));
  EXPECT_EQ(d.stats().size_mismatch, 2u);

  // The header claims more than the ring delivered.
  auto ok = returned_call(1, GPUOBS_BLOB_NONE, 0);
  rec = api_call_record(ok, nullptr, 0, 0, {});
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(rec.data(), rec.size() - 8)));
  EXPECT_EQ(d.stats().size_mismatch, 3u);
  EXPECT_EQ(d.stats().decoded, 1u);
}
