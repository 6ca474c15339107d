// GPU acceptance of the sketch kernels (run by tests/gpu/sketch_gpu.sh on a GPU machine):
//  1. SketchDevice equals SketchHost bit for bit: every datatype, 1 / 7 / 4096 / 4097 / 1 M /
//     64 M elements, full+race and race-only modes, misaligned and multi-block buffers.
//  2. Stream order: a sketch enqueued between two memsets sees the first one only; so does a
//     forked one (EnqueueForked/JoinFork), with other work between it and the second memset.
//  3. Graph capture: sketches captured into a graph (first use of the context inside the
//     capture; a plain and a fused launch; a slot reused after plain launches) report every
//     replay with the data of that replay, numbered from 1; a released captured slot is reused.
//  4. Fused launches: 16 small sketches of two datatypes in one Enqueue equal the host.
//  5. Bandwidth: sketch throughput against a read-only kernel and a device-to-device copy; the
//     cost of a small sketch, alone and fused 16 to a launch, against an empty kernel.
// Inputs are uploaded with cudaMemcpyAsync on the sketch's own stream: a plain cudaMemcpy from
// pageable memory may return before its DMA lands, and the legacy stream does not order the
// non-blocking one (that is what made replay 2 of the graph check differ from the host).
// Usage: sketch_gpu_check [--out DIR] [--quick] [--bench-mb N] [--profile-mb N]. Exit 0 when
// 1-3 pass. --profile-mb N only enqueues three float32 sketches of N MB, one after another, for
// a profiler (e.g. ncu --launch-skip 2 --launch-count 1).
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

#include "ncclrr/sketch/device.h"
#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/sketch.h"
#include "ncclrr/trace/records.h"
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
// floats, integers up to 2^52 wrapped into the type) sampled by a fast generator, with a few
// NaN/Inf for floats.
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

