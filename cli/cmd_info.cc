// `ncclrr info DIR`: what a trace holds, per process file, and whether it is whole.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "command.h"
#include "ncclrr/base/args.h"
#include "ncclrr/base/parallel_for.h"
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
    auto listed = ListTraceFiles(dir);
    if (!listed.ok()) return Fail(listed.status());
    // A run of files at a time, each described and let go: a job of thousands of ranks (or a
    // trace larger than memory) is summarised in the memory of a few files.
    LoadDirOptions lo;
    lo.threads = CoreCount();
    std::vector<StatusOr<TraceFile>> unreadable;
    std::string sections;
    size_t files = 0;
    uint64_t calls = 0, dropped = 0;
    std::set<std::pair<uint64_t, int>> ranks;
    std::set<uint64_t> comms;
    for (size_t first = 0; first < listed->size(); first += kFilesAtOnce) {
      const size_t last = std::min(listed->size(), first + kFilesAtOnce);
      const std::vector<std::string> run(listed->begin() + first, listed->begin() + last);
      for (StatusOr<TraceFile>& t : ReadTraceFiles(run, lo)) {
        if (!t.ok()) {
          unreadable.push_back(std::move(t));
          continue;
        }
        const TraceFile& f = *t;
        ++files;
        calls += f.calls.size();
        dropped += f.DroppedRecords();
        for (const auto& c : f.comms) {
          ranks.insert({c.comm_id, c.rank});
          comms.insert(c.comm_id);
        }
        sections += Describe(f);
      }
    }
    if (files == 0) {  // the reason, as loading the directory gives it
      auto none = AssembleTraceDir(dir, std::move(unreadable));
      return Fail(none.ok() ? Status(StatusCode::kInternal, "no file read") : none.status());
    }
    std::printf("trace %s: %zu process file(s)\n", dir.c_str(), files);
    std::fwrite(sections.data(), 1, sections.size(), stdout);
    for (const auto& t : unreadable) std::printf("  warning: %s\n", t.status().message().c_str());
    std::printf("total: %zu processes, %zu communicators, %zu ranks, %llu calls, %llu dropped\n",
                files, comms.size(), ranks.size(), static_cast<unsigned long long>(calls),
                static_cast<unsigned long long>(dropped));
    return kExitOk;
  }

 private:
  static constexpr size_t kFilesAtOnce = 64;

  static int Fail(const Status& s) {
    std::fprintf(stderr, "ncclrr info: %s\n", s.message().c_str());
    return kExitError;
  }

  static std::string Describe(const TraceFile& f) {
    std::map<Api, uint64_t> by_api;
    f.calls.ForEachRow([&](size_t, const CallRecord& c) { by_api[static_cast<Api>(c.api)]++; },
                       CallTable::WordsOf(offsetof(CallRecord, api)));
    const int v = f.nccl_version;
    std::string out = fmt::format(
        "  {}\n    host {} pid {} route {} format {}.{} nccl {}.{}.{}{}\n", f.path, f.header.host,
        f.header.pid, RouteName(f.header.route), f.header.format_major, f.header.format_minor,
        v / 10000, (v / 100) % 100, v % 100, f.header.ring_mode ? " flight-recorder" : "");
    out += fmt::format("    {} calls, {} communicator record(s), {} dropped, {}\n", f.calls.size(),
                       f.comms.size(), f.DroppedRecords(),
                       f.footer ? (f.footer->clean ? "closed cleanly" : "closed with errors")
                                : (f.torn ? "TORN (process died mid-write)" : "NOT CLOSED"));
    for (const auto& c : f.comms)
      out += "    " + DescribeComm(c, f.String(c.name_id), false) + "\n";
    if (!by_api.empty()) {
      out += "    calls:";
      for (const auto& [api, n] : by_api) out += fmt::format(" {}={}", ApiName(api), n);
      out += "\n";
    }
    for (const auto& w : f.warnings) out += "    warning: " + w + "\n";
    return out;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(InfoCommand);
}  // namespace ncclrr::cli
