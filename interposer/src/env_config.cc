#include "env_config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ncclrr/base/env_knobs.h"

namespace ncclrr::interpose {
namespace {

using env::Bool;
using env::String;

uint64_t Unsigned(const char* name, uint64_t fallback, uint64_t max) {
  return env::Unsigned(name, fallback, max);
}

Config Load() {
  Config c;
  c.trace_dir = String("NCCLRR_TRACE_DIR", "ncclrr-trace");
  c.ring_calls = static_cast<uint32_t>(Unsigned("NCCLRR_RING", 0, 1u << 24));
  c.stacks = Bool("NCCLRR_STACKS", false);
  c.sketch = static_cast<int>(Unsigned("NCCLRR_SKETCH", 0, 2));
  c.sketch_beside = Unsigned("NCCLRR_SKETCH_BESIDE", 1, 1) != 0;
  c.sketch_slots = static_cast<uint32_t>(Unsigned("NCCLRR_SKETCH_SLOTS", c.sketch_slots, 65536));
  if (c.sketch_slots < 16) {  // a group's fused launch takes up to 16 at once
    std::fprintf(stderr,
                 "ncclrr: NCCLRR_SKETCH_SLOTS=%u is below 16, the sketches of one fused launch; "
                 "using 16\n",
                 c.sketch_slots);
    c.sketch_slots = 16;
  }
  c.capture_bytes = Unsigned("NCCLRR_CAPTURE_BYTES", 0, 1ull << 50);
  c.capture_filter = String("NCCLRR_CAPTURE_FILTER", "");
  c.capture_file = String("NCCLRR_CAPTURE_FILE", "");
  c.capture_staging_bytes = Unsigned("NCCLRR_CAPTURE_STAGING_MB", 256, 1u << 20) << 20;
  c.nccl_library = String("NCCLRR_NCCL_LIBRARY", "");
  c.disabled = Bool("NCCLRR_DISABLE", false);
  c.flush_ms = static_cast<uint32_t>(Unsigned("NCCLRR_FLUSH_MS", c.flush_ms, 60'000));
  if (c.flush_ms == 0) c.flush_ms = 1;
  c.clock_ms = static_cast<uint32_t>(Unsigned("NCCLRR_CLOCK_MS", c.clock_ms, 3'600'000));
  if (c.clock_ms == 0) c.clock_ms = 1000;
  c.watchdog_ms = static_cast<uint32_t>(Unsigned("NCCLRR_WATCHDOG_MS", c.watchdog_ms, 86'400'000));
  c.ring_slots = static_cast<uint32_t>(Unsigned("NCCLRR_RING_SLOTS", c.ring_slots, 1u << 24));
  c.max_file_bytes = Unsigned("NCCLRR_MAX_FILE_MB", 0, 1u << 30) << 20;
  c.compress = Bool("NCCLRR_COMPRESS", true);
  c.signals = Bool("NCCLRR_SIGNALS", true);
  c.graphs = static_cast<int>(Unsigned("NCCLRR_GRAPHS", 1, 2));
  c.dlsym_hook = Bool("NCCLRR_DLSYM", true);
  c.stack_depth = static_cast<int>(Unsigned("NCCLRR_STACK_DEPTH", 6, 32));
  if (c.stack_depth == 0) c.stack_depth = 1;
  c.py_sites = Bool("NCCLRR_PY_SITES", true);
  c.py_depth = static_cast<int>(Unsigned("NCCLRR_PY_DEPTH", 2, 8));
  if (c.py_depth == 0) c.py_depth = 1;
  c.py_skip = String("NCCLRR_PY_SKIP", c.py_skip.c_str());
  c.py_api = String("NCCLRR_PY_API", c.py_api.c_str());
  c.verbose = Bool("NCCLRR_VERBOSE", false);
  c.gpu_timing = static_cast<int>(Unsigned("NCCLRR_GPU_TIMING", 0, 2));
  c.gpu_timing_source = String("NCCLRR_GPU_TIMING_SOURCE", "auto");
  c.gpu_timing_cupti = String("NCCLRR_GPU_TIMING_CUPTI", "");
  c.gpu_timing_cuda = String("NCCLRR_GPU_TIMING_CUDA", "");
  c.gpu_progress = Bool("NCCLRR_GPU_PROGRESS", false);
  if (const char* v = std::getenv("NCCLRR_GPU_TIMING_ALL_API"); v != nullptr && *v != '\0') {
    if (!std::strcmp(v, "0") || !std::strcmp(v, "1"))
      c.gpu_timing_all_api = v[0] - '0';
    else
      std::fprintf(stderr,
                   "ncclrr: NCCLRR_GPU_TIMING_ALL_API=\"%s\" is not 0 or 1; choosing by itself\n",
                   v);
  }
  if (const char* v = std::getenv("NCCL_COMM_BLOCKING"); v != nullptr && *v != '\0')
    c.nccl_comm_blocking = std::atoi(v) != 0 ? 1 : 0;
  return c;
}

}  // namespace

const Config& GetConfig() {
  static const Config config = Load();  // thread-safe static initialization
  return config;
}

}  // namespace ncclrr::interpose
