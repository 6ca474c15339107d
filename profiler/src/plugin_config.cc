#include "plugin_config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ncclrr::profiler {
namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// A malformed value never stops the job: the default is kept and stderr says so.
template <typename T>
void Number(const char* name, T* out, uint64_t max) {
  const char* v = Env(name);
  if (v == nullptr) return;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end != '\0' || v[0] == '-' || n > max) {
    std::fprintf(stderr,
                 "ncclrr profiler plugin: %s=\"%s\" is not a number up to %llu; using %llu\n", name,
                 v, static_cast<unsigned long long>(max), static_cast<unsigned long long>(*out));
    return;
  }
  *out = static_cast<T>(n);
}

void Flag(const char* name, bool* out) {
  if (const char* v = Env(name))
    *out = std::strchr("1tTyY", v[0]) != nullptr || !strcasecmp(v, "on");
}

PluginConfig Load() {
  PluginConfig c;
  if (const char* v = Env("NCCLRR_TRACE_DIR")) c.trace_dir = v;
  if (const char* v = Env("NCCLRR_CHAIN_PROFILER_PLUGIN")) c.chain = v;
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
