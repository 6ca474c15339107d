// Every environment knob of the interposer, read once (first use) through one accessor, like
// NCCL_PARAM. docs/recording.md lists them; `ncclrr record` sets the first three.
#pragma once
#include <cstdint>
#include <string>

namespace ncclrr::interpose {

struct Config {
  std::string trace_dir;        // NCCLRR_TRACE_DIR (default "ncclrr-trace")
  uint32_t ring_calls = 0;      // NCCLRR_RING: > 0 flight-recorder mode, calls kept per thread
  bool stacks = false;          // NCCLRR_STACKS=1: call-site ids (return addresses)
  int sketch = 0;               // NCCLRR_SKETCH: 1 data sketches of buffers (record --sketch);
                                // 2 GPU sketches also with the host NCCL (a stand-in libcuda)
  uint32_t sketch_slots = 128;  // NCCLRR_SKETCH_SLOTS: GPU sketches in flight per CUDA context
                                // (at least 16: one fused launch)
  bool sketch_beside = true;    // NCCLRR_SKETCH_BESIDE=0: every send side before the call
  uint64_t capture_bytes = 0;   // NCCLRR_CAPTURE_BYTES: > 0 capture buffers (record --capture),
                                // the process's budget for its side file
  std::string capture_filter;   // NCCLRR_CAPTURE_FILTER: which calls (ncclrr/capture_filter.h)
  std::string capture_file;     // NCCLRR_CAPTURE_FILE: the side file (tests: /dev/full)
  uint64_t capture_staging_bytes = 256ull << 20;  // NCCLRR_CAPTURE_STAGING_MB: copies waiting
                                                  // to be written (pinned memory on a GPU)
  std::string nccl_library;      // NCCLRR_NCCL_LIBRARY: the real NCCL, overriding discovery
  bool disabled = false;         // NCCLRR_DISABLE=1: forward everything, record nothing
  uint32_t flush_ms = 20;        // NCCLRR_FLUSH_MS: longest time a record waits in memory
  uint32_t clock_ms = 1000;      // NCCLRR_CLOCK_MS: period of (monotonic, realtime) clock pairs
  uint32_t watchdog_ms = 30000;  // NCCLRR_WATCHDOG_MS: a call in flight longer is reported (0: off)
  uint32_t ring_slots = 8192;    // NCCLRR_RING_SLOTS: per-thread buffer in full mode (records)
  uint64_t max_file_bytes = 0;   // NCCLRR_MAX_FILE_MB: size cap of one trace file (0: none)
  bool compress = true;          // NCCLRR_COMPRESS=0: write frames uncompressed
  bool signals = true;           // NCCLRR_SIGNALS=0: install no signal handlers
  int graphs = 1;                // NCCLRR_GRAPHS: 0 no CUDA-graph tracking; 2 also with the host
                                 // NCCL (tests with a stand-in libcuda)
  bool dlsym_hook = true;        // NCCLRR_DLSYM=0: hand out no wrappers through dlsym
  int stack_depth = 6;           // NCCLRR_STACK_DEPTH: frames per call-site with --stacks
  bool py_sites = true;          // NCCLRR_PY_SITES=0: no Python call sites (python_site.h)
  int py_depth = 2;              // NCCLRR_PY_DEPTH: Python frames per site (1 to 8)
  // NCCLRR_PY_SKIP: comma-separated path fragments of frameworks' frames that a site passes over
  std::string py_skip = "packages/torch/,/torch/distributed/,packages/jax/,packages/jaxlib/";
  // NCCLRR_PY_API: fragments of the frameworks' collective API files among those; a site made
  // of frameworks' frames only names the innermost frame outside them (e.g. a DDP comm hook)
  std::string py_api = "/torch/distributed/distributed_c10d.py,/torch/distributed/c10d_logger.py";
  bool verbose = false;           // NCCLRR_VERBOSE=1: say on stderr how NCCL was found
  int nccl_comm_blocking = -1;    // NCCL_COMM_BLOCKING as NCCL reads it (-1: unset), read only
  int gpu_timing = 0;             // NCCLRR_GPU_TIMING: 1 GPU start/end per call (set by record
                                  // --gpu-timing); 2 also with the host NCCL (tests, stand-ins)
  std::string gpu_timing_source;  // NCCLRR_GPU_TIMING_SOURCE: auto (default), cupti, events
  std::string gpu_timing_cupti;   // NCCLRR_GPU_TIMING_CUPTI: libcupti to use (tests: a stand-in)
  std::string gpu_timing_cuda;    // NCCLRR_GPU_TIMING_CUDA: libcuda to use (tests: a stand-in)
  // NCCLRR_GPU_TIMING_ALL_API: unset: CUPTI launch callbacks; 1: every CUPTI API record; 0:
  // the launch entry points' API records only.
  int gpu_timing_all_api = -1;
  // NCCLRR_GPU_PROGRESS=1 (`record --gpu-progress`): with CUPTI timing, a CUDA event before
  // each call too (about 1 us per call), so that `ncclrr status` tells a call not started on the
  // GPU from one running. Event pairs tell it without this.
  bool gpu_progress = false;
};

// The process's configuration. Thread-safe; reads the environment on the first call only.
const Config& GetConfig();

}  // namespace ncclrr::interpose
