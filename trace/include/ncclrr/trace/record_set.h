#pragma once
// The records of a trace, one vector per kind: what a batch being written holds (the writer's
// PendingBatch) and what a file read back holds (TraceFile). A new record kind is added here,
// in Add() when it travels through the thread rings, and in the frame encoder and decoder.
#include <cstddef>
#include <vector>

#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr {

struct RecordSet {
  std::vector<CommRecord> comms;
  std::vector<CallRecord> calls;
  std::vector<ClockPairRecord> clocks;
  std::vector<DropCountRecord> drops;
  std::vector<NoteData> notes;
  std::vector<GpuTimeRecord> gpu_times;
  std::vector<GraphEventRecord> graph_events;
  std::vector<QueryCountRecord> queries;
  std::vector<SketchData> sketches;
  std::vector<CaptureRefData> captures;

  // Calls fn(vector) for every kind's vector.
  template <typename F>
  void ForEachKind(F&& fn) {
    fn(comms), fn(calls), fn(clocks), fn(drops), fn(notes), fn(gpu_times), fn(graph_events),
        fn(queries), fn(sketches), fn(captures);
  }
  template <typename F>
  void ForEachKind(F&& fn) const {
    fn(comms), fn(calls), fn(clocks), fn(drops), fn(notes), fn(gpu_times), fn(graph_events),
        fn(queries), fn(sketches), fn(captures);
  }

  // Appends a record that came through a thread ring (the kinds a Record can hold).
  void Add(const Record& r);
  size_t RecordCount() const;
  void ClearRecords();
};

}  // namespace ncclrr
