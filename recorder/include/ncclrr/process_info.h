// What a trace header says about the process that records it: shared by both capture routes (the
// preload and the profiler plugin), so their files describe a process alike.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace ncclrr {

// The command line, from /proc/self/cmdline (works before main and in any library).
std::vector<std::string> ProcessArgv();
// Every NCCL_* and NCCLRR_* variable of the environment: what the replay pins and the report shows.
std::map<std::string, std::string> NcclEnvironment();

}  // namespace ncclrr
