// GPU acceptance of the sketch kernels (run by tests/gpu/sketch_gpu.sh on a GPU machine):
//  1. SketchDevice equals SketchHost bit for bit: every datatype, 1 / 7 / 4096 / 4097 / 1 M /
//     64 M elements, full+race and race-only modes, misaligned and multi-block buffers.
//  2. Stream order: a sketch enqueued between two memsets sees the first one only.
//  3. Graph capture: a sketch captured into a graph (first use of the context inside the
//     capture) reports every replay with the data of that replay.
//  4. Bandwidth: sketch throughput against a read-only kernel and a device-to-device copy; the
//     cost of a small sketch against an empty kernel on the same stream.
// Usage: sketch_gpu_check [--out DIR] [--quick] [--bench-mb N]. Exit 0 when 1-3 pass.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ncclrr/records.h"
#include "ncclrr/sketch/device.h"
#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/sketch.h"
#include "sketch_gpu_check.h"

using namespace ncclrr;
using namespace ncclrr::sketch;

namespace ncclrr::sketch::gpucheck {

std::string g_log;
void Log(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::fputs(buf, stdout);
  std::fflush(stdout);
  g_log += buf;
}

// Random elements of any datatype: a table of 4096 encoded random values (normal(0, 3) for
// floats, integers up to 2^52 wrapped into the type) sampled by a fast generator, with a few NaN/Inf for floats.
std::vector<uint8_t> RandomBytes(uint8_t dtype, uint64_t n, uint64_t seed) {
  const size_t size = DtypeSize(dtype);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 3);
  std::vector<uint8_t> table(4096 * size);
  for (int i = 0; i < 4096; ++i) {
    const double v = dtype <= uint8_t(Dtype::kUint64) ? double(int64_t(rng()) >> 11) : normal(rng);
    EncodeElement(dtype, v, table.data() + i * size);
  }
  std::vector<uint8_t> bytes(n * size + 64);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(bytes.data() + i * size, table.data() + (x % 4096) * size, size);
  }
  if (IsFloatDtype(dtype) && n > 10) {
    EncodeElement(dtype, NAN, bytes.data() + (n / 3) * size);
    if (dtype != uint8_t(Dtype::kFloat8e4m3)) {  // fp8 encoders saturate: write Inf bit patterns
      const uint8_t e5m2_inf = 0x7c;
      if (size == 1)
        bytes[(n / 2) * size] = e5m2_inf;
      else
        EncodeElement(dtype, INFINITY, bytes.data() + (n / 2) * size);
    }
  }
  return bytes;
}

bool SameSketch(const SketchData& a, const SketchData& b, std::string* why) {
  auto fail = [&](const std::string& w) {
    *why = w;
    return false;
  };
  if (std::memcmp(a.dots.data(), b.dots.data(), sizeof(a.dots)) != 0) {
    for (int k = 0; k < 16; ++k)
      if (std::memcmp(&a.dots[k], &b.dots[k], 8) != 0)
        return fail("dot " + std::to_string(k) + ": host " + std::to_string(a.dots[k]) +
                    " device " + std::to_string(b.dots[k]));
  }
  if (std::memcmp(&a.sumsq, &b.sumsq, 8) != 0)
    return fail("sumsq host " + std::to_string(a.sumsq) + " device " + std::to_string(b.sumsq));
  if (a.nan != b.nan || a.posinf != b.posinf || a.neginf != b.neginf) return fail("counts");
  if (a.count != b.count || a.first != b.first) return fail("count/first");
  if (a.sample_idx != b.sample_idx || a.samples.size() != b.samples.size() ||
      std::memcmp(a.samples.data(), b.samples.data(), a.samples.size() * 8) != 0)
    return fail("samples");
  return true;
}

