#include "plugin_config.h"

#include "ncclrr/base/env_knobs.h"

namespace ncclrr::profiler {
namespace {

constexpr const char* kWho = "ncclrr profiler plugin";

template <typename T>
void Number(const char* name, T* out, uint64_t max) {
  *out = static_cast<T>(env::Unsigned(name, *out, max, kWho));
}

void Flag(const char* name, bool* out) { *out = env::Bool(name, *out, kWho); }

PluginConfig Load() {
  PluginConfig c;
  c.trace_dir = env::String("NCCLRR_TRACE_DIR", c.trace_dir.c_str());
  c.chain = env::String("NCCLRR_CHAIN_PROFILER_PLUGIN", "");
  Flag("NCCLRR_DISABLE", &c.disabled);
  Number("NCCLRR_FLUSH_MS", &c.flush_ms, 60'000);
  Number("NCCLRR_CLOCK_MS", &c.clock_ms, 3'600'000);
  Number("NCCLRR_RING_SLOTS", &c.ring_slots, 1u << 24);
  Number("NCCLRR_RING", &c.ring_calls, 1u << 24);
  Number("NCCLRR_MAX_FILE_MB", &c.max_file_bytes, 1u << 30);
  c.max_file_bytes <<= 20;
  Flag("NCCLRR_COMPRESS", &c.compress);
  Flag("NCCLRR_VERBOSE", &c.verbose);
  Flag("NCCLRR_PLUGIN_RECORD_ALL", &c.record_all);
  if (c.flush_ms == 0) c.flush_ms = 1;
  if (c.clock_ms == 0) c.clock_ms = 1000;
  return c;
}

}  // namespace

const PluginConfig& GetPluginConfig() {
  static const PluginConfig config = Load();
  return config;
}

}  // namespace ncclrr::profiler
