// Conversions of the narrow float types, against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "api_visibility.h"
#include "ncclrr/hostnccl/reduce.h"

namespace ncclrr::host {
namespace {

template <typename T>
T Bits(int dt, double v) {
  T b{};
  StoreFromDouble(dt, v, &b);
  return b;
}

TEST(HostDtype, Sizes) {
  EXPECT_EQ(DtypeSize(ncclInt8), 1u);
  EXPECT_EQ(DtypeSize(ncclFloat16), 2u);
  EXPECT_EQ(DtypeSize(ncclBfloat16), 2u);
  EXPECT_EQ(DtypeSize(ncclFloat8e4m3), 1u);
  EXPECT_EQ(DtypeSize(ncclUint64), 8u);
  EXPECT_EQ(DtypeSize(ncclNumTypes), 0u);
}

TEST(HostDtype, HalfRoundsToNearestEven) {
  EXPECT_EQ(Bits<uint16_t>(ncclFloat16, 1.0), 0x3c00);
  EXPECT_EQ(Bits<uint16_t>(ncclFloat16, 1.0 / 3), 0x3555);
  EXPECT_EQ(Bits<uint16_t>(ncclFloat16, 65504.0), 0x7bff);
  EXPECT_EQ(Bits<uint16_t>(ncclFloat16, 70000.0), 0x7c00);               // overflow: infinity
  EXPECT_EQ(Bits<uint16_t>(ncclFloat16, 1.0 + 1.0 / 2048), 0x3c00);      // tie: even
  EXPECT_EQ(Bits<uint16_t>(ncclFloat16, std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
  uint16_t h = 0xc000;
  EXPECT_EQ(LoadAsDouble(ncclFloat16, &h), -2.0);
}

TEST(HostDtype, Bfloat16) {
  EXPECT_EQ(Bits<uint16_t>(ncclBfloat16, 1.0), 0x3f80);
  EXPECT_EQ(Bits<uint16_t>(ncclBfloat16, 1.0 + 1.0 / 256), 0x3f80);  // tie: even
  EXPECT_EQ(Bits<uint16_t>(ncclBfloat16, 1.0 + 3.0 / 256), 0x3f82);
}

TEST(HostDtype, Fp8SaturatesLikeCuda) {
  EXPECT_EQ(Bits<uint8_t>(ncclFloat8e4m3, 1.0), 0x38);
  EXPECT_EQ(Bits<uint8_t>(ncclFloat8e4m3, 448.0), 0x7e);
  EXPECT_EQ(Bits<uint8_t>(ncclFloat8e4m3, 1000.0), 0x7e);  // satfinite
  EXPECT_EQ(Bits<uint8_t>(ncclFloat8e4m3, -2.0), 0xc0);
  EXPECT_EQ(Bits<uint8_t>(ncclFloat8e5m2, 1.0), 0x3c);
  EXPECT_EQ(Bits<uint8_t>(ncclFloat8e5m2, 57344.0), 0x7b);
  EXPECT_EQ(Bits<uint8_t>(ncclFloat8e5m2, 1e6), 0x7b);
  uint8_t nan = 0x7f;
  EXPECT_TRUE(std::isnan(LoadAsDouble(ncclFloat8e4m3, &nan)));
  uint8_t sub = 0x01;
  EXPECT_EQ(LoadAsDouble(ncclFloat8e4m3, &sub), std::ldexp(1.0, -9));
}

TEST(HostDtype, IntegerSumWraps) {
  int8_t a[2] = {127, 100}, b[2] = {1, 100}, out[2];
  const void* ins[2] = {a, b};
  Reduce(ncclInt8, RedKind::kSum, out, ins, 2, 2, nullptr);
  EXPECT_EQ(out[0], -128);
  EXPECT_EQ(out[1], -56);
}

}  // namespace
}  // namespace ncclrr::host
