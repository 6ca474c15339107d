// Bandwidth and small-call cost of the sketch kernels (part of sketch_gpu_check).
#include <chrono>
#include <string>

#include "ncclrr/trace/records.h"
#include "sketch_gpu_check.h"

namespace ncclrr::sketch::gpucheck {
namespace {

// Reads every byte once (16-byte loads, grid-stride): the read bandwidth a sketch can hope for.
__global__ void ReadKernel(const uint4* p, size_t n, unsigned long long* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // keeps the loads alive
}

__global__ void EmptyKernel() {}

// Seconds per iteration of `body` over `reps`, timed with events on `stream`.
template <class F>
double Time(cudaStream_t stream, int reps, F body) {
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  body();  // warm-up
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaEventRecord(a, stream));
  for (int i = 0; i < reps; ++i) body();
  CUDA_OK(cudaEventRecord(b, stream));
  CUDA_OK(cudaEventSynchronize(b));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, a, b));
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  return ms / 1e3 / reps;
}

// Enqueues `reps` sketches of `req` back to back, then collects them all.
double TimeSketches(SketchDevice& dev, cudaStream_t stream, const void* data,
                    const SketchRequest& req, int reps) {
  std::vector<SketchDevice::SlotId> slots;
  const double t = Time(stream, reps, [&] {
    auto s = dev.Enqueue(stream, {{data, req}});
    if (s.ok()) slots.push_back((*s)[0]);
  });
  for (auto s : slots) Wait(dev, s);
  return slots.size() == size_t(reps) + 1 ? t : -1;
}

}  // namespace

