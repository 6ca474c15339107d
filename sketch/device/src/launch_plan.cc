#include "launch_plan.h"

#include <string>
#include <vector>

#include "finish.h"

namespace ncclrr::sketch {

Status PlanJob(const SketchRequest& request, uint32_t max_tiles, kabi::Job& job) {
  NCCLRR_RETURN_IF_ERROR(ValidateRequest(request));
  const BlockLayout& l = request.layout;
  if (l.nblocks > max_tiles)
    return InvalidArgument("sketch: " + std::to_string(l.nblocks) +
                           " blocks in one sketch exceed the device limit of " +
                           std::to_string(max_tiles) + "; split the request");
  const uint64_t chunks = ChunkCount(l.block_count);
  uint64_t tile = 8;
  auto tiles_for = [&](uint64_t t) { return chunks == 0 ? 1 : (chunks + t - 1) / t; };
  while (uint64_t(l.nblocks) * tiles_for(tile) > max_tiles) tile *= 2;
  job.block_count = l.block_count;
  job.g0 = l.g0;
  job.gstride = l.gstride;
  job.nblocks = l.nblocks;
  job.dtype = l.dtype;
  job.mode = uint32_t(request.mode);
  job.tile_chunks = uint32_t(tile);
  job.tiles_per_block = uint32_t(tiles_for(tile));
  job.samples_per_block = request.samples_per_block;
  job.race_samples = request.race_samples;
  return Status::Ok();
}

uint32_t JobSampleSlots(const kabi::Job& job) {
  return ((job.mode & kabi::kModeFull) ? job.nblocks * job.samples_per_block : 0) +
         ((job.mode & kabi::kModeRace) ? job.race_samples : 0);
}

SketchResult ReadJobResults(const SketchRequest& request, const kabi::Job& job) {
  const BlockLayout& l = request.layout;
  SketchResult result;
  const uint32_t per_block = (job.mode & kabi::kModeFull) ? job.samples_per_block : 0;
  if (job.mode & kabi::kModeFull) {
    const uint32_t n = core::SampleCount(l.block_count, per_block);
    for (uint32_t b = 0; b < l.nblocks; ++b)
      result.blocks.push_back(
          MakeBlockSketch(job.out_main[b], l, b, job.out_samples + b * per_block, n));
  }
  if (job.mode & kabi::kModeRace) {
    std::vector<core::Partial> race(job.out_race, job.out_race + l.nblocks);
    result.race = MakeRaceSketch(CombineRaceBlocks(std::move(race), l.dtype), l,
                                 job.out_samples + l.nblocks * per_block,
                                 core::SampleCount(l.total(), job.race_samples));
  }
  return result;
}

}  // namespace ncclrr::sketch
