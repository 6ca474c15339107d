#pragma once
// What GpuTimer asks of a source of GPU times (CUPTI or event pairs). The facade (gpu_timer.cc)
// keeps the per-thread scope state and names every launch scope with an external id: a call's
// uid, kGroupTag|n for an outermost ncclGroupEnd, kGraphLaunchTag|n for a graph launch.
#include <cstddef>
#include <functional>
#include <string>

#include "ncclrr/gputiming/gpu_timer.h"

namespace ncclrr::gputiming {

using EmitFn = std::function<void(const GpuTimeRecord&)>;
using NoteFn = std::function<void(const std::string&)>;

class TimingSource {
 public:
  virtual ~TimingSource() = default;
  virtual GpuTimeSource kind() const = 0;
  virtual std::string Describe() const = 0;

  // Brackets the code that may launch the kernels of `members` (called on the launching thread).
  // BeginScope returns what EndScope needs back (a source-defined token, 0 if nothing).
  virtual uint64_t BeginScope(uint64_t ext_id, const TimedCall* members, size_t n) = 0;
  virtual void EndScope(uint64_t ext_id, uint64_t token, const TimedCall* members, size_t n) = 0;

  virtual void AddGraphTemplate(uint64_t graph, const TimedCall& call, uint64_t group_id) = 0;
  virtual uint64_t BeginGraphLaunch(uint64_t ext_id, uint64_t graph) = 0;
  virtual void EndGraphLaunch(uint64_t ext_id, uint64_t token) = 0;
  virtual void ForgetGraph(uint64_t graph) = 0;

  // The next Collect also takes records still held in partly filled buffers (CUPTI keeps a
  // buffer until it is full; GPU progress needs an ended kernel's record while the GPU stalls).
  virtual void FlushHeldRecords() {}
  // Emits what completed; `final` emits everything that can still be attributed.
  virtual void Collect(bool final, const EmitFn& emit, const NoteFn& note) = 0;
  // A final Collect, then releases what the source holds. Scopes still open are ended safely.
  virtual void Stop(const EmitFn& emit, const NoteFn& note) = 0;
  virtual void AddStats(GpuTimerStats* stats) const = 0;
};

}  // namespace ncclrr::gputiming
