#pragma once
// What the host passes to the sketch kernel and what the kernel writes back: plain structs shared
// by SketchDevice (host side), the CUDA kernel and its host emulator. Changing a layout here
// changes both sides at once; the static_asserts pin the sizes the driver API copies.
#include <cstdint>

#include "sketch_core.h"

namespace ncclrr::sketch::kabi {

inline constexpr int kMaxJobs = 16;     // sketches fused into one launch (1.8 KB of parameters)
inline constexpr int kWarpsPerCta = 8;  // chunks processed per round
inline constexpr int kThreadsPerCta = kWarpsPerCta * core::kLanes;
inline constexpr uint32_t kCtasPerSm = 2;  // resident at once: the kernel's __launch_bounds__
inline constexpr uint32_t kModeFull = 1;   // SketchMode bits
inline constexpr uint32_t kModeRace = 2;
inline constexpr uint32_t kModeReplayed = 4;  // captured into a graph: relaunched while polled

// Per-slot device state: the CTA arrival counter of the launch in flight and the number of
// launches completed (written by the last CTA; a graph replays the same launch many times).
struct SlotControl {
  uint32_t arrived;
  uint32_t pad;
  uint64_t generation;
};

// Pinned, host-mapped header of a slot. The last CTA writes begin = generation, then the results,
// then done = generation (each after a system-scope fence): the host reads done, the results,
// then begin, and accepts them when begin == done (a seqlock against graph relaunches).
struct SlotHeader {
  volatile uint64_t begin;
  volatile uint64_t done;
  uint64_t pad[6];
};
static_assert(sizeof(SlotHeader) == 64);

struct Job {
  const void* data;  // device pointer to block 0
  uint64_t block_count;
  uint64_t g0;
  uint64_t gstride;
  uint32_t nblocks;
  uint32_t dtype;
  uint32_t mode;             // kModeFull | kModeRace, kModeReplayed
  uint32_t tile_chunks;      // T: chunks per tile, a power of two >= 8
  uint32_t tiles_per_block;  // ceil(chunks per block / T), at least 1
  uint32_t samples_per_block;
  uint32_t race_samples;
  uint32_t cta_begin;       // first CTA of this job in the launch
  core::Partial* scratch;   // device: [2][nblocks * tiles_per_block] (main, then race)
  SlotControl* control;     // device
  SlotHeader* header;       // host-mapped
  core::Partial* out_main;  // host-mapped: [nblocks]
  core::Partial* out_race;  // host-mapped: [nblocks]
  double* out_samples;      // host-mapped: [nblocks * samples_per_block + race_samples]
};
static_assert(sizeof(Job) == 112);

struct Launch {
  uint32_t njobs;
  uint32_t total_ctas;
  Job jobs[kMaxJobs];
};
static_assert(sizeof(Launch) == 8 + kMaxJobs * sizeof(Job));
static_assert(sizeof(Launch) <= 4096, "kernel parameters are limited to 4 KB");

NCCLRR_HD uint32_t JobCtas(const Job& j) { return j.nblocks * j.tiles_per_block; }

}  // namespace ncclrr::sketch::kabi
