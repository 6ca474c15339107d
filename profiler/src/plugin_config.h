// Every environment knob of the profiler plugin, read once at first use (docs/gpu-timing.md and
// docs/tensorflow.md list them). The trace knobs have the preload's names and meanings, so that
// `ncclrr record` configures both routes alike.
#pragma once
#include <cstdint>
#include <string>

namespace ncclrr::profiler {

struct PluginConfig {
  std::string trace_dir = "ncclrr-trace";  // NCCLRR_TRACE_DIR
  std::string chain;       // NCCLRR_CHAIN_PROFILER_PLUGIN: the user's own profiler plugin
  bool disabled = false;   // NCCLRR_DISABLE=1: load, forward to the chained plugin, record nothing
  uint32_t flush_ms = 20;  // NCCLRR_FLUSH_MS
  uint32_t clock_ms = 1000;     // NCCLRR_CLOCK_MS
  uint32_t ring_slots = 8192;   // NCCLRR_RING_SLOTS
  uint32_t ring_calls = 0;      // NCCLRR_RING: flight-recorder mode
  uint64_t max_file_bytes = 0;  // NCCLRR_MAX_FILE_MB
  bool compress = true;         // NCCLRR_COMPRESS
  bool verbose = false;         // NCCLRR_VERBOSE: say on stderr what the plugin does
  // NCCLRR_PLUGIN_RECORD_ALL=1: record also the calls and communicators the preload records, so
  // that one run yields both routes' files (checking the preload's commHash against NCCL's).
  bool record_all = false;
};

const PluginConfig& GetPluginConfig();

}  // namespace ncclrr::profiler
