#include "gpu_sharing.h"

#include <unistd.h>

#include <algorithm>

#include "call_layout.h"
#include "plan.h"

namespace ncclrr::replay {
namespace {

constexpr int kMultiRankGpuVersion = 23000;  // NCCL 2.30.0

}  // namespace

int GpuPlacement::SharersOf(int slot) const {
  if (gpus <= 0 || processes <= 0) return 1;
  const int n = processes / gpus + (slot < processes % gpus ? 1 : 0);
  return n > 0 ? n : 1;
}

std::vector<std::pair<std::string, std::string>> GpuPlacement::EnvFor(
    int index, const std::string& host) const {
  switch (sharing) {
    case GpuSharing::kNone:
      return {};
    case GpuSharing::kMultiRankGpu:
      return {{"NCCL_MULTI_RANK_GPU_ENABLE", "1"}};
    case GpuSharing::kHostIds:
      return {{"NCCL_HOSTID", host + "-ncclrr-replay-" + std::to_string(index / gpus)}};
  }
  return {};
}

std::string GpuPlacement::Describe() const {
  std::string s = std::to_string(processes) + " process(es)";
  if (gpus <= 0) return s + " on the host NCCL";
  s += " on " + std::to_string(gpus) + " GPU(s)";
  if (sharing == GpuSharing::kNone) return s + ", one per GPU";
  s += " (up to " + std::to_string(MaxPerGpu()) + " per GPU; ";
  s += sharing == GpuSharing::kHostIds
           ? "each group its own NCCL_HOSTID, so ranks that share a GPU connect through NCCL's "
             "network transport"
           : "NCCL_MULTI_RANK_GPU_ENABLE=1";
  return s + "): results, pairing and hangs are real NCCL's; timings are not representative";
}

GpuPlacement PlaceOnGpus(int processes, int gpus, int nccl_version) {
  GpuPlacement p;
  p.processes = processes;
  p.gpus = gpus;
  if (gpus > 0 && processes > gpus)
    p.sharing =
        nccl_version >= kMultiRankGpuVersion ? GpuSharing::kMultiRankGpu : GpuSharing::kHostIds;
  return p;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "host";
  return name;
}

}  // namespace ncclrr::replay

namespace ncclrr::replay {

uint64_t LargestBlock(const ReplayPlan& plan, uint32_t actor) {
  uint64_t largest = 0;
  for (uint32_t u : plan.actors[actor].units) {
    uint64_t block = 0;
    for (uint32_t idx : plan.units[u].calls) block += LayoutOf(plan.calls[idx]).bytes;
    largest = std::max(largest, block);
  }
  return largest;
}

Status CheckMemoryFits(const ReplayPlan& plan, const GpuPlacement& placement, uint64_t per_gpu) {
  if (placement.sharing == GpuSharing::kNone) return Status::Ok();
  for (uint32_t a = 0; a < plan.actors.size(); ++a) {
    const int slot = placement.SlotOf(static_cast<int>(a));
    const uint64_t share = per_gpu / static_cast<uint64_t>(placement.SharersOf(slot));
    const uint64_t need = LargestBlock(plan, a);
    if (need <= share) continue;
    auto mib = [](uint64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20); };
    return InvalidArgument(
        "the recorded buffers do not fit: the rank of " + plan.actors[a].label + " needs " +
        mib(need) + " MiB for its largest call, but " + std::to_string(placement.SharersOf(slot)) +
        " ranks share GPU " + std::to_string(slot) + " and get " + mib(share) + " MiB each of " +
        mib(per_gpu) + " MiB (about " + mib(need * placement.SharersOf(slot)) +
        " MiB needed on that GPU); raise NCCLRR_REPLAY_MEMORY_MB if the GPU has it, or replay "
        "on more GPUs");
  }
  return Status::Ok();
}

}  // namespace ncclrr::replay
