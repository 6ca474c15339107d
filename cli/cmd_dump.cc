// `ncclrr dump DIR`: every recorded call, one line each, like NCCL's COLL log but per rank and
// with communicator, sequence and group context.
#include <algorithm>
#include <cstdio>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "command.h"
#include "ncclrr/base/args.h"
#include "ncclrr/trace/describe.h"
#include "ncclrr/trace/trace_reader.h"
#include "read_notes.h"

namespace ncclrr::cli {
namespace {

class DumpCommand : public Command {
 public:
  const char* name() const override { return "dump"; }
  const char* synopsis() const override { return "DIR [--comm ID] [--rank R] [--stable]"; }
  const char* help() const override {
    return "Prints every recorded call (with its data sketches, record --sketch, and captured\n"
           "buffers, record --capture, indented below it). --comm ID (hex commHash, as printed)\n"
           "and --rank R filter; --stable leaves out addresses, pids, thread ids and times and\n"
           "orders calls by (communicator, rank, sequence) so output can be compared across runs.";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("ncclrr dump", raw);
    args.Option("--comm").Option("--rank").Flag("--stable");
    args.Parse();
    const std::string& dir = args.Positional(0, "trace directory (DIR)");
    const bool stable = args.Has("--stable");
    const long long rank = args.GetInt("--rank", -1);
    if (args.Has("--rank") && rank < 0)
      throw UsageError("--rank must be a rank (0 or more), got " + std::to_string(rank));
    uint64_t comm = 0;
    if (auto c = args.Get("--comm")) {
      char* end = nullptr;
      comm = std::strtoull(c->c_str(), &end, 16);
      if (c->empty() || *end) throw UsageError("--comm expects a hex id like 0x1a2b..., got " + *c);
    }
    auto loaded = LoadTraceDir(dir);
    if (!loaded.ok()) {
      std::fprintf(stderr, "ncclrr dump: %s\n", loaded.status().message().c_str());
      return kExitError;
    }
    PrintReadNotes("dump", *loaded);
    for (const TraceFile& f : loaded->files) {
      if (stable)
        std::printf("# process %s\n", Printable(f.header.host).c_str());
      else
        std::printf("# process %s pid %d (%s)\n", Printable(f.header.host).c_str(), f.header.pid,
                    Printable(f.path).c_str());
      for (const auto& c : f.comms)
        if ((!comm || c.comm_id == comm) && (rank < 0 || c.rank == rank))
          std::printf("%s\n", DescribeComm(c, f.String(c.name_id), stable).c_str());
      std::vector<CallRecord> rows;
      for (const CallRecord& c : f.calls)
        if ((!comm || c.comm_id == comm) && (rank < 0 || c.rank == rank)) rows.push_back(c);
      std::vector<const CallRecord*> calls;
      for (const CallRecord& c : rows) calls.push_back(&c);
      if (stable) {
        std::stable_sort(calls.begin(), calls.end(), [](const CallRecord* a, const CallRecord* b) {
          return std::tie(a->comm_id, a->rank, a->type_seq, a->api, a->seq) <
                 std::tie(b->comm_id, b->rank, b->type_seq, b->api, b->seq);
        });
        std::stable_sort(calls.begin(), calls.end(), [](const CallRecord* a, const CallRecord* b) {
          return std::tie(a->comm_id, a->rank) < std::tie(b->comm_id, b->rank);
        });
      } else {
        std::stable_sort(calls.begin(), calls.end(), [](const CallRecord* a, const CallRecord* b) {
          return a->enter_ns < b->enter_ns;
        });
      }
      // Sketches (record --sketch) under their call, in the order they were written.
      std::unordered_map<uint64_t, std::vector<const SketchData*>> sketches;
      for (const auto& s : f.sketches) sketches[s.call_uid].push_back(&s);
      std::unordered_map<uint64_t, std::vector<const CaptureRefData*>> captures;
      for (const auto& r : f.captures) captures[r.call_uid].push_back(&r);
      for (const CallRecord* c : calls) {
        std::printf("%s\n", DescribeCall(*c, stable).c_str());
        if (c->callsite) std::printf("    at %s\n", Printable(f.String(c->callsite)).c_str());
        if (auto it = sketches.find(c->uid); it != sketches.end())
          for (const SketchData* s : it->second)
            std::printf("    %s\n", DescribeSketch(*s).c_str());
        if (auto it = captures.find(c->uid); it != captures.end())
          for (const CaptureRefData* r : it->second) {
            std::printf("    captured %s: %llu bytes", SketchWhichName(r->which),
                        static_cast<unsigned long long>(r->bytes));
            if (!stable)
              std::printf(" in %s at %llu", Printable(r->file).c_str(),
                          static_cast<unsigned long long>(r->offset));
            std::printf("\n");
          }
      }
      for (const auto& n : f.notes) std::printf("# note: %s\n", Printable(n.text).c_str());
      for (const auto& w : f.warnings) std::printf("# warning: %s\n", Printable(w).c_str());
    }
    return kExitOk;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(DumpCommand);
}  // namespace ncclrr::cli