void Bandwidth(SketchDevice& dev, cudaStream_t stream, double mb, const cudaDeviceProp& prop) {
  const size_t bytes = size_t(mb * 1e6) / 4096 * 4096;
  uint8_t *buf = nullptr, *dst = nullptr;
  unsigned long long* sink = nullptr;
  CUDA_OK(cudaMalloc(&buf, bytes));
  CUDA_OK(cudaMalloc(&dst, bytes));
  CUDA_OK(cudaMalloc(&sink, 8));
  CUDA_OK(cudaMemset(buf, 0x11, bytes));  // finite in every float format
  const int grid = prop.multiProcessorCount * 8;
  const double t_read = Time(stream, 10, [&] {
    ReadKernel<<<grid, 256, 0, stream>>>(reinterpret_cast<const uint4*>(buf), bytes / 16, sink);
  });
  const double t_copy = Time(stream, 10, [&] {
    CUDA_OK(cudaMemcpyAsync(dst, buf, bytes, cudaMemcpyDeviceToDevice, stream));
  });
  const double read_gbs = bytes / t_read / 1e9, copy_gbs = 2 * bytes / t_copy / 1e9;
  Log("bandwidth over %.0f MB: read kernel %.0f GB/s, device copy %.0f GB/s (read+write)\n",
      bytes / 1e6, read_gbs, copy_gbs);
  Log("%-9s %-10s %10s %12s %12s\n", "dtype", "mode", "GB/s", "of read", "of copy/2");
  double f32_share = 0;
  for (Dtype d : {Dtype::kFloat32, Dtype::kBfloat16, Dtype::kFloat16, Dtype::kFloat8e4m3,
                  Dtype::kFloat64, Dtype::kInt32, Dtype::kInt8}) {
    for (SketchMode mode : {SketchMode::kFull, SketchMode::kFullAndRace, SketchMode::kRaceOnly}) {
      if (mode != SketchMode::kFull && d != Dtype::kFloat32 && d != Dtype::kBfloat16) continue;
      SketchRequest req;
      req.layout.dtype = uint8_t(d);
      req.layout.block_count = bytes / DtypeSize(uint8_t(d));
      req.mode = mode;
      const double t = TimeSketches(dev, stream, buf, req, 10);
      const double gbs = t > 0 ? bytes / t / 1e9 : 0;
      const char* name = mode == SketchMode::kFull          ? "full"
                         : mode == SketchMode::kFullAndRace ? "full+race"
                                                            : "race-only";
      Log("%-9s %-10s %10.0f %11.0f%% %11.0f%%\n", std::string(DtypeName(uint8_t(d))).c_str(), name,
          gbs, 100 * gbs / read_gbs, 100 * gbs / (copy_gbs / 2));
      if (d == Dtype::kFloat32 && mode == SketchMode::kFull) f32_share = gbs / read_gbs;
    }
  }
  Log("float32 full sketch: %.0f%% of the read kernel's bandwidth (target >= 70%%): %s\n",
      100 * f32_share, f32_share >= 0.70 ? "met" : "NOT met");
  // By size: where a sketch's fixed cost ends and bandwidth begins; `forked` is EnqueueForked
  // (at most half the SMs, on a side stream joined at once), as record --sketch runs an
  // out-of-place call's send side.
  Log("float32 full sketch by size (us per sketch, back to back; read kernel on the same "
      "bytes):\n");
  for (size_t mb : {1, 8, 32, 128, 512}) {
    const size_t n = mb << 20;
    if (n > bytes) break;
    const SketchRequest req = FloatRequest(n / 4);
    const double t_sk = TimeSketches(dev, stream, buf, req, 10);
    const double t_rd = Time(stream, 10, [&] {
      ReadKernel<<<grid, 256, 0, stream>>>(reinterpret_cast<const uint4*>(buf), n / 16, sink);
    });
    std::vector<SketchDevice::SlotId> slots;
    const double t_fk = Time(stream, 10, [&] {
      SketchDevice::Fork fork;
      auto sl = dev.EnqueueForked(stream, {{buf, req}}, &fork);
      dev.JoinFork(fork);
      if (sl.ok()) slots.push_back((*sl)[0]);
    });
    for (auto sl : slots) Wait(dev, sl);
    Log("  %4zu MB: sketch %8.1f us (%5.0f GB/s), forked %8.1f us (%5.0f GB/s), read %8.1f us "
        "(%5.0f GB/s)\n",
        mb, t_sk * 1e6, n / t_sk / 1e9, t_fk * 1e6, n / t_fk / 1e9, t_rd * 1e6, n / t_rd / 1e9);
  }
  // Small calls: GPU time per sketch against an empty kernel on the same stream, and the host
  // time of one Enqueue.
  const double t_empty = Time(stream, 100, [&] { EmptyKernel<<<1, 32, 0, stream>>>(); });
  Log("small calls: empty kernel %.2f us per launch (GPU, back to back)\n", t_empty * 1e6);
  for (uint64_t n : {uint64_t(2), uint64_t(1024), uint64_t(262144), uint64_t(4u << 20)}) {
    const SketchRequest req = FloatRequest(n);
    const double t = TimeSketches(dev, stream, buf, req, 100);
    const auto h0 = std::chrono::steady_clock::now();
    std::vector<SketchDevice::SlotId> slots;
    for (int i = 0; i < 100; ++i) slots.push_back((*dev.Enqueue(stream, {{buf, req}}))[0]);
    const double host_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count() /
        100;
    for (auto s : slots) Wait(dev, s);
    Log("  float32 x %-8llu sketch %7.2f us GPU (%.2fx empty kernel), Enqueue %.2f us host\n",
        (unsigned long long)n, t * 1e6, t / t_empty, host_us);
  }
  // A group of 16 small calls: record --sketch fuses their halves into one launch per stream.
  for (uint64_t n : {uint64_t(2), uint64_t(1024), uint64_t(65536)}) {
    const SketchRequest req = FloatRequest(n);
    const std::vector<DeviceSketchRequest> group(16, DeviceSketchRequest{buf, req});
    std::vector<SketchDevice::SlotId> slots;
    const int reps = 6;  // (reps + 1) * 16 slots in flight at once: within the default 128
    const double t = Time(stream, reps, [&] {
      auto s = dev.Enqueue(stream, group);
      if (s.ok()) slots.insert(slots.end(), s->begin(), s->end());
    });
    for (auto s : slots) Wait(dev, s);
    if (slots.size() != size_t(reps + 1) * 16) {
      Log("  float32 x %-8llu 16 fused: Enqueue failed\n", (unsigned long long)n);
      continue;
    }
    Log("  float32 x %-8llu 16 fused per launch: %7.2f us GPU per sketch (%.2fx empty kernel; "
        "target <= 1.2x)\n",
        (unsigned long long)n, t / 16 * 1e6, t / 16 / t_empty);
  }
  CUDA_OK(cudaFree(buf));
  CUDA_OK(cudaFree(dst));
  CUDA_OK(cudaFree(sink));
}

}  // namespace ncclrr::sketch::gpucheck