// Host bytes to the device in the order of `stream` (and finished when this returns).
void Upload(cudaStream_t stream, void* dst, const std::vector<uint8_t>& bytes) {
  CUDA_OK(cudaMemcpyAsync(dst, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
}

// How many of the 16 dots (and whether Σx²) differ: for failure messages.
std::string Differences(const SketchResult& h, const SketchResult& d) {
  if (h.blocks.size() != d.blocks.size() || h.blocks.empty()) return "different shapes";
  int dots = 0;
  for (int k = 0; k < 16; ++k)
    dots += std::memcmp(&h.blocks[0].dots[k], &d.blocks[0].dots[k], 8) != 0;
  const bool ss = std::memcmp(&h.blocks[0].sumsq, &d.blocks[0].sumsq, 8) != 0;
  return std::to_string(dots) + " of 16 dots" + (ss ? " and sumsq" : "") + " differ";
}

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
      Upload(stream, dbuf, bytes);
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
  const SketchRequest req = FloatRequest(n);
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

// A forked sketch starts where the stream is (after the 0x11 fill), runs beside the stream's
// next work (a copy of another 64 MB buffer) and is joined before the 0x3c fill: it must equal
// the host sketch of the 0x11 bytes, and the fork must have used a side stream.
void ForkedStreamOrder(SketchDevice& dev, cudaStream_t stream) {
  const uint64_t n = 1 << 24;
  uint8_t *buf = nullptr, *a = nullptr, *b = nullptr;
  CUDA_OK(cudaMalloc(&buf, n * 4));
  CUDA_OK(cudaMalloc(&a, n * 4));
  CUDA_OK(cudaMalloc(&b, n * 4));
  CUDA_OK(cudaMemsetAsync(buf, 0, n * 4, stream));
  CUDA_OK(cudaMemsetAsync(buf, 0x11, n * 4, stream));
  const SketchRequest req = FloatRequest(n, SketchMode::kFullAndRace);
  SketchDevice::Fork fork;
  auto slots = dev.EnqueueForked(stream, {{buf, req}}, &fork);
  CUDA_OK(cudaMemcpyAsync(b, a, n * 4, cudaMemcpyDeviceToDevice, stream));  // beside the sketch
  dev.JoinFork(fork);
  CUDA_OK(cudaMemsetAsync(buf, 0x3c, n * 4, stream));  // after the join: must not be seen
  auto got = slots.ok() ? Wait(dev, (*slots)[0]) : std::nullopt;
  const std::vector<uint8_t> bytes(n * 4, 0x11);
  const auto host = SketchHost(bytes.data(), req);
  std::string why = slots.ok() ? "no result" : slots.status().message();
  const bool same = got.has_value() && SameResult(host.value(), got->result, &why);
  const bool ok = same && !fork.empty();
  Log("%s forked stream order: %s\n", ok ? "PASS" : "FAIL",
      ok     ? "the side-stream sketch saw the data of its point in the stream"
      : same ? "right result, but the fork fell back to the stream itself"
             : why.c_str());
  g_failures += !ok;
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaFree(buf));
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
}

// Checks one replay's result of a captured slot against the host sketch of `data`; `stale`
// (may be null) is the previous replay's data, named when the device saw it instead.
bool CheckReplay(SketchDevice& dev, SketchDevice::SlotId slot, const SketchRequest& req,
                 const std::vector<uint8_t>& data, const std::vector<uint8_t>* stale,
                 uint64_t replay, const std::string& what) {
  auto got = Wait(dev, slot);
  if (!got) {
    Log("FAIL %s replay %llu: no result\n", what.c_str(), (unsigned long long)replay);
    return false;
  }
  const SketchResult host = SketchHost(data.data(), req).value();
  std::string why;
  if (got->generation != replay) {
    Log("FAIL %s replay %llu: reported as replay %llu\n", what.c_str(), (unsigned long long)replay,
        (unsigned long long)got->generation);
    return false;
  }
  if (SameResult(host, got->result, &why)) return true;
  std::string seen;
  if (stale && SameResult(SketchHost(stale->data(), req).value(), got->result, &seen))
    why += " (the device saw the previous replay's data)";
  Log("FAIL %s replay %llu: %s; %s\n", what.c_str(), (unsigned long long)replay,
      Differences(host, got->result).c_str(), why.c_str());
  return false;
}

void GraphCapture(SketchDevice& used, cudaStream_t stream) {
  auto dev = SketchDevice::Create();  // a fresh device: its context init runs inside the capture
  if (!dev.ok()) {
    Log("FAIL graph: %s\n", dev.status().message().c_str());
    ++g_failures;
    return;
  }
  const uint64_t n = 300000, m = 70001;
  const uint8_t bf16 = uint8_t(Dtype::kBfloat16), f32 = uint8_t(Dtype::kFloat32);
  std::vector<std::vector<uint8_t>> a, b, c;  // per replay: the bf16 buffer and two float32 ones
  for (int replay = 0; replay < 4; ++replay) {
    a.push_back(RandomBytes(bf16, n, 1 + replay));
    b.push_back(RandomBytes(f32, m, 11 + replay));
    c.push_back(RandomBytes(f32, 5000, 21 + replay));
  }
  uint8_t *abuf = nullptr, *bbuf = nullptr, *cbuf = nullptr;
  CUDA_OK(cudaMalloc(&abuf, a[0].size()));
  CUDA_OK(cudaMalloc(&bbuf, b[0].size()));
  CUDA_OK(cudaMalloc(&cbuf, c[0].size()));
  SketchRequest ra, rb, rc;
  ra.layout.dtype = bf16;
  ra.layout.block_count = n;
  rb.layout.dtype = rc.layout.dtype = f32;
  rb.layout.block_count = m;
  rb.layout.g0 = 999;
  rb.mode = SketchMode::kFullAndRace;
  rc.layout.block_count = 5000;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  auto plain = (*dev)->Enqueue(stream, {{abuf, ra}});              // the context's first use
  auto fused = (*dev)->Enqueue(stream, {{bbuf, rb}, {cbuf, rc}});  // one fused launch
  auto reused = used.Enqueue(stream, {{cbuf, rc}});  // a slot with earlier plain launches
  cudaError_t end = cudaStreamEndCapture(stream, &graph);
  if (!plain.ok() || !fused.ok() || !reused.ok() || end != cudaSuccess) {
    Log("FAIL graph: enqueue under capture: %s / %s / %s / %s\n",
        plain.ok() ? "ok" : plain.status().message().c_str(),
        fused.ok() ? "ok" : fused.status().message().c_str(),
        reused.ok() ? "ok" : reused.status().message().c_str(), cudaGetErrorString(end));
    ++g_failures;
    return;
  }
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  bool ok = true;
  for (int replay = 1; replay <= 3; ++replay) {
    const int i = replay - 1;
    Upload(stream, abuf, a[i]);
    Upload(stream, bbuf, b[i]);
    Upload(stream, cbuf, c[i]);
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    const auto* prev_a = i > 0 ? &a[i - 1] : nullptr;
    const auto* prev_b = i > 0 ? &b[i - 1] : nullptr;
    const auto* prev_c = i > 0 ? &c[i - 1] : nullptr;
    ok &= CheckReplay(**dev, (*plain)[0], ra, a[i], prev_a, replay, "graph bf16");
    ok &= CheckReplay(**dev, (*fused)[0], rb, b[i], prev_b, replay, "graph fused float32 #1");
    ok &= CheckReplay(**dev, (*fused)[1], rc, c[i], prev_c, replay, "graph fused float32 #2");
    ok &= CheckReplay(used, (*reused)[0], rc, c[i], prev_c, replay, "graph on a reused slot");
  }
  // Two replays before a poll: the newest is reported, the other counted as missed.
  Upload(stream, abuf, a[3]);
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  auto got = Wait(**dev, (*plain)[0]);
  if (!got || got->generation != 5 || got->missed != 1) {
    Log("FAIL graph: two unpolled replays: generation %llu missed %llu (want 5 and 1)\n",
        got ? (unsigned long long)got->generation : 0ull,
        got ? (unsigned long long)got->missed : 0ull);
    ok = false;
  }
  Log("%s graph capture: captured sketches (plain, fused, on a reused slot) report each replay's "
      "data, numbered from 1\n",
      ok ? "PASS" : "FAIL");
  g_failures += !ok;
  // Released with the number of launches: slots come back once they have published.
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  (*dev)->Release((*plain)[0], 5);
  (*dev)->Release((*fused)[0], 5);
  (*dev)->Release((*fused)[1], 5);
  used.Release((*reused)[0], 5);
  Upload(stream, cbuf, c[3]);
  auto again = (*dev)->Enqueue(stream, {{cbuf, rc}, {cbuf, rc}, {cbuf, rc}});
  bool reuse_ok = again.ok();
  if (reuse_ok)
    for (auto slot : *again) {
      auto r = Wait(**dev, slot);
      std::string why;
      reuse_ok = reuse_ok && r && r->generation == 1 &&
                 SameResult(SketchHost(c[3].data(), rc).value(), r->result, &why);
    }
  Log("%s released captured slots are reused with fresh results\n", reuse_ok ? "PASS" : "FAIL");
  g_failures += !reuse_ok;
  // Diagnostic only (not counted): the upload the earlier version of this check used.
  {
    cudaGraph_t g2;
    cudaGraphExec_t e2;
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    auto s2 = (*dev)->Enqueue(stream, {{abuf, ra}});
    CUDA_OK(cudaStreamEndCapture(stream, &g2));
    CUDA_OK(cudaGraphInstantiate(&e2, g2, 0));
    int stale = 0;
    for (int replay = 1; s2.ok() && replay <= 6; ++replay) {
      const auto& data = a[replay % 2];
      CUDA_OK(cudaMemcpy(abuf, data.data(), data.size(), cudaMemcpyHostToDevice));
      CUDA_OK(cudaGraphLaunch(e2, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      auto r = Wait(**dev, (*s2)[0]);
      std::string why;
      stale += !(r && SameResult(SketchHost(data.data(), ra).value(), r->result, &why));
    }
    Log("note: pageable cudaMemcpy then an immediate graph launch on a non-blocking stream: %d of "
        "6 replays saw other data than the copy's (a race of the old check, not of the kernel)\n",
        stale);
    if (s2.ok()) (*dev)->Release((*s2)[0], 6);
    CUDA_OK(cudaGraphExecDestroy(e2));
    CUDA_OK(cudaGraphDestroy(g2));
  }
  CUDA_OK(cudaFree(abuf));
  CUDA_OK(cudaFree(bbuf));
  CUDA_OK(cudaFree(cbuf));
}

// 16 sketches of two datatypes in one Enqueue (two launches): each equals the host.
void FusedLaunch(SketchDevice& dev, cudaStream_t stream) {
  std::vector<std::vector<uint8_t>> host(16);
  std::vector<uint8_t*> bufs(16);
  std::vector<DeviceSketchRequest> reqs(16);
  for (int i = 0; i < 16; ++i) {
    const uint8_t dtype = uint8_t(i % 3 == 0 ? Dtype::kBfloat16 : Dtype::kFloat32);
    const uint64_t n = 1 + uint64_t(i) * 977;
    host[i] = RandomBytes(dtype, n, 100 + i);
    CUDA_OK(cudaMalloc(&bufs[i], host[i].size()));
    Upload(stream, bufs[i], host[i]);
    reqs[i].data = bufs[i];
    reqs[i].request.layout.dtype = dtype;
    reqs[i].request.layout.block_count = n;
    reqs[i].request.layout.g0 = uint64_t(i) * 4099;
    reqs[i].request.mode = i % 2 ? SketchMode::kFullAndRace : SketchMode::kFull;
  }
  auto slots = dev.Enqueue(stream, reqs);
  int bad = slots.ok() ? 0 : 16;
  for (int i = 0; slots.ok() && i < 16; ++i) {
    auto got = Wait(dev, (*slots)[i]);
    std::string why;
    if (!got ||
        !SameResult(SketchHost(host[i].data(), reqs[i].request).value(), got->result, &why)) {
      Log("fused job %d: %s\n", i, got ? why.c_str() : "no result");
      ++bad;
    }
  }
  Log("%s fused launch: 16 sketches (float32 and bfloat16) in one Enqueue equal the host\n",
      bad ? "FAIL" : "PASS");
  g_failures += bad != 0;
  for (auto* p : bufs) CUDA_OK(cudaFree(p));
}

}  // namespace
}  // namespace ncclrr::sketch::gpucheck

using namespace ncclrr::sketch::gpucheck;

int main(int argc, char** argv) {
  std::string out;
  bool quick = false;
  double bench_mb = 1024, profile_mb = 0;
  SketchDeviceOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc)
      out = argv[++i];
    else if (a == "--quick")
      quick = true;
    else if (a == "--bench-mb" && i + 1 < argc)
      bench_mb = std::atof(argv[++i]);
    else if (a == "--profile-mb" && i + 1 < argc)
      profile_mb = std::atof(argv[++i]);
    else if (a == "--max-tiles" && i + 1 < argc && std::atoi(argv[i + 1]) > 0) {
      options.max_tiles = uint32_t(std::atoi(argv[++i]));  // CTAs per sketch, at most
      options.one_wave = false;                            // even beyond one wave
    } else {
      std::fprintf(stderr,
                   "usage: sketch_gpu_check [--out DIR] [--quick] [--bench-mb N] "
                   "[--profile-mb N] [--max-tiles N]\n");
      return 2;
    }
  }
  auto dev = SketchDevice::Create(options);
  if (!dev.ok()) {
    std::fprintf(stderr, "%s\n", dev.status().message().c_str());
    return 2;
  }
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  Log("device: %s (sm_%d%d, %d SMs); at most %u CTAs per sketch%s\n", prop.name, prop.major,
      prop.minor, prop.multiProcessorCount, options.max_tiles,
      options.one_wave ? ", and one wave (2 per SM)" : "");
  if (profile_mb > 0) {
    const size_t n = size_t(profile_mb * (1 << 20)) / 4;
    float* buf = nullptr;
    CUDA_OK(cudaMalloc(&buf, n * 4));
    CUDA_OK(cudaMemsetAsync(buf, 0x11, n * 4, stream));
    const SketchRequest req = FloatRequest(n);
    for (int i = 0; i < 3; ++i) {
      auto slots = (*dev)->Enqueue(stream, {{buf, req}});
      if (!slots.ok() || !Wait(**dev, (*slots)[0])) return 1;
    }
    Log("profiled: 3 sketches of %zu floats\n", n);
    return 0;
  }
  BitExactness(**dev, stream, quick);
  StreamOrder(**dev, stream);
  ForkedStreamOrder(**dev, stream);
  GraphCapture(**dev, stream);
  FusedLaunch(**dev, stream);
  Log("%s (%d failures); %s\n", g_failures ? "FAILED" : "ALL BIT-EXACT CHECKS PASSED", g_failures,
      (*dev)->Describe().c_str());
  Bandwidth(**dev, stream, bench_mb, prop);
  if (!out.empty()) {
    std::ofstream f(out + "/sketch_gpu_check.txt");
    f << g_log;
  }
  return g_failures ? 1 : 0;
}
