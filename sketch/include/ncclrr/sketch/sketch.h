#pragma once
// Linear sketches of NCCL buffers (docs/design.md "Data checks"; the algorithm in
// docs/sketches.md).
//
// A sketch of a block of elements that sits at global index range [first, first + count) of a
// collective's logical result holds 16 signed projections (dots), Σx², the NaN/±Inf counts
// (non-finite elements are left out of the dots) and up to 256 raw values at fixed sampled
// indices. Because the signs depend on the global index only, sketches are linear across ranks:
// sketch(Σ_r x_r at g) = Σ_r sketch(x_r at g) up to rounding, and exactly for integer types.
//
// This header is the host implementation; SketchDevice (device.h) computes the same bits on the
// GPU. Thread-safe: every function here is pure.
#include <cstdint>
#include <optional>
#include <vector>

#include "ncclrr/base/status.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr::sketch {

inline constexpr uint64_t kChunkElems = 4096;    // elements per fp32 partial
inline constexpr uint32_t kMaxSamples = 256;     // raw values per sketch at most
inline constexpr uint64_t kRaceChunkStride = 8;  // the race sample covers chunks c % 8 == 0

// A buffer of `nblocks` consecutive blocks of `block_count` elements. Block b sits at global
// indices [first(b), first(b) + block_count) of the collective's logical result (plan.h says
// which layout each collective uses on each side).
struct BlockLayout {
  uint8_t dtype = 7;  // ncclDataType_t (ncclrr::Dtype)
  uint64_t block_count = 0;
  uint32_t nblocks = 1;
  uint64_t g0 = 0;       // global index of block 0's first element
  uint64_t gstride = 0;  // global distance between consecutive blocks
  uint64_t total() const { return block_count * nblocks; }
  uint64_t first(uint32_t b) const { return g0 + uint64_t(b) * gstride; }
};

enum class SketchMode : uint8_t {
  kFull = 1,         // one sketch per block
  kRaceOnly = 2,     // only the race sample: chunks c % 8 == 0 of every block, plus samples
  kFullAndRace = 3,  // both in one pass (what the before-call sketch of a send buffer uses)
};
inline bool HasFull(SketchMode m) { return (uint8_t(m) & 1) != 0; }
inline bool HasRace(SketchMode m) { return (uint8_t(m) & 2) != 0; }

struct SketchRequest {
  BlockLayout layout;
  SketchMode mode = SketchMode::kFull;
  uint32_t samples_per_block = kMaxSamples;  // 0..256 raw values per block sketch
  uint32_t race_samples = kMaxSamples;       // 0..256 raw values over the whole buffer (race)
};

struct SketchResult {
  // One per block (empty for kRaceOnly). which = kSendBefore and call_uid = 0: callers set them.
  std::vector<SketchData> blocks;
  // The race sample (modes with race): dots, Σx² and counts over the sampled chunks of every
  // block; count = layout.total(), first = layout.g0; samples over the whole buffer.
  // which = kSendAfterSample: a before-call twin must be re-labelled by the caller.
  std::optional<SketchData> race;
};

// What is wrong with a request (unknown dtype, more samples than 256, nblocks == 0).
Status ValidateRequest(const SketchRequest& request);

// Sketches `data` (host memory holding layout.total() elements) as requested.
StatusOr<SketchResult> SketchHost(const void* data, const SketchRequest& request);

// One block at global index `first`, kFull mode. The dtype must be valid (checked: an invalid
// one yields a sketch with count = 0).
SketchData SketchHostBlock(const void* data, uint8_t dtype, uint64_t count, uint64_t first,
                           uint32_t samples = kMaxSamples);

// The block-local indices of a sketch of n elements with m samples (min(n, m) of them): a
// deterministic function of (n, m), so sketches of equal-sized buffers sample the same places.
std::vector<uint64_t> SampleIndices(uint64_t n, uint32_t m);

// Number of chunks a block of `count` elements is split into.
inline uint64_t ChunkCount(uint64_t count) { return (count + kChunkElems - 1) / kChunkElems; }

}  // namespace ncclrr::sketch
