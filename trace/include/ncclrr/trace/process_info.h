// What a trace header says about the process that records it: shared by both capture routes (the
// preload and the profiler plugin), so their files describe a process alike.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ncclrr/trace/trace_writer.h"

namespace ncclrr {

// The command line, from /proc/self/cmdline (works before main and in any library).
std::vector<std::string> ProcessArgv();
// Every NCCL_* and NCCLRR_* variable of the environment: what the replay pins and the report shows.
std::map<std::string, std::string> NcclEnvironment();

// Writer options of a capture route from its configuration (the preload's Config and the
// plugin's PluginConfig name these knobs alike, as `ncclrr record` sets both), with the header's
// route, command line and NCCL environment.
template <typename RouteConfig>
WriterOptions RouteWriterOptions(const RouteConfig& cfg, Route route) {
  WriterOptions o;
  o.dir = cfg.trace_dir;
  o.ring_slots = cfg.ring_slots;
  o.flush_interval_ms = cfg.flush_ms;
  o.clock_interval_ms = cfg.clock_ms;
  o.flight_recorder_calls = cfg.ring_calls;
  o.compress = cfg.compress;
  o.max_file_bytes = cfg.max_file_bytes;
  o.header.route = route;
  o.header.argv = ProcessArgv();
  o.header.env = NcclEnvironment();
  return o;
}

}  // namespace ncclrr
