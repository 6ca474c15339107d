// interposer-trace-stats DIR: what a trace directory holds, as JSON, for the GPU acceptance
// script (tests/gpu/interposer_acceptance.sh) to assert on: per process file the route, NCCL
// version, clean close, drops, calls per API, communicators, CUDA-graph templates and events,
// and whether every (communicator, rank) numbers its live collectives 0, 1, 2... in order
// (gaps allowed only where graph launches ran templates), and how many calls have GPU times.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "ncclrr/trace/describe.h"
#include "ncclrr/trace/trace_reader.h"

using namespace ncclrr;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: interposer-trace-stats DIR\n");
    return 2;
  }
  auto dir = LoadTraceDir(argv[1]);
  if (!dir.ok()) {
    std::fprintf(stderr, "interposer-trace-stats: %s\n", dir.status().message().c_str());
    return 2;
  }
  std::set<uint64_t> all_ids;
  std::printf("{\"files\": [");
  bool first_file = true;
  for (const TraceFile& f : dir->files) {
    std::map<std::string, uint64_t> apis;
    uint64_t templates = 0;
    // (comm, rank) -> live collective seqs in call order
    std::map<std::pair<uint64_t, int>, std::vector<uint64_t>> live;
    for (const CallRecord& c : f.calls) {
      apis[std::string(ApiName(static_cast<Api>(c.api)))]++;
      if (c.capture == 1) ++templates;
      if (c.capture == 0 && IsCollective(static_cast<Api>(c.api)) && c.seq != kNoSeq)
        live[{c.comm_id, c.rank}].push_back(c.seq);
    }
    bool seq_ok = true;
    for (const auto& [key, seqs] : live)
      for (size_t i = 1; i < seqs.size(); ++i) seq_ok &= seqs[i] > seqs[i - 1];
    std::map<int, int> graph;
    for (const GraphEventRecord& g : f.graph_events) graph[g.kind]++;
    std::printf(
        "%s\n {\"pid\": %d, \"route\": \"%s\", \"nccl_version\": %d, \"clean\": %s, "
        "\"dropped\": %" PRIu64 ", \"calls\": %zu, \"templates\": %" PRIu64
        ", \"live_seq_ok\": %s,\n  \"graph\": {\"instantiate\": %d, \"launch\": %d, "
        "\"destroy\": %d},\n  \"apis\": {",
        first_file ? "" : ",", f.header.pid, RouteName(f.header.route), f.nccl_version,
        f.footer && f.footer->clean ? "true" : "false", f.DroppedRecords(), f.calls.size(),
        templates, seq_ok ? "true" : "false", graph[static_cast<int>(GraphEventKind::kInstantiate)],
        graph[static_cast<int>(GraphEventKind::kLaunch)],
        graph[static_cast<int>(GraphEventKind::kDestroy)]);
    bool first = true;
    for (const auto& [api, n] : apis) {
      std::printf("%s\"%s\": %" PRIu64, first ? "" : ", ", api.c_str(), n);
      first = false;
    }
    std::printf("},\n  \"comms\": [");
    first = true;
    for (const CommRecord& c : f.comms) {
      all_ids.insert(c.comm_id);
      std::printf(
          "%s{\"id\": \"%s\", \"rank\": %d, \"nranks\": %d, \"device\": %d, "
          "\"origin\": \"%s\", \"known\": %d, \"lineage\": %u}",
          first ? "" : ", ", Hex64(c.comm_id).c_str(), c.rank, c.nranks, c.device,
          CommOriginName(c.origin), c.nccl_hash_known, c.lineage);
      first = false;
    }
    std::printf("],\n  \"notes\": [");
    first = true;
    for (const NoteData& n : f.notes) {
      std::string text;
      for (char ch : n.text) text += ch == '"' || ch == '\\' ? ' ' : ch;
      std::printf("%s\"%s\"", first ? "" : ", ", text.c_str());
      first = false;
    }
    // GPU timing: live collective and p2p calls NCCL accepted, how many got a GPU time, and
    // from which source.
    std::map<uint64_t, int> gpu_per_uid;
    uint64_t cupti = 0, events = 0;
    for (const GpuTimeRecord& g : f.gpu_times) {
      ++gpu_per_uid[g.call_uid];
      cupti += g.source == static_cast<uint8_t>(GpuTimeSource::kCupti);
      events += g.source == static_cast<uint8_t>(GpuTimeSource::kEventPair);
    }
    uint64_t gpu_calls = 0, gpu_timed = 0;
    for (const CallRecord& c : f.calls) {
      const Api api = static_cast<Api>(c.api);
      const bool accepted = c.result == 0 || c.result == 7;  // ncclSuccess, ncclInProgress
      if ((!IsCollective(api) && !IsP2p(api)) || c.capture != 0 || !accepted) continue;
      ++gpu_calls;
      gpu_timed += gpu_per_uid.count(c.uid);
    }
    std::printf("],\n  \"gpu\": {\"calls\": %" PRIu64 ", \"timed\": %" PRIu64
                ", \"cupti\": %" PRIu64 ", \"events\": %" PRIu64 "}}",
                gpu_calls, gpu_timed, cupti, events);
    first_file = false;
  }
  std::printf("],\n \"comm_ids\": [");
  bool first = true;
  for (uint64_t id : all_ids) {
    std::printf("%s\"%s\"", first ? "" : ", ", Hex64(id).c_str());
    first = false;
  }
  std::printf("]}\n");
  return 0;
}
