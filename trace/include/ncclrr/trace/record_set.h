#pragma once
// The records of a trace, one vector per kind: what a batch being written holds (the writer's
// PendingBatch, calls in a vector) and what a file read back holds (TraceFile, calls packed in
// a CallTable). A new record kind is added here, in Add() when it travels through the thread
// rings, and in the frame encoder and decoder.
#include <cstddef>
#include <vector>

#include "ncclrr/trace/call_table.h"
#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr {

template <typename Calls>
struct BasicRecordSet {
  std::vector<CommRecord> comms;
  Calls calls;
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

  // Calls fn(this kind's container, other's) for every kind.
  template <typename Other, typename F>
  void ForEachKindWith(Other& other, F&& fn) {
    fn(comms, other.comms), fn(calls, other.calls), fn(clocks, other.clocks),
        fn(drops, other.drops), fn(notes, other.notes), fn(gpu_times, other.gpu_times),
        fn(graph_events, other.graph_events), fn(queries, other.queries),
        fn(sketches, other.sketches), fn(captures, other.captures);
  }

  // Appends a record that came through a thread ring (the kinds a Record can hold).
  void Add(const Record& r) {
    switch (r.kind) {
      case RecordKind::kCall:
        return calls.push_back(r.call);
      case RecordKind::kComm:
        return comms.push_back(r.comm);
      case RecordKind::kClock:
        return clocks.push_back(r.clock);
      case RecordKind::kGpuTime:
        return gpu_times.push_back(r.gpu);
      case RecordKind::kGraphEvent:
        return graph_events.push_back(r.graph);
      case RecordKind::kQuery:
        return queries.push_back(r.query);
    }
  }
  size_t RecordCount() const {
    size_t n = 0;
    ForEachKind([&](const auto& v) { n += v.size(); });
    return n;
  }
  void ClearRecords() {
    ForEachKind([](auto& v) { v.clear(); });
  }
};

using RecordSet = BasicRecordSet<std::vector<CallRecord>>;

}  // namespace ncclrr
