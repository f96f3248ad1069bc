#include "ddp/comm/sizes.hpp"
#include "ddp/comm/types.hpp"
#include "ddp/common/error.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace ddp::comm;

TEST_CASE("dtype and reduce-op names round-trip", "[comm][types]") {
  for (auto d : kAllDTypes) CHECK(parseDType(dtypeName(d)) == d);
  for (auto op : kAllReduceOps) CHECK(parseReduceOp(reduceOpName(op)) == op);
  CHECK_FALSE(parseDType("float32x"));
  CHECK_FALSE(parseReduceOp("mean"));
  CHECK(dtypeSize(DType::kFloat16) == 2);
  CHECK(dtypeSize(DType::kInt64) == 8);
}

TEST_CASE("half and bfloat16 conversions", "[comm][types]") {
  CHECK(floatToHalf(1.0f) == 0x3c00);
  CHECK(floatToHalf(-2.0f) == 0xc000);
  CHECK(floatToHalf(65504.0f) == 0x7bff);
  CHECK(floatToHalf(65536.0f) == 0x7c00);               // overflows to infinity
  CHECK(halfToFloat(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(floatToHalf(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(std::isnan(halfToFloat(floatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(floatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie rounds to even
  for (int i = -2048; i <= 2048; ++i) CHECK(halfToFloat(floatToHalf(static_cast<float>(i))) == i);
  CHECK(floatToBf16(1.0f) == 0x3f80);
  CHECK(bf16ToFloat(floatToBf16(3.0f)) == 3.0f);
  CHECK(bf16ToFloat(floatToBf16(257.0f)) == 256.0f);  // 8-bit mantissa, tie to even
}

TEST_CASE("host reductions and averaging", "[comm][types]") {
  float a[3] = {1, 5, -2};
  const float b[3] = {4, 2, -3};
  reduceInto(a, b, DType::kFloat32, 3, ReduceOp::kMax);
  CHECK(a[0] == 4);
  CHECK(a[1] == 5);
  CHECK(a[2] == -2);
  int64_t x[2] = {7, -7};
  divideInPlace(x, DType::kInt64, 2, 2);
  CHECK(x[0] == 3);
  CHECK(x[1] == -3);
  uint16_t h[1] = {floatToHalf(3)};
  const uint16_t h2[1] = {floatToHalf(5)};
  reduceInto(h, h2, DType::kFloat16, 1, ReduceOp::kProd);
  CHECK(halfToFloat(h[0]) == 15.0f);
}

TEST_CASE("sizes with K, M and G suffixes", "[comm][sizes]") {
  CHECK(parseSize("8") == 8);
  CHECK(parseSize("64K") == 65536);
  CHECK(parseSize("1M") == 1048576);
  CHECK(parseSize("256m") == 256ull << 20);
  CHECK(parseSize("2G") == 2ull << 30);
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(parseSize("12Q", "maximum size (-e)"), Contains("maximum size (-e) '12Q' is not a size"));
  for (const char* bad : {"", "K", "1.5M", "-1", "1MB", " 1"}) {
    CHECK_THROWS_AS(parseSize(bad), ddp::ConfigError);
  }
  CHECK_THROWS_WITH(parseSize("99999999999999G"), Contains("too large"));
  CHECK(formatSize(1024) == "1K");
  CHECK(formatSize(256ull << 20) == "256M");
  CHECK(formatSize(1536) == "1536");
}
