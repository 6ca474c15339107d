// What a trace recorded with --sketch must hold: per call, the sketches its plan (plan.h) asks
// for, and — for ncclrr-example, whose data is a known function of (tensor, step, rank) — the
// exact values SketchHost gives on that data.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::testing {

// Sketches of one call, by kind.
struct CallSketches {
  std::map<SketchWhich, std::vector<const SketchData*>> by_which;
  size_t Count(SketchWhich w) const {
    auto it = by_which.find(w);
    return it == by_which.end() ? 0 : it->second.size();
  }
  const SketchData* One(SketchWhich w) const {
    return Count(w) == 1 ? by_which.at(w).front() : nullptr;
  }
};
std::map<uint64_t, CallSketches> SketchesByCall(const TraceFile& t);

// Every collective and Send/Recv that ran (accepted, not captured, not in a simulated group)
// has exactly the blocks and race samples of its plan; calls that did not run have none.
// Returns the problems found (empty: all good) and counts the calls checked.
std::vector<std::string> CheckPlannedSketches(const TraceFile& t, size_t* calls_checked);

// ncclrr-example SCENARIO --ranks N --steps K as recorded: each call's SendBefore, RecvAfter and
// race samples equal SketchHost on the data the example computes. `racy_before`: in --group
// mode the racing write lands before the outermost GroupEnd, so the before-sketches see it.
struct ExampleRun {
  std::string scenario;
  int ranks = 2;
  int steps = 2;
  bool group = false;
};
std::vector<std::string> CheckExampleSketches(const TraceFile& t, const ExampleRun& run);

// Bitwise equality of two sketches (dots, Σx², counts, sample indices and values).
bool SameSketch(const SketchData& a, const SketchData& b, std::string* why);

}  // namespace ncclrr::testing
