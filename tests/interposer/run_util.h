// Helpers of the interposer tests: run a test program under the preload and read its traces.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ncclrr/testing/run_program.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::testing {

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out, err;
};

// Runs one of the test programs (interposer_app_direct, _local, _dlsym) with `args`. With
// `trace_dir` non-empty, under LD_PRELOAD=libncclrr-interpose.so recording into it. `env` adds
// variables (NCCLRR_RING...).
RunResult RunApp(const std::string& app, const std::vector<std::string>& args,
                 const std::string& trace_dir, const std::map<std::string, std::string>& env = {});

// RunShell (ncclrr/testing/run_program.h) runs a shell command: its exit status and stdout.
using ShellResult = CommandResult;

// A fresh empty directory under the system temp dir, unique per test.
std::string FreshDir(const std::string& tag);

// Reads the one trace file of `dir` (fails the test when there is not exactly one).
TraceFile ReadOnlyTrace(const std::string& dir);
std::vector<TraceFile> ReadTraces(const std::string& dir);

// The trace as text without what differs run to run (addresses, times, thread ids, pids, random
// unique ids): communicator ids become c0, c1... in order of first appearance.
std::string Normalized(const TraceFile& t);

// Calls of one API in file order.
std::vector<CallRecord> CallsOf(const TraceFile& t, Api api);

}  // namespace ncclrr::testing
