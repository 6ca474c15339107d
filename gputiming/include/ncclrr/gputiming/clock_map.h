#pragma once
// ClockMap: maps another clock (CUPTI's timestamps, which are CLOCK_REALTIME on Linux by default,
// or a GPU's globaltimer) onto the host's CLOCK_MONOTONIC, the clock of every trace record.
//
// Calibrate() reads the foreign clock between two monotonic reads several times and keeps the
// tightest bracket, so one point is accurate to about half that bracket (tens of ns). Points are
// taken at start and at every collection; a timestamp is mapped by the offset interpolated
// between the two points around it (the offset moves when NTP slews CLOCK_REALTIME), or by the
// nearest point's offset outside them. Points closer than `min_spacing_ns` are merged (the
// tighter one stays): interpolating between close points would turn their noise into a slope.
//
// ncclrr does not install a CUPTI timestamp callback to get monotonic stamps directly: that
// callback is process-wide and would change the clock of the job's own CUPTI client (the PyTorch
// profiler aligns CUPTI records with its host events).
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace ncclrr::gputiming {

class ClockMap {
 public:
  using Clock = std::function<uint64_t()>;
  // `foreign` reads the other clock; `monotonic` defaults to CLOCK_MONOTONIC (tests pass fakes).
  explicit ClockMap(Clock foreign, Clock monotonic = nullptr, size_t max_points = 256,
                    int64_t min_spacing_ns = 50'000'000);

  // Adds a calibration point; returns the half-width of its bracket in ns (its uncertainty).
  int64_t Calibrate(int samples = 5);
  // `foreign_ns` on CLOCK_MONOTONIC. Without any point, returns it unchanged.
  int64_t ToMonotonic(uint64_t foreign_ns) const;
  size_t points() const;

 private:
  struct Point {
    uint64_t foreign;
    int64_t offset;  // monotonic - foreign
    int64_t width;   // of the monotonic bracket it was read in
  };
  Clock foreign_, monotonic_;
  size_t max_points_;
  int64_t min_spacing_ns_;
  mutable std::mutex mu_;
  std::vector<Point> points_;  // increasing `foreign`
};

}  // namespace ncclrr::gputiming
