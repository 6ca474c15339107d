#include "ncclrr/trace/record_set.h"

namespace ncclrr {

void RecordSet::Add(const Record& r) {
  switch (r.kind) {
    case RecordKind::kCall:
      calls.push_back(r.call);
      break;
    case RecordKind::kComm:
      comms.push_back(r.comm);
      break;
    case RecordKind::kClock:
      clocks.push_back(r.clock);
      break;
    case RecordKind::kGpuTime:
      gpu_times.push_back(r.gpu);
      break;
    case RecordKind::kGraphEvent:
      graph_events.push_back(r.graph);
      break;
    case RecordKind::kQuery:
      queries.push_back(r.query);
      break;
  }
}

size_t RecordSet::RecordCount() const {
  size_t n = 0;
  ForEachKind([&](const auto& v) { n += v.size(); });
  return n;
}

void RecordSet::ClearRecords() {
  ForEachKind([](auto& v) { v.clear(); });
}

}  // namespace ncclrr
