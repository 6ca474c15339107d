// `ncclrr info DIR`: what a trace holds, per process file, and whether it is whole.
#include <cstdio>
#include <map>
#include <set>

#include "command.h"
#include "ncclrr/base/args.h"
#include "ncclrr/trace/describe.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::cli {
namespace {

class InfoCommand : public Command {
 public:
  const char* name() const override { return "info"; }
  const char* synopsis() const override { return "DIR"; }
  const char* help() const override {
    return "Summarises a trace directory (or one .ncclrr file): per process its host, pid,\n"
           "capture route, NCCL version, communicators, ranks, calls, dropped records and\n"
           "whether the file was closed cleanly. Exit 0, or 2 when no trace can be read.";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("ncclrr info", raw);
    args.Parse();
    const std::string& dir = args.Positional(0, "trace directory (DIR)");
    auto loaded = LoadTraceDir(dir);
    if (!loaded.ok()) {
      std::fprintf(stderr, "ncclrr info: %s\n", loaded.status().message().c_str());
      return kExitError;
    }
    const TraceDir& d = *loaded;
    uint64_t calls = 0, dropped = 0;
    std::set<std::pair<uint64_t, int>> ranks;
    std::set<uint64_t> comms;
    std::printf("trace %s: %zu process file(s)\n", d.dir.c_str(), d.files.size());
    for (const TraceFile& f : d.files) {
      std::map<Api, uint64_t> by_api;
      for (const auto& c : f.calls) by_api[static_cast<Api>(c.api)]++;
      for (const auto& c : f.comms) {
        ranks.insert({c.comm_id, c.rank});
        comms.insert(c.comm_id);
      }
      calls += f.calls.size();
      dropped += f.DroppedRecords();
      const int v = f.nccl_version;
      std::printf("  %s\n    host %s pid %d route %s format %u.%u nccl %d.%d.%d%s\n",
                  f.path.c_str(), f.header.host.c_str(), f.header.pid, RouteName(f.header.route),
                  f.header.format_major, f.header.format_minor, v / 10000, (v / 100) % 100, v % 100,
                  f.header.ring_mode ? " flight-recorder" : "");
      std::printf("    %zu calls, %zu communicator record(s), %llu dropped, %s\n", f.calls.size(),
                  f.comms.size(), static_cast<unsigned long long>(f.DroppedRecords()),
                  f.footer ? (f.footer->clean ? "closed cleanly" : "closed with errors")
                           : (f.torn ? "TORN (process died mid-write)" : "NOT CLOSED"));
      for (const auto& c : f.comms)
        std::printf("    %s\n", DescribeComm(c, f.String(c.name_id), false).c_str());
      if (!by_api.empty()) {
        std::printf("    calls:");
        for (const auto& [api, n] : by_api)
          std::printf(" %s=%llu", std::string(ApiName(api)).c_str(),
                      static_cast<unsigned long long>(n));
        std::printf("\n");
      }
      for (const auto& w : f.warnings) std::printf("    warning: %s\n", w.c_str());
    }
    for (const auto& w : d.warnings) std::printf("  warning: %s\n", w.c_str());
    std::printf("total: %zu processes, %zu communicators, %zu ranks, %llu calls, %llu dropped\n",
                d.files.size(), comms.size(), ranks.size(), static_cast<unsigned long long>(calls),
                static_cast<unsigned long long>(dropped));
    return kExitOk;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(InfoCommand);
}  // namespace ncclrr::cli
