#pragma once
// What the exports (Chrome JSON, Perfetto protobuf, Flight Recorder JSON) share: the "process"
// of a (trace file, device) pair named after the rank it holds on its largest communicator, the
// time span each call covers, and the groups of calls NCCL paired across ranks.
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ncclrr/analysis/model.h"
#include "ncclrr/analysis/perfetto_export.h"

namespace ncclrr::analysis {

struct ProcessRank {
  int nranks = 0;  // size of the largest communicator the (file, device) holds a rank on
  int rank = -1;   // its rank there
};
// Keyed by (file index, device).
using ProcessKey = std::pair<uint32_t, int>;
std::map<ProcessKey, ProcessRank> ProcessRanks(const TraceModel& m);

// "rank 3 (host pid 1234 dev 0)".
std::string ProcessLabel(const FileView& file, int device, int rank);

// Every eagerly issued call of file `f` (graph templates are left out: they run at their
// graph's launches) with the span it covers on the common timeline: the GPU's when the trace
// has GPU times for it, else the host call's.
void ForEachCallSpan(const TraceModel& m, uint32_t f,
                     const std::function<void(const CallRecord&, uint32_t index, int64_t start,
                                              int64_t duration)>& fn);

// Every collective a graph launch issued (the slot names the captured template).
void ForEachGraphLaunch(const TraceModel& m, const std::function<void(const CollectiveSlot&)>& fn);

// Time at which a collective slot is drawn: its launch for graph launches, else its call.
int64_t SlotTime(const TraceModel& m, const CollectiveSlot& s);

// For every communicator of two or more ranks, every seq that two or more ranks issued: the
// calls NCCL paired with each other, in communicator-rank order.
void ForEachPairedGroup(
    const TraceModel& m,
    const std::function<void(uint64_t seq, const std::vector<const CollectiveSlot*>&)>& fn);

// Writes `buf` to `os` once it holds 1 MB (or `all`): exports are hundreds of MB.
inline void FlushExport(std::string& buf, std::ostream& os, uint64_t& bytes, bool all) {
  if (!all && buf.size() < (1u << 20)) return;
  os.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  bytes += buf.size();
  buf.clear();
}

// Runs a timeline exporter: a class built from (model, stream, stats) with Run(report, options).
template <class Exporter>
Status RunExporter(const TraceModel& m, const Report* report, const ExportOptions& o,
                   std::ostream& out, ExportStats* stats) {
  ExportStats local;
  Exporter(m, out, stats ? stats : &local).Run(report, o);
  if (!out) return IoError("writing the exported trace failed (disk full?)");
  return Status::Ok();
}

}  // namespace ncclrr::analysis
