// Demangled names folded for tables (issue 38), and numbers rounded for people.
#include "common/short_name.h"

#include <gtest/gtest.h>

#include "report/query.h"

using gpuobs::short_name;

TEST(ShortName, FoldsTemplatesAndParametersAndDropsTheReturnType) {
  EXPECT_EQ(
      short_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                 "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"),
      "at::native::vectorized_elementwise_kernel<...>(...)");
  EXPECT_EQ(short_name("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(short_name("c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor, std::allocator<at::Tensor> >&, "
                       "c10d::AllreduceOptions const&)"),
            "c10d::ProcessGroupNCCL::allreduce(...)");
  EXPECT_EQ(short_name("unsigned int foo<int>(int)"), "foo<...>(...)");
  EXPECT_EQ(short_name("std::vector<int>::operator<(std::vector<int> const&) const"),
            "std::vector<...>::operator<(...) const");
  EXPECT_EQ(short_name("bool operator<<(a, b)"), "operator<<(...)");
  EXPECT_EQ(short_name("(anonymous namespace)::kernel<float>(float*)"), "(anonymous namespace)::kernel<...>(...)");
  EXPECT_EQ(short_name("f()"), "f()");  // nothing to fold
  // Not C++ (unbalanced, a path, a Python frame): unchanged.
  EXPECT_EQ(short_name("cut<short"), "cut<short");
  EXPECT_EQ(short_name("train_step (train.py:42)"), "train_step (train.py:42)");
  EXPECT_EQ(short_name(""), "");
  // The 3,000-character call site of a collective (nccl_ranks) becomes short.
  std::string nested = "void c10d::Work::run<";
  for (int i = 0; i < 200; ++i) nested += "std::function<void (at::Tensor&)>, ";
  nested += "int>(c10d::Opts const&)";
  EXPECT_EQ(short_name(nested), "c10d::Work::run<...>(...)");
}

TEST(TableNumbers, FourSignificantDigitsIntegersWholeSmallOnesScientific) {
  EXPECT_EQ(gpuobs::table_number_text(3.8475), "3.848");  // 4 significant digits, rounded
  EXPECT_EQ(gpuobs::table_number_text(156167.123), "156167");
  EXPECT_EQ(gpuobs::table_number_text(0.1808), "0.1808");
  EXPECT_EQ(gpuobs::table_number_text(85.4567), "85.46");
  EXPECT_EQ(gpuobs::table_number_text(2.0), "2");
  EXPECT_EQ(gpuobs::table_number_text(1.234567e-7), "0.000000123");  // a p-value: 3 significant digits
  EXPECT_EQ(gpuobs::table_number_text(0.0123456), "0.01235");
  EXPECT_EQ(gpuobs::table_number_text(-0.5), "-0.5");
  EXPECT_EQ(gpuobs::table_number_text(0), "0");
}
