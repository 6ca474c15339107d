// ClockMap: a foreign clock (CUPTI's CLOCK_REALTIME stamps) onto CLOCK_MONOTONIC.
#include "ncclrr/gputiming/clock_map.h"

#include <gtest/gtest.h>

#include <time.h>

namespace ncclrr::gputiming {
namespace {

// A fake pair of clocks: monotonic advances by `step` per read; the foreign clock is monotonic
// plus `offset`, which the test can change (an NTP slew).
struct FakeClocks {
  uint64_t mono = 1'000'000;
  int64_t offset = 5'000'000'000;
  uint64_t step = 10;
  ClockMap::Clock Foreign() {
    return [this] { return static_cast<uint64_t>(static_cast<int64_t>(mono) + offset); };
  }
  ClockMap::Clock Monotonic() {
    return [this] { return mono += step; };
  }
};

TEST(ClockMap, WithoutCalibrationTimestampsPassThrough) {
  FakeClocks f;
  ClockMap m(f.Foreign(), f.Monotonic());
  EXPECT_EQ(m.ToMonotonic(1234), 1234);
  EXPECT_EQ(m.points(), 0u);
}

TEST(ClockMap, OnePointGivesTheOffset) {
  FakeClocks f;
  ClockMap m(f.Foreign(), f.Monotonic());
  const int64_t half_width = m.Calibrate();
  EXPECT_EQ(half_width, 5);  // monotonic reads 10 ns apart
  const uint64_t foreign = 7'000'000'000;
  EXPECT_NEAR(static_cast<double>(m.ToMonotonic(foreign)),
              static_cast<double>(static_cast<int64_t>(foreign) - f.offset), 10.0);
}

TEST(ClockMap, InterpolatesBetweenPointsWhenTheOffsetMoves) {
  FakeClocks f;
  ClockMap m(f.Foreign(), f.Monotonic());
  m.Calibrate(1);
  const uint64_t f0 = f.mono + f.offset;
  f.mono += 1'000'000'000;
  f.offset += 1000;  // the foreign clock gained 1 us over one second
  m.Calibrate(1);
  const uint64_t f1 = f.mono + f.offset;
  const uint64_t mid = f0 + (f1 - f0) / 2;
  // Halfway between the points the correction is halfway between the offsets.
  const int64_t expected = static_cast<int64_t>(mid) - (f.offset - 500);
  EXPECT_NEAR(static_cast<double>(m.ToMonotonic(mid)), static_cast<double>(expected), 20.0);
  // Past the last point the last offset holds.
  EXPECT_NEAR(static_cast<double>(m.ToMonotonic(f1 + 5000)),
              static_cast<double>(static_cast<int64_t>(f1 + 5000) - f.offset), 20.0);
}

TEST(ClockMap, ClosePointsMergeKeepingTheTighterOne) {
  FakeClocks f;
  ClockMap m(f.Foreign(), f.Monotonic());
  m.Calibrate(1);
  f.step = 2;  // a tighter bracket 1 ms later
  f.mono += 1'000'000;
  f.offset += 300;  // noise that would become a slope between close points
  m.Calibrate(1);
  EXPECT_EQ(m.points(), 1u);
  const uint64_t foreign = f.mono + f.offset;
  EXPECT_NEAR(static_cast<double>(m.ToMonotonic(foreign)),
              static_cast<double>(static_cast<int64_t>(foreign) - f.offset), 5.0);
}

TEST(ClockMap, KeepsTheTightestBracket) {
  uint64_t mono = 0;
  int call = 0;
  // The second sample's bracket is the narrowest; its reading must win.
  ClockMap m([&] { return uint64_t{1'000'000} + mono; },
             [&] {
               ++call;
               mono += (call == 3 || call == 4) ? 2 : 1000;
               return mono;
             });
  EXPECT_EQ(m.Calibrate(3), 1);
}

TEST(ClockMap, RealClocksAgreeWithinMicroseconds) {
  // CLOCK_REALTIME onto CLOCK_MONOTONIC, as with CUPTI's default timestamps.
  ClockMap m([] {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
  });
  m.Calibrate();
  // The realtime read lies between two monotonic reads; its mapping must too (give or take the
  // calibration's own bracket, a few microseconds even on a loaded machine).
  auto mono_now = [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  };
  const int64_t before = mono_now();
  timespec r;
  clock_gettime(CLOCK_REALTIME, &r);
  const int64_t after = mono_now();
  const uint64_t real = static_cast<uint64_t>(r.tv_sec) * 1'000'000'000u + r.tv_nsec;
  const int64_t mapped = m.ToMonotonic(real);
  EXPECT_GE(mapped, before - 50'000);
  EXPECT_LE(mapped, after + 50'000);
}

}  // namespace
}  // namespace ncclrr::gputiming
