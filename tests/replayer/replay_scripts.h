#pragma once
// Traces for the replayer tests, written with the recorder's scripted generator: the example
// program's scenarios call for call (examples/src/scenarios.cc), a program whose calls run on two
// streams, and one call of every API and datatype. Until `ncclrr record` captures the example
// itself, these stand in for its recordings.
#include <memory>
#include <string>
#include <vector>

#include "ncclrr/analysis/model.h"
#include "ncclrr/replay/replayer.h"
#include "ncclrr/testing/run_program.h"
#include "ncclrr/testing/synthetic_trace.h"

namespace ncclrr::testing {

// The ncclrr-example scenarios ("clean", "swap-same-size", ... "cross-comm-order").
std::vector<std::string> ExampleScenarioNames();
SyntheticScript ExampleScript(const std::string& scenario, int ranks = 2, int steps = 4);

// Two same-size allreduces per step issued on two streams, in the same order on every rank: the
// recording is right, but the trace does not fix their order.
SyntheticScript TwoStreamScript(int ranks = 2, int steps = 4);

// One call of every collective API, in several datatypes and reduction ops, plus send/recv.
SyntheticScript EveryApiScript(int ranks = 3);

// A fresh directory under the test's temporary folder.
std::string FreshDir(const std::string& name);

// Writes the script into FreshDir(name) and returns the directory.
std::string WriteTrace(SyntheticScript script, const std::string& name);

// Writes the script into FreshDir(name) and loads it.
std::unique_ptr<analysis::TraceModel> WriteAndLoad(SyntheticScript script, const std::string& name);

// Options for replays in tests: the host NCCL of this build, a short timeout.
replay::ReplayOptions TestOptions(const std::string& orders, double timeout_s = 1.0);

// RunNcclrr (ncclrr/testing/run_program.h) runs the build's `ncclrr` with `args`.

// Replays and fails the test (returning an empty report) when the replay errors.
replay::ReplayReport MustReplay(const analysis::TraceModel& model,
                                const replay::ReplayOptions& options);

}  // namespace ncclrr::testing