bool SameResult(const SketchResult& h, const SketchResult& d, std::string* why) {
  if (h.blocks.size() != d.blocks.size() || h.race.has_value() != d.race.has_value()) {
    *why = "shape";
    return false;
  }
  for (size_t b = 0; b < h.blocks.size(); ++b)
    if (!SameSketch(h.blocks[b], d.blocks[b], why)) {
      *why = "block " + std::to_string(b) + ": " + *why;
      return false;
    }
  if (h.race && !SameSketch(*h.race, *d.race, why)) {
    *why = "race: " + *why;
    return false;
  }
  return true;
}

std::optional<DeviceSketchResult> Wait(SketchDevice& dev, SketchDevice::SlotId slot) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = dev.Poll(slot);
    if (!r.ok()) {
      Log("poll failed: %s\n", r.status().message().c_str());
      return std::nullopt;
    }
    if (r->has_value()) return std::move(**r);
    std::this_thread::yield();
  }
  Log("poll timed out\n");
  return std::nullopt;
}

namespace {
int g_failures = 0;

void CheckOne(SketchDevice& dev, cudaStream_t stream, uint8_t* dbuf,
              const std::vector<uint8_t>& bytes, size_t offset_bytes, const SketchRequest& req,
              const std::string& what) {
  const auto host = SketchHost(bytes.data() + offset_bytes, req);
  DeviceSketchRequest dr{dbuf + offset_bytes, req};
  auto slots = dev.Enqueue(stream, {dr});
  if (!slots.ok()) {
    Log("FAIL %s: enqueue: %s\n", what.c_str(), slots.status().message().c_str());
    ++g_failures;
    return;
  }
  auto got = Wait(dev, (*slots)[0]);
  std::string why;
  if (!got || !SameResult(host.value(), got->result, &why)) {
    Log("FAIL %s: %s\n", what.c_str(), got ? why.c_str() : "no result");
    ++g_failures;
    return;
  }
}

void BitExactness(SketchDevice& dev, cudaStream_t stream, bool quick) {
  std::vector<uint64_t> sizes = {1, 7, 4096, 4097, 1u << 20};
  if (!quick) sizes.push_back(64u << 20);
  int checks = 0;
  for (int d = 0; d < kNumDtypes; ++d) {
    const uint8_t dtype = uint8_t(d);
    for (uint64_t n : sizes) {
      const auto bytes = RandomBytes(dtype, n + 1, n + 17 * d);
      uint8_t* dbuf = nullptr;
      CUDA_OK(cudaMalloc(&dbuf, bytes.size()));
      CUDA_OK(cudaMemcpy(dbuf, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
      const std::string base = std::string(DtypeName(dtype)) + " n=" + std::to_string(n);
      SketchRequest req;
      req.layout.dtype = dtype;
      req.layout.block_count = n;
      req.layout.g0 = 12345;
      req.mode = SketchMode::kFullAndRace;
      CheckOne(dev, stream, dbuf, bytes, 0, req, base + " full+race");
      req.mode = SketchMode::kRaceOnly;
      CheckOne(dev, stream, dbuf, bytes, 0, req, base + " race-only");
      req.mode = SketchMode::kFullAndRace;
      CheckOne(dev, stream, dbuf, bytes, DtypeSize(dtype), req, base + " misaligned");
      checks += 3;
      if (n >= 4096) {  // 8 blocks at the places an AlltoAll receive would use
        req.layout.block_count = n / 8;
        req.layout.nblocks = 8;
        req.layout.gstride = 3 * n;
        req.samples_per_block = 64;
        CheckOne(dev, stream, dbuf, bytes, 0, req, base + " 8 blocks");
        ++checks;
      }
      CUDA_OK(cudaFree(dbuf));
    }
    Log("bit-exact %-9s done (%d checks so far, %d failures)\n",
        std::string(DtypeName(dtype)).c_str(), checks, g_failures);
  }
}

void StreamOrder(SketchDevice& dev, cudaStream_t stream) {
  const uint64_t n = 1 << 22;
  float* buf = nullptr;
  CUDA_OK(cudaMalloc(&buf, n * 4));
  CUDA_OK(cudaMemsetAsync(buf, 0, n * 4, stream));
  SketchRequest req;
  req.layout.dtype = uint8_t(Dtype::kFloat32);
  req.layout.block_count = n;
  auto slots = dev.Enqueue(stream, {{buf, req}});
  CUDA_OK(cudaMemsetAsync(buf, 0x3c, n * 4, stream));  // after the sketch: must not be seen
  auto got = slots.ok() ? Wait(dev, (*slots)[0]) : std::nullopt;
  bool zero = got.has_value() && got->result.blocks[0].sumsq == 0;
  Log("%s stream order: the sketch saw %s\n", zero ? "PASS" : "FAIL",
      zero ? "the data of its point in the stream" : "later data (or none)");
  g_failures += !zero;
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaFree(buf));
}

void GraphCapture(cudaStream_t stream) {
  auto dev = SketchDevice::Create();  // a fresh device: its context init runs inside the capture
  if (!dev.ok()) {
    Log("FAIL graph: %s\n", dev.status().message().c_str());
    ++g_failures;
    return;
  }
  const uint64_t n = 300000;
  const uint8_t dtype = uint8_t(Dtype::kBfloat16);
  const auto a = RandomBytes(dtype, n, 1), b = RandomBytes(dtype, n, 2);
  uint8_t* buf = nullptr;
  CUDA_OK(cudaMalloc(&buf, a.size()));
  SketchRequest req;
  req.layout.dtype = dtype;
  req.layout.block_count = n;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  auto slots = (*dev)->Enqueue(stream, {{buf, req}});
  cudaError_t end = cudaStreamEndCapture(stream, &graph);
  if (!slots.ok() || end != cudaSuccess) {
    Log("FAIL graph: enqueue under capture: %s / %s\n",
        slots.ok() ? "ok" : slots.status().message().c_str(), cudaGetErrorString(end));
    ++g_failures;
    return;
  }
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  bool ok = true;
  for (int replay = 1; replay <= 2; ++replay) {
    const auto& data = replay == 1 ? a : b;
    CUDA_OK(cudaMemcpy(buf, data.data(), data.size(), cudaMemcpyHostToDevice));
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    auto got = Wait(**dev, (*slots)[0]);
    std::string why;
    const bool same = got && got->generation == uint64_t(replay) &&
                      SameResult(SketchHost(data.data(), req).value(), got->result, &why);
    if (!same) Log("graph replay %d: %s\n", replay, got ? why.c_str() : "no result");
    ok = ok && same;
  }
  (*dev)->Release((*slots)[0]);
  Log("%s graph capture: a captured sketch reports each replay's data\n", ok ? "PASS" : "FAIL");
  g_failures += !ok;
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaFree(buf));
}

}  // namespace
}  // namespace ncclrr::sketch::gpucheck

using namespace ncclrr::sketch::gpucheck;

int main(int argc, char** argv) {
  std::string out;
  bool quick = false;
  double bench_mb = 1024;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc)
      out = argv[++i];
    else if (a == "--quick")
      quick = true;
    else if (a == "--bench-mb" && i + 1 < argc)
      bench_mb = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: sketch_gpu_check [--out DIR] [--quick] [--bench-mb N]\n");
      return 2;
    }
  }
  auto dev = SketchDevice::Create();
  if (!dev.ok()) {
    std::fprintf(stderr, "%s\n", dev.status().message().c_str());
    return 2;
  }
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  Log("device: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor,
      prop.multiProcessorCount);
  BitExactness(**dev, stream, quick);
  StreamOrder(**dev, stream);
  GraphCapture(stream);
  Log("%s (%d failures); %s\n", g_failures ? "FAILED" : "ALL BIT-EXACT CHECKS PASSED", g_failures,
      (*dev)->Describe().c_str());
  Bandwidth(**dev, stream, bench_mb, prop);
  if (!out.empty()) {
    std::ofstream f(out + "/sketch_gpu_check.txt");
    f << g_log;
  }
  return g_failures ? 1 : 0;
}
