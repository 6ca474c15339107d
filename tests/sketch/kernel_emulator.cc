#include "kernel_emulator.h"

#include <ucontext.h>

#include <cstring>

#include "float_env.h"
#include "kernel_body.h"
#include "launch_plan.h"

namespace ncclrr::sketch::test {
namespace {

constexpr int kThreads = kabi::kThreadsPerCta;
constexpr int kWarps = kabi::kWarpsPerCta;
constexpr size_t kStackBytes = 64 * 1024;

// One CTA as 256 cooperative fibers on the calling thread (ucontext): a barrier yields until the
// last participant arrives. Deterministic, and far cheaper than 256 OS threads on a small CI box.
class FiberCta {
 public:
  FiberCta() : stacks_(size_t(kThreads) * kStackBytes), fibers_(kThreads) {}

  void CtaBarrier() { Barrier(cta_count_, cta_gen_, kThreads); }
  void WarpBarrier(int warp) { Barrier(warp_count_[warp], warp_gen_[warp], core::kLanes); }

  template <class Body>
  void Run(Body& body) {
    body_ = &body;
    run_one_ = [](FiberCta* self, int t) { (*static_cast<Body*>(self->body_))(t); };
    done_.assign(kThreads, false);
    for (int t = 0; t < kThreads; ++t) {
      getcontext(&fibers_[t]);
      fibers_[t].uc_stack.ss_sp = stacks_.data() + size_t(t) * kStackBytes;
      fibers_[t].uc_stack.ss_size = kStackBytes;
      fibers_[t].uc_link = &scheduler_;
      makecontext(&fibers_[t], reinterpret_cast<void (*)()>(&Entry), 1, t);
    }
    for (int remaining = kThreads; remaining > 0;) {
      remaining = 0;
      for (int t = 0; t < kThreads; ++t) {
        if (done_[t]) continue;
        current_ = t;
        active_ = this;
        swapcontext(&scheduler_, &fibers_[t]);
        remaining += !done_[t];
      }
    }
  }

 private:
  static void Entry(int t) {
    FiberCta* self = active_;
    self->run_one_(self, t);
    self->done_[t] = true;
  }
  void Yield() { swapcontext(&fibers_[current_], &scheduler_); }
  void Barrier(int& count, uint64_t& gen, int parties) {
    const uint64_t g = gen;
    if (++count == parties) {
      count = 0;
      ++gen;
      return;
    }
    while (gen == g) Yield();
  }

  static inline thread_local FiberCta* active_ = nullptr;
  std::vector<uint8_t> stacks_;
  std::vector<ucontext_t> fibers_;
  ucontext_t scheduler_{};
  std::vector<bool> done_;
  int current_ = 0;
  void* body_ = nullptr;
  void (*run_one_)(FiberCta*, int) = nullptr;
  int cta_count_ = 0;
  uint64_t cta_gen_ = 0;
  int warp_count_[kWarps] = {};
  uint64_t warp_gen_[kWarps] = {};
};

struct EmuCta {
  FiberCta fibers;
  uint64_t exchange[2][kWarps][core::kLanes];
  uint8_t parity[kThreads] = {};
  kbody::CtaShared shared;
};

struct EmuExec {
  EmuCta* c;
  int t;
  uint32_t block;
  int tid() const { return t; }
  uint32_t cta() const { return block; }
  void sync() { c->fibers.CtaBarrier(); }
  void sync_warp() { c->fibers.WarpBarrier(t / core::kLanes); }
  template <typename T>
  T shfl_down(T v, int offset) {
    const int w = t / core::kLanes, l = t % core::kLanes;
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    // Double-buffered: the next shuffle writes the other buffer, and the one after it cannot
    // start before every lane has passed the next barrier, i.e. read this one.
    uint64_t* buf = c->exchange[c->parity[t]][w];
    c->parity[t] ^= 1;
    buf[l] = bits;
    c->fibers.WarpBarrier(w);
    const uint64_t got = buf[l + offset < core::kLanes ? l + offset : l];
    T out;
    std::memcpy(&out, &got, sizeof(T));
    return out;
  }
  uint32_t atomic_add(uint32_t* p, uint32_t v) {
    const uint32_t old = *p;  // fibers of one OS thread: no concurrent access
    *p = old + v;
    return old;
  }
  void fence() {}
  void fence_system() {}
  uint64_t load_cg(const uint64_t* p) { return *p; }
};

template <class D>
void RunCta(const kabi::Launch& launch, uint32_t block) {
  static thread_local auto cta = std::make_unique<EmuCta>();
  auto body = [&](int t) {
    EmuExec x{cta.get(), t, block};
    kbody::CtaMain<D>(x, launch, cta->shared);
  };
  std::memset(&cta->shared, 0xa5, sizeof(cta->shared));  // stale shared memory must not matter
  std::memset(cta->parity, 0, sizeof(cta->parity));
  cta->fibers.Run(body);
}

}  // namespace

Status PrepareJob(const void* data, const SketchRequest& request, uint32_t max_tiles,
                  kabi::Job& job, EmulatedSlot& slot) {
  job = kabi::Job{};
  NCCLRR_RETURN_IF_ERROR(PlanJob(request, max_tiles, job));
  slot.scratch.assign(2 * size_t(kabi::JobCtas(job)), core::Partial{});
  // Garbage in the scratch must not matter: the kernel writes before it reads.
  for (auto& p : slot.scratch) std::memset(&p, 0x5a, sizeof p);
  slot.out_main.assign(job.nblocks, core::Partial{});
  slot.out_race.assign(job.nblocks, core::Partial{});
  slot.samples.assign(JobSampleSlots(job) + 1, -1.0);
  job.data = data;
  job.scratch = slot.scratch.data();
  job.control = &slot.control;
  job.header = &slot.header;
  job.out_main = slot.out_main.data();
  job.out_race = slot.out_race.data();
  job.out_samples = slot.samples.data();
  return Status::Ok();
}

void EmulateLaunch(const kabi::Launch& launch, bool reverse) {
  for (uint32_t i = 0; i < launch.total_ctas; ++i) {
    const uint32_t block = reverse ? launch.total_ctas - 1 - i : i;
    uint32_t j = 0;
    while (j + 1 < launch.njobs && block >= launch.jobs[j + 1].cta_begin) ++j;
    IeeeFloatScope ieee;
    core::DispatchDtype(launch.jobs[j].dtype,
                        [&](auto traits) { RunCta<decltype(traits)>(launch, block); });
  }
}

StatusOr<SketchResult> EmulateSketch(const void* data, const SketchRequest& request,
                                     uint32_t max_tiles) {
  EmulatedSlot slot;
  kabi::Launch launch{};
  NCCLRR_RETURN_IF_ERROR(PrepareJob(data, request, max_tiles, launch.jobs[0], slot));
  launch.njobs = 1;
  launch.total_ctas = kabi::JobCtas(launch.jobs[0]);
  EmulateLaunch(launch, true);
  if (slot.header.done != 1 || slot.header.begin != 1)
    return Corrupt("emulated kernel did not publish generation 1");
  return ReadJobResults(request, launch.jobs[0]);
}

}  // namespace ncclrr::sketch::test
